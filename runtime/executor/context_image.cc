#include "executor/context_image.hpp"

#include <algorithm>
#include <numeric>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/params.hpp"
#include "plan/op_rules.hpp"
#include "plan/plan_sizing.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::exec {
namespace {

using plan::BufferType;
using plan::ChannelType;
using plan::OpType;
using plan::RefKind;
using plan::RefSlot;

bool isPacketSlot(RefSlot s) {
  return s == RefSlot::LocalPackets || s == RefSlot::RemotePackets || s == RefSlot::MulticastPackets;
}

// The thread-block-group slice of a reference, in units of the buffer
// alignment: the first (units mod g) slices are one unit longer.
void tbgSlice(uint64_t bytes, uint32_t align, uint32_t j, uint32_t g, uint64_t* off, uint64_t* len) {
  uint64_t units = bytes / align, base = units / g, extra = units % g;
  auto start = [&](uint64_t i) { return i * base + std::min<uint64_t>(i, extra); };
  *off = start(j) * align;
  *len = (start(j + 1) - start(j)) * align;
}

}  // namespace

Refusal tryShapeCall(const plan::Plan& plan, int rank, uint64_t inputBytes, uint64_t outputBytes, DataType dtype,
                     CallShape* out) {
  MSCCLPP_ENFORCE(rank >= 0 && rank < static_cast<int>(plan.ranks.size()), ErrorCode::InvalidArgument,
                  "plan %s has %zu ranks; rank %d is out of range", plan.header.name.c_str(), plan.ranks.size(), rank);
  const plan::RankPlan& rp = plan.ranks[rank];
  if (plan.header.variableSizes) return tryShapeVariableCall(plan, rank, inputBytes, outputBytes, dtype, out);
  plan::SizingResult s;
  plan::CallGeometry geometry;
  geometry.inputBytes = inputBytes;
  geometry.outputBytes = outputBytes;
  const bool noDataChunks = rp.inputChunks == 0 && rp.outputChunks == 0;
  if (noDataChunks &&
      (plan.header.collective == plan::Collective::Test || plan.header.collective == plan::Collective::Custom)) {
    // A unit plan that touches only scratch: the call's input size is its one chunk.
    s = plan::sizePlan(plan.header, 1, 0, rp.scratchChunks, inputBytes, outputBytes, dataTypeSize(dtype));
  } else {
    s = plan::sizeCall(plan.header, rp.inputChunks, rp.outputChunks, rp.scratchChunks,
                       static_cast<int>(plan.ranks.size()), inputBytes, outputBytes, dataTypeSize(dtype), &geometry);
  }
  if (!s.ok) {
    return strFormat("plan %s (%s) cannot serve rank %d with %llu input and %llu output bytes: %s",
                     plan.header.name.c_str(), plan.header.source.c_str(), rank, ull(inputBytes), ull(outputBytes),
                     s.reason.c_str());
  }
  CallShape& shape = *out;
  shape = CallShape();
  shape.inputBytes = geometry.inputBytes;
  shape.outputBytes = geometry.outputBytes;
  shape.geometry = geometry;
  shape.elementBytes = dataTypeSize(dtype);
  shape.chunkBytes = s.chunkBytes;
  shape.scratchChunkBytes = s.chunkBytes;
  shape.scratchBytes = s.scratchBytes;
  if (plan.header.reuseResources && rp.scratchChunks > 0) {
    // Peers address each other's scratch, so every rank sizes the scratch
    // chunk from the largest scratch of any rank.
    uint32_t maxScratchChunks = 0;
    for (const auto& r : plan.ranks) maxScratchChunks = std::max(maxScratchChunks, r.scratchChunks);
    const uint64_t factor =
        (plan.header.protocol == plan::Protocol::LL ? 2 : 1) * (plan.header.useDoubleScratchBuffer ? 2 : 1);
    const uint64_t limit = static_cast<uint64_t>(std::max<int64_t>(0, params::reuseScratchBytes()));
    if (s.chunkBytes * maxScratchChunks * factor > limit) {
      // The wrapped scratch chunk must hold whole pipeline units.
      uint64_t unit = plan.header.bufferAlignment == 0 ? 1 : plan.header.bufferAlignment;
      for (const auto& r : plan.ranks)
        for (const auto& tb : r.threadblocks)
          for (const auto& op : tb.ops)
            if (op.type == OpType::Pipeline && op.unitSize > 0) unit = std::lcm(unit, op.unitSize);
      uint64_t per = limit / (static_cast<uint64_t>(maxScratchChunks) * factor) / unit * unit;
      if (per == 0) {
        return strFormat(
            "plan %s: MSCCLPP_REUSE_SCRATCH_BYTES=%llu is too small for %u scratch chunks of whole %llu-byte pipeline "
            "units",
            plan.header.name.c_str(), ull(limit), maxScratchChunks, ull(unit));
      }
      if (per < s.chunkBytes) {
        shape.scratchChunkBytes = per;
        shape.scratchBytes = per * rp.scratchChunks * factor;
        shape.wrapScratch = true;
      }
    }
  }
  return std::nullopt;
}

CallShape shapeCall(const plan::Plan& plan, int rank, uint64_t inputBytes, uint64_t outputBytes, DataType dtype) {
  CallShape shape;
  if (Refusal r = tryShapeCall(plan, rank, inputBytes, outputBytes, dtype, &shape))
    throw Error(ErrorCode::NotSupported, *r);
  return shape;
}

InPlaceLayout inPlaceLayout(plan::Collective collective, int rank, uint64_t inputBytes, uint64_t outputBytes) {
  InPlaceLayout l;
  switch (collective) {
    case plan::Collective::AllGather:
    case plan::Collective::Gather:  // on the root: NCCL's sendbuff == recvbuff + root * count
      l.dataBytes = std::max(outputBytes, (static_cast<uint64_t>(rank) + 1) * inputBytes);
      l.inputOffset = static_cast<uint64_t>(rank) * inputBytes;
      break;
    case plan::Collective::ReduceScatter:
    case plan::Collective::Scatter:  // on the root: NCCL's recvbuff == sendbuff + root * count
      l.dataBytes = std::max(inputBytes, (static_cast<uint64_t>(rank) + 1) * outputBytes);
      l.outputOffset = static_cast<uint64_t>(rank) * outputBytes;
      break;
    default:
      l.dataBytes = std::max(inputBytes, outputBytes);
      break;
  }
  return l;
}

std::unique_ptr<ContextImage> ContextImage::build(plan::PlanPtr plan, int rank, const CallShape& shape,
                                                  RankResources resources, const FifoDeviceHandle* fifo,
                                                  uint64_t timeoutNs) {
  std::unique_ptr<ContextImage> img(new ContextImage());
  img->plan_ = std::move(plan);
  img->rank_ = rank;
  img->shape_ = shape;
  img->res_ = std::move(resources);
  const plan::RankPlan& rp = img->rankPlan();
  MSCCLPP_ENFORCE(rp.hasOps, ErrorCode::InvalidArgument, "plan %s was loaded without the threadblocks of rank %d",
                  img->plan_->header.name.c_str(), rank);
  const RankResources& res = img->res_;
  MSCCLPP_ENFORCE(
      res.memoryInbound.size() == rp.memoryChannels.size() && res.memoryOutbound.size() == rp.memoryChannels.size() &&
          res.portInbound.size() == rp.portChannels.size() && res.portOutbound.size() == rp.portChannels.size() &&
          res.remoteBuffers.size() == rp.remoteBuffers.size() && res.switchGroups.size() == rp.switchChannels.size(),
      ErrorCode::InternalError, "plan %s rank %d: the wiring provided resources that do not match the plan",
      img->plan_->header.name.c_str(), rank);
  img->memoryTable_.push_back({res.input, res.inputBytes});
  img->memoryTable_.push_back({res.output, res.outputBytes});
  img->memoryTable_.push_back({res.scratch, res.scratchBytes});
  for (size_t k = 0; k < rp.remoteBuffers.size(); ++k)
    img->memoryTable_.push_back(
        {rp.remoteBuffers[k].viaPort ? res.remoteBuffers[k].base : nullptr, res.remoteBuffers[k].bytes});
  img->fillChannels(fifo, timeoutNs);
  img->resolveThreadblocks();
  img->fillState();
  return img;
}

void ContextImage::fillChannels(const FifoDeviceHandle* fifo, uint64_t timeoutNs) {
  const plan::RankPlan& rp = rankPlan();
  const char* name = plan_->header.name.c_str();
  const size_t nMem = rp.memoryChannels.size(), nPort = rp.portChannels.size();
  expected_.assign(nMem + nPort, 0);
  memoryChannels_.resize(nMem);
  for (size_t c = 0; c < nMem; ++c) {
    MemoryChannelDeviceHandle& h = memoryChannels_[c];
    h.semaphore_ = {res_.memoryInbound[c], res_.memoryOutbound[c], &expected_[c], timeoutNs};
    h.dst_ = nullptr;
    h.src_ = res_.input;
    h.packetBuffer_ = res_.scratch;
  }
  portChannels_.resize(nPort);
  if (nPort > 0) {
    MSCCLPP_ENFORCE(fifo != nullptr, ErrorCode::InternalError, "plan %s rank %d has port channels but no proxy FIFO",
                    name, rank_);
    MSCCLPP_ENFORCE(nPort - 1 <= kTriggerMaxChannelId, ErrorCode::NotSupported,
                    "plan %s rank %d has %zu port channels; a proxy FIFO trigger addresses at most %u", name, rank_,
                    nPort, kTriggerMaxChannelId + 1);
    MSCCLPP_ENFORCE(kFirstRemoteMemoryId + rp.remoteBuffers.size() - 1 <= kTriggerMaxMemoryId, ErrorCode::NotSupported,
                    "plan %s rank %d has %zu remote buffers; port channel triggers address at most %u memory ids", name,
                    rank_, rp.remoteBuffers.size(), kTriggerMaxMemoryId + 1);
  }
  for (size_t c = 0; c < nPort; ++c) {
    PortChannelDeviceHandle& h = portChannels_[c];
    h.channelId_ = static_cast<uint32_t>(c);
    h.dst_ = 0;
    h.src_ = 0;
    h.reserved_ = 0;
    h.semaphore_ = {res_.portInbound[c], &expected_[nMem + c], timeoutNs};
    h.fifo_ = *fifo;
  }
  const size_t nSw = rp.switchChannels.size();
  switchChannels_.resize(nSw);
  switchMembers_.resize(nSw);
  for (size_t i = 0; i < nSw; ++i) {
    const SwitchGroupResource& g = res_.switchGroups[i];
    switchMembers_[i].assign(g.members.begin(), g.members.end());
    MSCCLPP_ENFORCE(g.myIndex < g.members.size(), ErrorCode::InternalError,
                    "plan %s rank %d switch channel %zu: member index %u of %zu", name, rank_, i, g.myIndex,
                    g.members.size());
    SwitchChannelDeviceHandle& h = switchChannels_[i];
    h.devicePtr = g.members[g.myIndex];
    h.mcPtr = g.multicast;
    h.bufferSize = g.bytes;
    h.memberPtrs = switchMembers_[i].data();
    h.nMembers = static_cast<uint32_t>(g.members.size());
    h.myIndex = g.myIndex;
  }
}

void ContextImage::resolveThreadblocks() {
  const plan::RankPlan& rp = rankPlan();
  const plan::PlanHeader& hdr = plan_->header;
  const uint32_t align = hdr.bufferAlignment == 0 ? 1 : hdr.bufferAlignment;
  const bool dbl = hdr.useDoubleScratchBuffer;
  const uint64_t localScratch = dbl ? res_.scratchBytes / 2 : res_.scratchBytes;
  refs_.resize(rp.threadblocks.size());
  blocks_.resize(rp.threadblocks.size());
  uint64_t gran = 0;
  for (size_t t = 0; t < rp.threadblocks.size(); ++t) {
    const plan::ThreadblockPlan& tb = rp.threadblocks[t];
    std::vector<ResolvedRef>& refs = refs_[t];
    refs.assign(tb.refs.size(), ResolvedRef{});
    // Pipeline unit of each op (0 outside pipelines).
    std::vector<uint64_t> unitOf(tb.ops.size(), 0);
    for (size_t i = 0; i < tb.ops.size(); ++i) {
      const plan::Op& op = tb.ops[i];
      if (op.type != OpType::Pipeline) continue;
      MSCCLPP_ENFORCE(op.unitSize > 0, ErrorCode::InvalidPlan,
                      "plan %s rank %d threadblock %d op %zu: pipeline unit_size is 0", hdr.name.c_str(), rank_, tb.id,
                      i);
      for (uint32_t b = 1; b <= op.bodyCount && i + b < tb.ops.size(); ++b) unitOf[i + b] = op.unitSize;
    }
    for (size_t i = 0; i < tb.ops.size(); ++i) {
      const plan::Op& op = tb.ops[i];
      const std::string where = strFormat("plan %s (%s) rank %d threadblock %d op %zu (%s)", hdr.name.c_str(),
                                          hdr.source.c_str(), rank_, tb.id, i, plan::opTypeName(op.type));
      const plan::OpRule& rule = plan::opRule(op.type);
      // Channel, semaphore and barrier ids.
      for (uint32_t k = 0; k < op.nIds; ++k) {
        uint32_t v = tb.ids[op.idsBegin + k];
        size_t limit = 0;
        const char* what = "";
        if (op.type == OpType::SemAcquire || op.type == OpType::SemRelease) {
          limit = rp.semaphoreInitValues.size(), what = "semaphore";
        } else if (op.channelType == ChannelType::Memory) {
          limit = rp.memoryChannels.size(), what = "memory channel";
        } else if (op.channelType == ChannelType::Port) {
          limit = rp.portChannels.size(), what = "port channel";
        } else if (op.channelType == ChannelType::Switch) {
          limit = rp.switchChannels.size(), what = "switch channel";
        } else {
          continue;
        }
        MSCCLPP_ENFORCE(v < limit, ErrorCode::InvalidPlan, "%s: %s id %u out of range (%zu declared)", where.c_str(),
                        what, v, limit);
      }
      if (op.type == OpType::Barrier) {
        MSCCLPP_ENFORCE(
            op.barrierId < rp.numBarriers && op.numThreadblocks >= 1 && op.numThreadblocks <= rp.threadblocks.size(),
            ErrorCode::InvalidPlan, "%s: barrier %u of %u blocks (rank has %zu threadblocks, %u barriers)",
            where.c_str(), op.barrierId, op.numThreadblocks, rp.threadblocks.size(), rp.numBarriers);
      }
      if (op.channelType == ChannelType::Port &&
          (op.type == OpType::Put || op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush ||
           op.type == OpType::PutPackets || op.type == OpType::ReadPutPackets)) {
        MSCCLPP_ENFORCE(op.nIds > 0, ErrorCode::InvalidPlan, "%s: a port-channel transfer needs channel_ids",
                        where.c_str());
      }
      if (op.type == OpType::Pipeline) continue;
      const uint64_t unit = unitOf[i];
      auto resolve = [&](bool isSrc, uint32_t pos) {
        const uint32_t idx = (isSrc ? op.srcBegin : op.dstBegin) + pos;
        const plan::BufferRef& br = tb.refs[idx];
        const RefSlot slot = (isSrc ? rule.src : rule.dst).slot(pos);
        const bool packet =
            isPacketSlot(slot) || (isSrc && rule.portSrcIsPackets && op.channelType == ChannelType::Port);
        ResolvedRef r{};
        r.kind = static_cast<uint8_t>(br.kind);
        r.memoryId = UINT32_MAX;
        r.id = br.id;
        uint64_t limit = 0;
        const char* bufName = "";
        BufferType type = br.type;
        switch (br.kind) {
          case RefKind::Local:
            r.base = type == BufferType::Input ? res_.input : (type == BufferType::Output ? res_.output : res_.scratch);
            r.memoryId = static_cast<uint32_t>(type);
            limit = type == BufferType::Input ? res_.inputBytes
                                              : (type == BufferType::Output ? res_.outputBytes : localScratch);
            bufName =
                type == BufferType::Input ? "the input" : (type == BufferType::Output ? "the output" : "the scratch");
            break;
          case RefKind::Remote: {
            const plan::RemoteBufferDecl& decl = rp.remoteBuffers[br.id];
            type = decl.type;
            r.base = decl.viaMemory ? res_.remoteBuffers[br.id].base : nullptr;
            r.memoryId = decl.viaPort ? kFirstRemoteMemoryId + br.id : UINT32_MAX;
            limit = res_.remoteBuffers[br.id].bytes;
            if (type == BufferType::Scratch && dbl) limit /= 2;
            bufName = "the remote buffer";
            if (op.channelType == ChannelType::Port) {
              MSCCLPP_ENFORCE(decl.viaPort, ErrorCode::InvalidPlan,
                              "%s: remote buffer %u (rank %d) is not accessible through port channels", where.c_str(),
                              br.id, decl.rank);
            } else {
              MSCCLPP_ENFORCE(r.base != nullptr, ErrorCode::NotSupported,
                              "%s: remote buffer %u (rank %d, %s) is not mapped for memory-channel access",
                              where.c_str(), br.id, decl.rank, plan::bufferTypeName(decl.type));
            }
            break;
          }
          case RefKind::Multicast: {
            type = rp.switchChannels[br.id].bufferType;
            limit = res_.switchGroups[br.id].bytes;
            if (type == BufferType::Scratch && dbl) limit /= 2;
            bufName = "the switch channel's buffer";
            break;
          }
        }
        r.type = static_cast<uint8_t>(type);
        r.scratch = type == BufferType::Scratch ? 1 : 0;
        const bool wrap = r.scratch && shape_.wrapScratch;
        r.offset = static_cast<uint64_t>(br.index) * (wrap ? shape_.scratchChunkBytes : shape_.chunkBytes);
        r.bytes = static_cast<uint64_t>(br.size) * shape_.chunkBytes;
        if (br.segment != plan::SegmentTable::None) {
          // Placed and sized at each call (bindSegments); until then it covers nothing. An input
          // or output segment is its owner's; a scratch slot is sized by this rank's counts.
          const int owner =
              (br.kind == RefKind::Local || type == BufferType::Scratch) ? rank_ : rp.remoteBuffers[br.id].rank;
          const plan::SegmentSource src =
              plan::segmentSource(hdr.collective, static_cast<uint32_t>(owner), br.segment, br.segmentPeer);
          SegmentRef seg;
          seg.block = static_cast<uint32_t>(t);
          seg.ref = idx;
          seg.op = static_cast<uint32_t>(i);
          seg.fixedOffset = r.offset;
          seg.limit = limit;
          seg.factor = packet ? 2 : 1;
          seg.sender = src.sender;
          seg.receiver = src.receiver;
          seg.line = src.line;
          seg.prefix = src.prefix;
          seg.alongRow = src.alongRow;
          seg.placed = type != BufferType::Scratch;
          seg.slotBytes = type == BufferType::Scratch ? hdr.slotBytes : 0;
          segments_.push_back(seg);
          r.bytes = 0;
          if (rule.reduces) gran = std::gcd(gran, r.offset);
          refs[idx] = r;
          return;
        }
        if (op.tbgSize > 1) {
          MSCCLPP_ENFORCE(
              !wrap, ErrorCode::NotSupported,
              "%s: a thread-block-group slice of scratch cannot wrap (the call exceeds MSCCLPP_REUSE_SCRATCH_BYTES)",
              where.c_str());
          uint64_t off = 0, len = 0;
          tbgSlice(r.bytes, align, op.tbgId, op.tbgSize, &off, &len);
          r.offset += off;
          r.bytes = len;
        }
        uint64_t extent = r.bytes;
        if (wrap) {
          MSCCLPP_ENFORCE(unit > 0 || r.bytes <= shape_.scratchChunkBytes, ErrorCode::NotSupported,
                          "%s: references %llu scratch bytes outside a pipeline but the scratch chunk is %llu bytes "
                          "(raise MSCCLPP_REUSE_SCRATCH_BYTES)",
                          where.c_str(), ull(r.bytes), ull(shape_.scratchChunkBytes));
          extent = std::min(r.bytes, shape_.scratchChunkBytes);
        }
        const uint64_t factor = packet ? 2 : 1;
        MSCCLPP_ENFORCE((r.offset + extent) * factor <= limit, ErrorCode::InvalidArgument,
                        "%s: %s reference %u needs bytes [%llu, %llu) of %s (%llu bytes available)", where.c_str(),
                        isSrc ? "src_buff" : "dst_buff", pos, ull(r.offset * factor), ull((r.offset + extent) * factor),
                        bufName, ull(limit));
        if (rule.reduces) gran = std::gcd(gran, std::gcd(r.offset, std::gcd(r.bytes, unit)));
        refs[idx] = r;
      };
      for (uint32_t k = 0; k < op.nSrc; ++k) resolve(true, k);
      for (uint32_t k = 0; k < op.nDst; ++k) resolve(false, k);
    }
    ThreadblockDevice& b = blocks_[t];
    b.ops = tb.ops.data();
    b.refs = refs.data();
    b.ids = tb.ids.data();
    b.nOps = static_cast<uint32_t>(tb.ops.size());
    b.nRefs = static_cast<uint32_t>(tb.refs.size());
    b.nIds = static_cast<uint32_t>(tb.ids.size());
    b.planTbId = static_cast<uint32_t>(tb.id);
  }
  reduceGranularity_ = gran;
}

void ContextImage::fillState() {
  const plan::RankPlan& rp = rankPlan();
  semaphores_.assign(rp.semaphoreInitValues.begin(), rp.semaphoreInitValues.end());
  barriers_.assign(rp.numBarriers, DeviceSyncer{0, 0});
  ExecState* state = res_.sharedState.state;
  BlockRecord* records = res_.sharedState.blockRecords;
  if (state == nullptr || records == nullptr) {
    ownState_.assign(1, ExecState{});
    ownRecords_.assign(rp.threadblocks.size(), BlockRecord{});
    state = ownState_.data();
    records = ownRecords_.data();
  }
  uint32_t* abortFlag = res_.abortFlag;
  if (abortFlag == nullptr) {
    ownAbort_.assign(1, 0);
    abortFlag = ownAbort_.data();
  }
  dev_.rank = rank_;
  dev_.nBlocks = static_cast<uint32_t>(blocks_.size());
  dev_.blocks = blocks_.data();
  dev_.chunkBytes = shape_.chunkBytes;
  dev_.scratchChunkBytes = shape_.scratchChunkBytes;
  dev_.doubleScratch = plan_->header.useDoubleScratchBuffer ? 1 : 0;
  dev_.scratchHalfBytes = dev_.doubleScratch ? res_.scratchBytes / 2 : 0;
  dev_.wrapScratch = shape_.wrapScratch ? 1 : 0;
  dev_.input = res_.input;
  dev_.output = res_.output;
  dev_.scratch = res_.scratch;
  dev_.memoryChannels = memoryChannels_.data();
  dev_.portChannels = portChannels_.data();
  dev_.switchChannels = switchChannels_.data();
  dev_.nMemoryChannels = static_cast<uint32_t>(memoryChannels_.size());
  dev_.nPortChannels = static_cast<uint32_t>(portChannels_.size());
  dev_.nSwitchChannels = static_cast<uint32_t>(switchChannels_.size());
  dev_.nSemaphores = static_cast<uint32_t>(semaphores_.size());
  dev_.semaphores = semaphores_.data();
  dev_.barriers = barriers_.data();
  dev_.nBarriers = static_cast<uint32_t>(barriers_.size());
  dev_.state = state;
  dev_.blockRecords = records;
  dev_.abortFlag = abortFlag;
  dev_.liveWaits = res_.liveWaits;
  resetState();
}

void ContextImage::resetState() {
  std::fill(expected_.begin(), expected_.end(), 0);
  const plan::RankPlan& rp = rankPlan();
  std::copy(rp.semaphoreInitValues.begin(), rp.semaphoreInitValues.end(), semaphores_.begin());
  std::fill(barriers_.begin(), barriers_.end(), DeviceSyncer{0, 0});
  const int64_t first = params::execFirstFlag();
  MSCCLPP_ENFORCE(first >= 1 && first <= static_cast<int64_t>(UINT32_MAX), ErrorCode::InvalidArgument,
                  "MSCCLPP_EXEC_FIRST_FLAG=%lld: expected 1 to 4294967295", static_cast<long long>(first));
  *dev_.state = ExecState{static_cast<uint32_t>(first), 0u, UINT32_MAX, 0u};
  std::fill(dev_.blockRecords, dev_.blockRecords + dev_.nBlocks, BlockRecord{});
  if (!ownAbort_.empty()) ownAbort_[0] = 0;
}

std::string ContextImage::bindSegments(const uint64_t* counts, size_t elementBytes) {
  const plan::PlanHeader& h = plan_->header;
  return exec::bindSegments(segments_, h.worldSize, counts, elementBytes, &refs_,
                            strFormat("plan %s (%s) rank %d", h.name.c_str(), h.source.c_str(), rank_));
}

std::string ContextImage::resolvePut(const TriggerFields& f, char** src, char** dst) const {
  const auto& table = memoryTable_;
  if (f.srcMemoryId >= table.size() || f.dstMemoryId >= table.size() || table[f.srcMemoryId].base == nullptr ||
      table[f.dstMemoryId].base == nullptr) {
    return strFormat("put on port channel %u names memory ids %u -> %u; registered: %zu", f.channelId, f.srcMemoryId,
                     f.dstMemoryId, table.size());
  }
  const MemoryEntry& s = table[f.srcMemoryId];
  const MemoryEntry& d = table[f.dstMemoryId];
  if (f.srcOffset + f.size > s.bytes || f.dstOffset + f.size > d.bytes || f.srcOffset + f.size < f.srcOffset ||
      f.dstOffset + f.size < f.dstOffset) {
    return strFormat(
        "put on port channel %u of %llu bytes from memory %u offset %llu (%llu bytes) to memory %u "
        "offset %llu (%llu bytes) is out of bounds",
        f.channelId, ull(f.size), f.srcMemoryId, ull(f.srcOffset), ull(s.bytes), f.dstMemoryId, ull(f.dstOffset),
        ull(d.bytes));
  }
  *src = s.base + f.srcOffset;
  *dst = d.base + f.dstOffset;
  return std::string();
}

}  // namespace mscclpp::exec
