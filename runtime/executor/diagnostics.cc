#include "executor/diagnostics.hpp"

#include <algorithm>
#include <atomic>

#include "core/format.hpp"
#include "core/hash.hpp"
#include "mscclpp/device.hpp"
#include "plan/op_rules.hpp"

namespace mscclpp::exec {
namespace {

int peerOf(const std::vector<plan::ChannelDecl>& channels, uint32_t c) {
  return c < channels.size() ? channels[c].peer : -1;
}

struct PacketWriter {
  int rank;
  std::string op;  // "rank R threadblock T op N (name)"
};

// Which ops write LL packets into scratch chunks [index, index + size) of
// `rank`: its local packet writes, peers' remote packet writes, and
// multicast packet stores to its groups. By whole chunks, slices alike.
// Needs every rank's threadblocks loaded; *known is false otherwise.
std::vector<PacketWriter> packetWriterOps(const plan::Plan& plan, int rank, uint32_t index, uint32_t size,
                                          bool* known) {
  std::vector<PacketWriter> writers;
  *known = false;
  for (const plan::RankPlan& q : plan.ranks) {
    if (!q.hasOps) return {};
    for (const plan::ThreadblockPlan& tb : q.threadblocks) {
      for (size_t i = 0; i < tb.ops.size(); ++i) {
        const plan::Op& op = tb.ops[i];
        if (op.type == plan::OpType::Pipeline) continue;
        const plan::OpRule& rule = plan::opRule(op.type);
        for (uint32_t k = 0; k < op.nDst; ++k) {
          const plan::RefSlot slot = rule.dst.slot(k);
          const plan::BufferRef& ref = tb.refs[op.dstBegin + k];
          bool hits = false;
          if (slot == plan::RefSlot::LocalPackets) {
            hits = q.rank == rank && ref.kind == plan::RefKind::Local && ref.type == plan::BufferType::Scratch;
          } else if (slot == plan::RefSlot::RemotePackets && ref.kind == plan::RefKind::Remote &&
                     ref.id < q.remoteBuffers.size()) {
            hits = q.remoteBuffers[ref.id].rank == rank && q.remoteBuffers[ref.id].type == plan::BufferType::Scratch;
          } else if (slot == plan::RefSlot::MulticastPackets && ref.kind == plan::RefKind::Multicast &&
                     ref.id < q.switchChannels.size()) {
            for (int m : q.switchChannels[ref.id].ranks) hits |= m == rank;
          }
          if (hits && ref.index < index + size && index < ref.index + ref.size) {
            writers.push_back(PacketWriter{
                q.rank, strFormat("rank %d threadblock %d op %zu (%s)", q.rank, tb.id, i, plan::opTypeName(op.type))});
          }
        }
      }
    }
  }
  *known = true;
  return writers;
}

std::string packetWriters(const plan::Plan& plan, int rank, uint32_t index, uint32_t size) {
  bool known = false;
  const std::vector<PacketWriter> writers = packetWriterOps(plan, rank, index, size, &known);
  if (!known) return std::string();
  if (writers.empty()) return "; no op of any rank writes LL packets there, so the plan cannot complete as written";
  std::string s = "; written by ";
  for (size_t i = 0; i < writers.size() && i < 4; ++i) s += (i ? ", " : "") + writers[i].op;
  if (writers.size() > 4) s += strFormat(" and %zu more", writers.size() - 4);
  return s;
}

// The local scratch reference a block's LL packet wait reads (null when the record does not name one).
const plan::BufferRef* packetWaitRef(const plan::RankPlan& rp, uint32_t block, const BlockRecord& r) {
  if (block >= rp.threadblocks.size() || r.opIndex >= rp.threadblocks[block].ops.size()) return nullptr;
  const plan::ThreadblockPlan& tb = rp.threadblocks[block];
  const plan::Op& op = tb.ops[r.opIndex];
  if (r.id >= op.nSrc) return nullptr;
  const plan::BufferRef& ref = tb.refs[op.srcBegin + r.id];
  return ref.kind == plan::RefKind::Local && ref.type == plan::BufferType::Scratch ? &ref : nullptr;
}

// Which ops of the peer signal the channel paired with rank's channel c:
// the k-th channel of that type from the peer back to rank. Empty when the
// peer's threadblocks are not loaded.
std::string channelSignalers(const plan::Plan& plan, int rank, uint32_t c, bool port) {
  const plan::RankPlan& rp = plan.ranks[rank];
  const auto& mine = port ? rp.portChannels : rp.memoryChannels;
  if (c >= mine.size()) return std::string();
  const int peer = mine[c].peer;
  if (peer < 0 || peer >= static_cast<int>(plan.ranks.size()) || !plan.ranks[peer].hasOps) return std::string();
  const plan::RankPlan& pp = plan.ranks[peer];
  const auto& theirs = port ? pp.portChannels : pp.memoryChannels;
  int paired = -1;
  for (size_t i = 0; i < theirs.size(); ++i)
    if (theirs[i].peer == rank && theirs[i].pairIndex == mine[c].pairIndex) paired = static_cast<int>(i);
  if (paired < 0) return strFormat("; rank %d has no channel paired with it", peer);
  int signals = 0;
  for (const plan::ThreadblockPlan& tb : pp.threadblocks) {
    for (const plan::Op& op : tb.ops) {
      const bool signalling = op.type == plan::OpType::Signal || op.type == plan::OpType::RelaxedSignal ||
                              op.type == plan::OpType::PutWithSignal || op.type == plan::OpType::PutWithSignalAndFlush;
      if (!signalling || op.channelType != (port ? plan::ChannelType::Port : plan::ChannelType::Memory)) continue;
      for (uint32_t k = 0; k < op.nIds; ++k) signals += tb.ids[op.idsBegin + k] == static_cast<uint32_t>(paired);
    }
  }
  if (signals == 0)
    return strFormat("; no op of rank %d signals its paired channel %d, so this wait can never complete", peer, paired);
  return strFormat("; rank %d signals its paired channel %d in %d op(s) per launch", peer, paired, signals);
}

std::string waitText(const plan::Plan& plan, int rank, uint32_t block, const BlockRecord& r) {
  const plan::RankPlan& rp = plan.ranks[rank];
  switch (static_cast<WaitKind>(r.waitKind)) {
    case WaitKind::None:
      return "was stopped between ops by the abort of another block or rank";
    case WaitKind::MemoryChannel:
      return strFormat("waits on memory channel %u (peer %d): signal #%llu expected, counter at %llu%s", r.id,
                       peerOf(rp.memoryChannels, r.id), ull(r.expected), ull(r.observed),
                       channelSignalers(plan, rank, r.id, false).c_str());
    case WaitKind::PortChannel:
      return strFormat("waits on port channel %u (peer %d): signal #%llu expected, counter at %llu%s", r.id,
                       peerOf(rp.portChannels, r.id), ull(r.expected), ull(r.observed),
                       channelSignalers(plan, rank, r.id, true).c_str());
    case WaitKind::Packet: {
      std::string where = "a packet buffer", writers;
      if (block < rp.threadblocks.size() && r.opIndex < rp.threadblocks[block].ops.size()) {
        const plan::ThreadblockPlan& tb = rp.threadblocks[block];
        const plan::Op& op = tb.ops[r.opIndex];
        if (r.id < op.nSrc) {
          const plan::BufferRef& ref = tb.refs[op.srcBegin + r.id];
          where = strFormat("src_buff[%u] = %s chunk %u", r.id, plan::bufferTypeName(ref.type), ref.index);
        }
      }
      if (const plan::BufferRef* ref = packetWaitRef(rp, block, r))
        writers = packetWriters(plan, rank, ref->index, ref->size);
      return strFormat("waits for LL packet flag %llu at byte %llu of its scratch (%s): flag %llu is there%s",
                       ull(r.expected), ull(r.detail), where.c_str(), ull(r.observed), writers.c_str());
    }
    case WaitKind::Barrier:
      return strFormat("waits at barrier %u for %llu threadblocks", r.id, ull(r.expected));
    case WaitKind::Semaphore:
      return strFormat("waits to acquire semaphore %u (value %llu)", r.id, ull(r.observed));
    case WaitKind::FifoPush:
      return strFormat("waits for a free proxy FIFO slot to request on port channel %u (peer %d)", r.id,
                       peerOf(rp.portChannels, r.id));
    case WaitKind::Flush:
      return strFormat("waits for the proxy to complete request %llu on port channel %u (peer %d); it completed %llu",
                       ull(r.expected), r.id, peerOf(rp.portChannels, r.id), ull(r.observed));
    case WaitKind::Request:
      return strFormat(
          "could not request %llu bytes on port channel %u (peer %d): offsets/size beyond what a FIFO "
          "trigger encodes",
          ull(r.detail), r.id, peerOf(rp.portChannels, r.id));
    case WaitKind::Segment:
      if (r.observed == UINT64_MAX) {
        return strFormat("could not place the segment rank %u sends to rank %llu: the counts' bytes overflow", r.id,
                         ull(r.detail));
      }
      return strFormat(
          "could not place the segment rank %u sends to rank %llu: the counts need %llu bytes of a buffer or slot "
          "of %llu",
          r.id, ull(r.detail), ull(r.observed), ull(r.expected));
  }
  return "stopped";
}

// A native kernel's waits name peer ranks, not channel indexes.
std::string nativeWaitText(const BlockRecord& r) {
  switch (static_cast<WaitKind>(r.waitKind)) {
    case WaitKind::None:
      return "was stopped by the abort of another block or rank";
    case WaitKind::MemoryChannel:
      return strFormat("waits on its memory channel to rank %u: signal #%llu expected, counter at %llu", r.id,
                       ull(r.expected), ull(r.observed));
    case WaitKind::PortChannel:
      return strFormat("waits on its port channel to rank %u: signal #%llu expected, counter at %llu", r.id,
                       ull(r.expected), ull(r.observed));
    case WaitKind::Packet:
      return strFormat(
          "waits for LL packet flag %llu at byte %llu of its scratch, written by rank %u: flag %llu is there",
          ull(r.expected), ull(r.detail), r.id, ull(r.observed));
    case WaitKind::Barrier:
      return strFormat("waits at its grid barrier for %llu threadblocks", ull(r.expected));
    case WaitKind::FifoPush:
      return strFormat("waits for a free proxy FIFO slot to request on its port channel to rank %u", r.id);
    case WaitKind::Flush:
      return strFormat("waits for the proxy to complete request %llu on its port channel to rank %u; it completed %llu",
                       ull(r.expected), r.id, ull(r.observed));
    case WaitKind::Request:
      return strFormat(
          "could not request %llu bytes on its port channel to rank %u: beyond what a FIFO trigger encodes",
          ull(r.detail), r.id);
    default:
      return "stopped";
  }
}

// Whose signal releases a native block waiting as `r` says.
int32_t nativeWaitTarget(int rank, const BlockRecord& r) {
  switch (static_cast<WaitKind>(r.waitKind)) {
    case WaitKind::MemoryChannel:
    case WaitKind::PortChannel:
    case WaitKind::Packet:
      return static_cast<int32_t>(r.id);
    default:
      return rank;  // its grid barrier: released by this rank's own blocks
  }
}

std::string stepName(const NativeSteps& steps, uint32_t index) {
  return strFormat("step %u (%s)", index, index < steps.size() ? steps[index].c_str() : "?");
}

}  // namespace

std::string describeBlock(const plan::Plan& plan, int rank, uint32_t block, const BlockRecord& r, uint32_t launchFlag,
                          const NativeSteps* steps) {
  const plan::RankPlan& rp = plan.ranks[rank];
  const int tbId = block < rp.threadblocks.size() ? rp.threadblocks[block].id : static_cast<int>(block);
  std::string head = strFormat("rank %d threadblock %d", rank, tbId);
  if (!blockStopped(r)) {
    if (r.state == kBlockFinished && r.launchFlag == launchFlag) return head + " finished";
    return head + " was running (not waiting)";
  }
  const char* how = r.state == kBlockTimedOut ? "timed out" : (r.state == kBlockAborted ? "aborted" : "failed");
  if (steps != nullptr)
    return strFormat("%s %s %s [%s]", head.c_str(), stepName(*steps, r.opIndex).c_str(), nativeWaitText(r).c_str(),
                     how);
  const char* opName = "?";
  if (block < rp.threadblocks.size() && r.opIndex < rp.threadblocks[block].ops.size())
    opName = plan::opTypeName(rp.threadblocks[block].ops[r.opIndex].type);
  head += strFormat(" op %u (%s)", r.opIndex, opName);
  if (r.pipelineIteration != UINT32_MAX) head += strFormat(" pipeline iteration %u", r.pipelineIteration);
  return strFormat("%s %s [%s]", head.c_str(), waitText(plan, rank, block, r).c_str(), how);
}

namespace {

uint64_t load64(const uint64_t* p) { return p ? atomicLoad<uint64_t>(p, memoryOrderRelaxed) : 0; }

// A packet-reading op: the first 8-byte half of its local packet sources
// without the launch's flag. LL16 and LL8 packets both consist of halves of
// data and flag. Outside pipelines only: their unit offset is not published.
bool livePacketWait(const ExecContextDevice& dev, const ThreadblockDevice& tbd, const plan::Op& op, uint32_t flag,
                    BlockRecord* r) {
  const plan::OpRule& rule = plan::opRule(op.type);
  constexpr uint64_t kMaxHalvesScanned = 1 << 20;
  for (uint32_t k = 0; k < op.nSrc; ++k) {
    if (rule.src.slot(k) != plan::RefSlot::LocalPackets || op.srcBegin + k >= tbd.nRefs) continue;
    const ResolvedRef& ref = tbd.refs[op.srcBegin + k];
    if (ref.base == nullptr) continue;
    const uint64_t half = (ref.scratch && dev.doubleScratch && (flag & 1u) == 0) ? dev.scratchHalfBytes : 0;
    const uint64_t start = half + 2 * ref.offset;
    const uint64_t halves = std::min<uint64_t>(2 * ref.bytes / 8, kMaxHalvesScanned);
    for (uint64_t i = 0; i < halves; ++i) {
      const uint64_t word =
          atomicLoad<uint64_t>(reinterpret_cast<const uint64_t*>(ref.base + start + 8 * i), memoryOrderRelaxed);
      const uint32_t seen = static_cast<uint32_t>(word >> 32);
      if (seen == flag) continue;
      r->waitKind = static_cast<uint32_t>(WaitKind::Packet);
      r->id = k;
      r->expected = flag;
      r->observed = seen;
      r->detail = start + 8 * i;
      return true;
    }
  }
  return false;
}

// What a block at op `op` waits for, read from the live counters. False
// when the op is no wait or its condition holds: the block moves on.
bool liveWait(const ExecContextDevice& dev, const ThreadblockDevice& tbd, const plan::ThreadblockPlan& tb,
              const plan::Op& op, uint32_t flag, BlockRecord* r) {
  using plan::OpType;
  if (r->pipelineIteration == UINT32_MAX && livePacketWait(dev, tbd, op, flag, r)) return true;
  switch (op.type) {
    case OpType::Wait:
    case OpType::RelaxedWait:
      for (uint32_t k = 0; k < op.nIds; ++k) {
        const uint32_t c = tb.ids[op.idsBegin + k];
        const bool port = op.channelType == plan::ChannelType::Port;
        if (port ? c >= dev.nPortChannels : c >= dev.nMemoryChannels) continue;
        const uint64_t* inbound =
            port ? dev.portChannels[c].semaphore_.inboundCounter : dev.memoryChannels[c].semaphore_.inboundCounter;
        const uint64_t* expected = port ? dev.portChannels[c].semaphore_.expectedInboundCounter
                                        : dev.memoryChannels[c].semaphore_.expectedInboundCounter;
        const uint64_t want = load64(expected), have = load64(inbound);
        if (have >= want) continue;
        r->waitKind = static_cast<uint32_t>(port ? WaitKind::PortChannel : WaitKind::MemoryChannel);
        r->id = c;
        r->expected = want;
        r->observed = have;
        return true;
      }
      return false;
    case OpType::Barrier:
      r->waitKind = static_cast<uint32_t>(WaitKind::Barrier);
      r->id = op.barrierId;
      r->expected = op.numThreadblocks;
      return true;
    case OpType::SemAcquire:
      if (op.nIds == 0 || tb.ids[op.idsBegin] >= dev.nSemaphores) return false;
      r->waitKind = static_cast<uint32_t>(WaitKind::Semaphore);
      r->id = tb.ids[op.idsBegin];
      r->observed = atomicLoad<uint32_t>(&dev.semaphores[r->id], memoryOrderRelaxed);
      return r->observed == 0;
    default:
      return false;
  }
}

// Whose signal releases a block waiting as `r` says. An LL packet wait
// names the one rank whose ops write those packets, else kAnyPeer.
int32_t waitTarget(const plan::Plan& plan, int rank, uint32_t block, const BlockRecord& r) {
  const plan::RankPlan& rp = plan.ranks[rank];
  switch (static_cast<WaitKind>(r.waitKind)) {
    case WaitKind::MemoryChannel:
      return peerOf(rp.memoryChannels, r.id);
    case WaitKind::PortChannel:
      return peerOf(rp.portChannels, r.id);
    case WaitKind::Packet: {
      const plan::BufferRef* ref = packetWaitRef(rp, block, r);
      bool known = false;
      const std::vector<PacketWriter> writers =
          ref ? packetWriterOps(plan, rank, ref->index, ref->size, &known) : std::vector<PacketWriter>{};
      for (const PacketWriter& w : writers) {
        if (w.rank != writers.front().rank) return BlockWait::kAnyPeer;
      }
      return writers.empty() ? BlockWait::kAnyPeer : writers.front().rank;
    }
    default:
      return rank;  // barrier, semaphore: released by this rank's own blocks
  }
}

// One consistent read of a live-wait slot: the sequence count even and
// unchanged around the loads. False while a device thread rewrites it.
bool readSlot(const LiveWaitSlot& live, LiveWaitSlot* out) {
  const uint32_t before = atomicLoad<uint32_t>(&live.sequence, memoryOrderAcquire);
  out->waiting = atomicLoad<uint32_t>(&live.waiting, memoryOrderRelaxed);
  out->launchFlag = atomicLoad<uint32_t>(&live.launchFlag, memoryOrderRelaxed);
  out->finishedFlag = atomicLoad<uint32_t>(&live.finishedFlag, memoryOrderRelaxed);
  out->opIndex = atomicLoad<uint32_t>(&live.opIndex, memoryOrderRelaxed);
  out->pipelineIteration = atomicLoad<uint32_t>(&live.pipelineIteration, memoryOrderRelaxed);
  out->waitKind = atomicLoad<uint32_t>(&live.waitKind, memoryOrderRelaxed);
  out->id = atomicLoad<uint32_t>(&live.id, memoryOrderRelaxed);
  out->call = atomicLoad<uint32_t>(&live.call, memoryOrderRelaxed);
  out->expected = atomicLoad<uint64_t>(&live.expected, memoryOrderRelaxed);
  out->observed = atomicLoad<uint64_t>(&live.observed, memoryOrderRelaxed);
  out->detail = atomicLoad<uint64_t>(&live.detail, memoryOrderRelaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  out->sequence = before;
  return (before & 1u) == 0 && atomicLoad<uint32_t>(&live.sequence, memoryOrderRelaxed) == before;
}

// The wait a slot shows, as a block record, for the texts records have.
BlockRecord recordOf(const LiveWaitSlot& s) {
  BlockRecord r{};
  r.opIndex = s.opIndex;
  r.pipelineIteration = s.pipelineIteration;
  r.waitKind = s.waitKind;
  r.id = s.id;
  r.expected = s.expected;
  r.observed = s.observed;
  r.detail = s.detail;
  return r;
}

}  // namespace

std::vector<BlockWait> describeWaitSlots(const plan::Plan& plan, int rank, const LiveWaitSlot* slots, uint32_t nBlocks,
                                         uint64_t* progress, WaitingLaunch* launch, const NativeSteps* steps) {
  const plan::RankPlan& rp = plan.ranks[rank];
  nBlocks = std::min<uint32_t>(nBlocks, static_cast<uint32_t>(rp.threadblocks.size()));
  std::vector<LiveWaitSlot> seen(nBlocks);
  std::vector<bool> consistent(nBlocks);
  uint64_t moved = nBlocks;
  bool anyWait = false;
  uint32_t flag = 0, call = 0;  // the running launch's: every waiting block's (a context's launches run in order)
  for (uint32_t b = 0; b < nBlocks; ++b) {
    consistent[b] = readSlot(slots[b], &seen[b]);
    const LiveWaitSlot& s = seen[b];
    moved = mix64(mix64(mix64(moved, (uint64_t{s.sequence} << 32) ^ s.finishedFlag), s.observed),
                  (uint64_t{s.opIndex} << 32) ^ s.pipelineIteration);
    if (consistent[b] && s.waiting != 0 && !anyWait) {
      anyWait = true;
      flag = s.launchFlag;
      call = s.call;
    }
  }
  std::vector<BlockWait> out;
  if (!anyWait) {
    BlockWait w;
    w.text = strFormat("rank %d: its kernel runs (no threadblock has waited %.3g ms at one op)", rank,
                       kReportWaitAfterNs / 1e6);
    out.push_back(std::move(w));
  }
  for (uint32_t b = 0; b < nBlocks && anyWait; ++b) {
    const LiveWaitSlot& s = seen[b];
    const plan::ThreadblockPlan& tb = rp.threadblocks[b];
    if (consistent[b] && s.waiting == 0 && s.finishedFlag == flag) continue;  // finished this launch
    BlockWait w;
    if (!consistent[b] || s.waiting == 0 || s.launchFlag != flag || (steps == nullptr && s.opIndex >= tb.ops.size())) {
      w.text = strFormat("rank %d threadblock %d is running", rank, tb.id);
      out.push_back(std::move(w));
      continue;
    }
    const BlockRecord r = recordOf(s);
    if (steps != nullptr) {
      w.text = strFormat("rank %d threadblock %d %s %s", rank, tb.id, stepName(*steps, r.opIndex).c_str(),
                         nativeWaitText(r).c_str());
      w.target = nativeWaitTarget(rank, r);
      out.push_back(std::move(w));
      continue;
    }
    w.text = strFormat("rank %d threadblock %d op %u (%s)", rank, tb.id, r.opIndex,
                       plan::opTypeName(tb.ops[r.opIndex].type));
    if (r.pipelineIteration != UINT32_MAX) w.text += strFormat(" pipeline iteration %u", r.pipelineIteration);
    w.text += " " + waitText(plan, rank, b, r);
    w.target = waitTarget(plan, rank, b, r);
    out.push_back(std::move(w));
  }
  if (progress) *progress = moved;
  if (launch) *launch = anyWait ? WaitingLaunch{flag, call} : WaitingLaunch{};
  return out;
}

std::vector<BlockWait> describeLiveBlocks(const plan::Plan& plan, int rank, const ExecContextDevice& dev,
                                          uint32_t launchFlag, uint64_t* progress) {
  std::vector<BlockWait> out;
  uint64_t moved = launchFlag;
  const plan::RankPlan& rp = plan.ranks[rank];
  for (uint32_t b = 0; b < dev.nBlocks && b < rp.threadblocks.size(); ++b) {
    const BlockRecord& live = dev.blockRecords[b];
    const uint32_t state = atomicLoad<uint32_t>(&live.state, memoryOrderAcquire);
    const bool finished =
        state == kBlockFinished && atomicLoad<uint32_t>(&live.launchFlag, memoryOrderRelaxed) == launchFlag;
    const plan::ThreadblockPlan& tb = rp.threadblocks[b];
    BlockRecord r{};
    r.opIndex = atomicLoad<uint32_t>(&live.opIndex, memoryOrderRelaxed);
    r.pipelineIteration = atomicLoad<uint32_t>(&live.pipelineIteration, memoryOrderRelaxed);
    moved =
        mix64(mix64(moved, (static_cast<uint64_t>(state) << 40) ^ (static_cast<uint64_t>(r.opIndex) << 8) ^ finished),
              r.pipelineIteration);
    if (finished || r.opIndex >= tb.ops.size()) continue;
    const plan::Op& op = tb.ops[r.opIndex];
    std::string head =
        strFormat("rank %d threadblock %d op %u (%s)", rank, tb.id, r.opIndex, plan::opTypeName(op.type));
    if (r.pipelineIteration != UINT32_MAX) head += strFormat(" pipeline iteration %u", r.pipelineIteration);
    BlockWait w;
    // The state loaded above (blockStopped would read it again, racing with the block's stores).
    if (state < kBlockTimedOut && liveWait(dev, dev.blocks[b], tb, op, launchFlag, &r)) {
      moved = mix64(mix64(moved, r.observed), r.detail);
      w.text = head + " " + waitText(plan, rank, b, r);
      w.target = waitTarget(plan, rank, b, r);
    } else {
      w.text = head + (blockStopped(live) ? " stopped" : " is running");
    }
    out.push_back(std::move(w));
  }
  if (progress) *progress = moved;
  return out;
}

std::vector<std::string> describeUnfinishedBlocks(const plan::Plan& plan, int rank, const BlockRecord* records,
                                                  uint32_t nBlocks, uint32_t launchFlag, uint32_t firstFailedBlock,
                                                  const NativeSteps* steps) {
  std::vector<std::string> lines;
  for (uint32_t b = 0; b < nBlocks; ++b) {
    const BlockRecord& r = records[b];
    if (r.state == kBlockFinished && r.launchFlag == launchFlag) continue;
    std::string line = describeBlock(plan, rank, b, r, launchFlag, steps);
    if (b == firstFailedBlock && r.state == kBlockTimedOut) line += " (first to time out)";
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string describeSlotFailure(const plan::Plan& plan, int rank, const LiveWaitSlot* slots, uint32_t nBlocks) {
  const plan::RankPlan& rp = plan.ranks[rank];
  nBlocks = std::min<uint32_t>(nBlocks, static_cast<uint32_t>(rp.threadblocks.size()));
  for (uint32_t b = 0; b < nBlocks; ++b) {
    LiveWaitSlot s{};
    if (!readSlot(slots[b], &s) || s.waiting == 0) continue;
    const WaitKind kind = static_cast<WaitKind>(s.waitKind);
    const plan::ThreadblockPlan& tb = rp.threadblocks[b];
    if ((kind != WaitKind::Segment && kind != WaitKind::Request) || s.opIndex >= tb.ops.size()) continue;
    const BlockRecord r = recordOf(s);
    return strFormat("rank %d threadblock %d op %u (%s) %s", rank, tb.id, r.opIndex,
                     plan::opTypeName(tb.ops[r.opIndex].type), waitText(plan, rank, b, r).c_str());
  }
  return std::string();
}

std::string summarizeWaits(const std::vector<BlockWait>& waits) {
  constexpr size_t kShown = 4;
  std::string what;
  for (size_t i = 0; i < waits.size() && i < kShown; ++i) what += (i ? "; " : "") + waits[i].text;
  if (waits.size() > kShown) what += strFormat("; and %zu more threadblocks", waits.size() - kShown);
  return what;
}

}  // namespace mscclpp::exec
