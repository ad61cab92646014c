#include "cli/plan/plan_mutations.hpp"

#include <algorithm>

#include "core/format.hpp"

namespace mscclpp::plan::mutate {
namespace {

bool isWaitOp(OpType t) { return t == OpType::Wait || t == OpType::RelaxedWait || t == OpType::SemAcquire; }
bool isSignalOp(OpType t) { return t == OpType::Signal || t == OpType::RelaxedSignal || t == OpType::SemRelease; }

// The pipeline op enclosing each op (-1 outside pipelines).
std::vector<int> enclosing(const ThreadblockPlan& tb) {
  std::vector<int> in(tb.ops.size(), -1);
  for (size_t i = 0; i < tb.ops.size(); ++i)
    if (tb.ops[i].type == OpType::Pipeline)
      for (size_t b = i + 1; b <= i + tb.ops[i].bodyCount && b < tb.ops.size(); ++b) in[b] = static_cast<int>(i);
  return in;
}

uint32_t chunksOf(const Plan& plan, int rank, const BufferRef& ref) {
  const RankPlan& rp = plan.ranks[rank];
  auto count = [&](const RankPlan& r, BufferType t) {
    return t == BufferType::Input ? r.inputChunks : t == BufferType::Output ? r.outputChunks : r.scratchChunks;
  };
  switch (ref.kind) {
    case RefKind::Local:
      return count(rp, ref.type);
    case RefKind::Remote: {
      const RemoteBufferDecl& d = rp.remoteBuffers[ref.id];
      return count(plan.ranks[d.rank], d.type);
    }
    case RefKind::Multicast: {
      const SwitchChannelDecl& s = rp.switchChannels[ref.id];
      uint32_t n = UINT32_MAX;
      for (int m : s.ranks) n = std::min(n, count(plan.ranks[m], s.bufferType));
      return n;
    }
  }
  return 0;
}

std::string where(const Plan& plan, int rank, int tb, uint32_t op) {
  return strFormat("rank %d tb %d op %u (%s)", rank, tb, op,
                   opTypeName(plan.ranks[rank].threadblocks[tb].ops[op].type));
}

// The channel of `peer` that pairs with
// (rank, channel) of the given type, or -1.
int pairedChannel(const Plan& plan, int rank, bool memory, uint32_t channel) {
  const auto& mine = memory ? plan.ranks[rank].memoryChannels : plan.ranks[rank].portChannels;
  const ChannelDecl& d = mine[channel];
  const auto& theirs = memory ? plan.ranks[d.peer].memoryChannels : plan.ranks[d.peer].portChannels;
  for (size_t c = 0; c < theirs.size(); ++c)
    if (theirs[c].peer == rank && theirs[c].pairIndex == d.pairIndex) return static_cast<int>(c);
  return -1;
}

struct SlotUse {
  int tb;
  uint32_t op;
  int slot;  // -1 when the op has one id
};

// Uses (tb, op, slot) of one counter on one rank,
// in program order, by ops matching `pick`.
template <class Pick>
std::vector<SlotUse> uses(const RankPlan& rp, Pick pick) {
  std::vector<SlotUse> out;
  for (int t = 0; t < static_cast<int>(rp.threadblocks.size()); ++t) {
    const ThreadblockPlan& tb = rp.threadblocks[t];
    for (uint32_t i = 0; i < tb.ops.size(); ++i) {
      const Op& op = tb.ops[i];
      for (uint32_t k = 0; k < op.nIds; ++k)
        if (pick(op, tb.ids[op.idsBegin + k])) out.push_back({t, i, op.nIds == 1 ? -1 : static_cast<int>(k)});
    }
  }
  return out;
}

void eraseOp(ThreadblockPlan& tb, uint32_t index) {
  const std::vector<int> in = enclosing(tb);
  if (in[index] >= 0) --tb.ops[in[index]].bodyCount;
  tb.ops.erase(tb.ops.begin() + index);
  if (!tb.opSources.empty()) tb.opSources.erase(tb.opSources.begin() + index);
}

void dropSlot(ThreadblockPlan& tb, uint32_t index, int slot) {
  if (slot < 0) {
    eraseOp(tb, index);
    return;
  }
  Op& op = tb.ops[index];
  std::vector<uint32_t> ids(tb.ids.begin() + op.idsBegin, tb.ids.begin() + op.idsBegin + op.nIds);
  ids.erase(ids.begin() + slot);
  op.idsBegin = static_cast<uint32_t>(tb.ids.size());
  op.nIds = static_cast<uint32_t>(ids.size());
  tb.ids.insert(tb.ids.end(), ids.begin(), ids.end());
}

}  // namespace

// Each wait paired with the signal it consumes,
// where one threadblock waits and one signals.
void listPairs(const Plan& plan, std::vector<Mutation>* out) {
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const RankPlan& rp = plan.ranks[r];
    auto add = [&](const std::vector<SlotUse>& waits, const std::vector<SlotUse>& signals, int signalRank,
                   const char* what) {
      if (waits.empty() || waits.size() != signals.size()) return;
      for (const auto* list : {&waits, &signals})
        for (const SlotUse& u : *list)
          if (u.tb != (*list)[0].tb) return;
      for (size_t j = 0; j < waits.size(); ++j) {
        Mutation m;
        m.kind = Kind::DropPair;
        m.rank = r;
        m.tb = waits[j].tb;
        m.op = waits[j].op;
        m.slot = waits[j].slot;
        m.pairRank = signalRank;
        m.pairTb = signals[j].tb;
        m.pairOp = signals[j].op;
        m.pairSlot = signals[j].slot;
        m.text = where(plan, r, m.tb, m.op) + strFormat(" and the %s it consumes, ", what) +
                 where(plan, signalRank, m.pairTb, m.pairOp) + ": both dropped";
        out->push_back(m);
      }
    };
    for (int memory = 1; memory >= 0; --memory) {
      const auto& channels = memory ? rp.memoryChannels : rp.portChannels;
      const ChannelType type = memory ? ChannelType::Memory : ChannelType::Port;
      for (uint32_t c = 0; c < channels.size(); ++c) {
        const int peer = channels[c].peer;
        const int pc = pairedChannel(plan, r, memory != 0, c);
        if (pc < 0) continue;
        auto waits = uses(rp, [&](const Op& op, uint32_t id) {
          return (op.type == OpType::Wait || op.type == OpType::RelaxedWait) && op.channelType == type && id == c;
        });
        // Only plain signals: pws/pwsf also move data.
        auto signals = uses(plan.ranks[peer], [&](const Op& op, uint32_t id) {
          return (op.type == OpType::Signal || op.type == OpType::RelaxedSignal) && op.channelType == type &&
                 id == static_cast<uint32_t>(pc);
        });
        add(waits, signals, peer, "signal");
      }
    }
    for (uint32_t s = 0; s < rp.semaphoreInitValues.size(); ++s) {
      if (rp.semaphoreInitValues[s] != 0) continue;
      auto acquires = uses(rp, [&](const Op& op, uint32_t id) { return op.type == OpType::SemAcquire && id == s; });
      auto releases = uses(rp, [&](const Op& op, uint32_t id) { return op.type == OpType::SemRelease && id == s; });
      add(acquires, releases, r, "sem_release");
    }
  }
}

std::string harmlessNop(const Plan& plan, const Mutation& m) {
  const ThreadblockPlan& tb = plan.ranks[m.rank].threadblocks[m.tb];
  const std::vector<int> in = enclosing(tb);
  const uint32_t i = m.op;
  if (i == 0) return "the block's start already is a block-wide barrier";
  if (i + 1 == tb.ops.size() && in[i] < 0) return "the block's end already is a block-wide barrier";
  auto sameBody = [&](uint32_t j) { return j < tb.ops.size() && in[j] == in[i]; };
  auto syncs = [&](uint32_t j) { return tb.ops[j].type == OpType::Nop || tb.ops[j].type == OpType::Barrier; };
  if ((sameBody(i - 1) && syncs(i - 1)) || (sameBody(i + 1) && syncs(i + 1)))
    return "a neighbouring barrier already syncs";
  if (in[i] >= 0 && tb.ops[in[i]].type == OpType::Pipeline) {
    const uint32_t first = static_cast<uint32_t>(in[i]) + 1,
                   last = static_cast<uint32_t>(in[i]) + tb.ops[in[i]].bodyCount;
    if ((i == first && tb.ops[last].type == OpType::Nop) || (i == last && tb.ops[first].type == OpType::Nop))
      return "the pipeline body's other end is a barrier, which also separates iterations";
  }
  // Ops one thread runs: a signal/wait/flush/semaphore
  // op of one channel, a port transfer of one
  // destination (the thread pushes the request).
  auto oneThread = [&](uint32_t j) {
    const Op& op = tb.ops[j];
    if (op.type == OpType::Pipeline) return false;
    if (op.nSrc + op.nDst == 0) return op.nIds == 1;
    return op.channelType == ChannelType::Port && op.nDst == 1 &&
           (op.type == OpType::Put || op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush ||
            op.type == OpType::PutPackets);
  };
  if (i >= 1 && sameBody(i - 1) && sameBody(i + 1) && oneThread(i - 1) && oneThread(i + 1))
    return "the ops on both sides run on one thread";
  auto syncOnly = [&](uint32_t j) {
    return tb.ops[j].nSrc + tb.ops[j].nDst == 0 && tb.ops[j].type != OpType::Pipeline;
  };
  if (i >= 1 && sameBody(i - 1) && sameBody(i + 1) && syncOnly(i - 1) && syncOnly(i + 1))
    return "signals/waits on both sides (one thread per channel) and no data access depends on their order";
  return "";
}

const char* kindName(Kind kind) {
  switch (kind) {
    case Kind::DropWait:
      return "drop-wait";
    case Kind::DropSignal:
      return "drop-signal";
    case Kind::EarlyOp:
      return "early-op";
    case Kind::ShiftChunk:
      return "shift-chunk";
    case Kind::DropNop:
      return "drop-nop";
    case Kind::DropPair:
      return "drop-pair";
  }
  return "?";
}

std::vector<Mutation> list(const Plan& plan, Kind kind) {
  std::vector<Mutation> out;
  if (kind == Kind::DropPair) {
    listPairs(plan, &out);
    return out;
  }
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    const RankPlan& rp = plan.ranks[r];
    for (int t = 0; t < static_cast<int>(rp.threadblocks.size()); ++t) {
      const ThreadblockPlan& tb = rp.threadblocks[t];
      const std::vector<int> in = enclosing(tb);
      for (uint32_t i = 0; i < tb.ops.size(); ++i) {
        const Op& op = tb.ops[i];
        Mutation m;
        m.kind = kind;
        m.rank = r;
        m.tb = t;
        m.op = i;
        switch (kind) {
          case Kind::DropWait:
          case Kind::DropSignal: {
            if (!(kind == Kind::DropWait ? isWaitOp(op.type) : isSignalOp(op.type))) break;
            if (op.nIds <= 1) {
              m.text = where(plan, r, t, i) + ": dropped";
              out.push_back(m);
              break;
            }
            for (uint32_t k = 0; k < op.nIds; ++k) {
              m.slot = static_cast<int>(k);
              m.text =
                  where(plan, r, t, i) +
                  strFormat(": %s %u dropped from its list",
                            op.type == OpType::SemAcquire || op.type == OpType::SemRelease ? "semaphore" : "channel",
                            tb.ids[op.idsBegin + k]);
              out.push_back(m);
            }
            break;
          }
          case Kind::EarlyOp: {
            if (!isWaitOp(op.type)) break;
            for (uint32_t d = i + 1; d < tb.ops.size() && in[d] == in[i]; ++d) {
              const Op& next = tb.ops[d];
              if (next.type == OpType::Pipeline || isWaitOp(next.type) || next.type == OpType::Barrier) break;
              if (next.nSrc + next.nDst == 0) continue;
              m.op = d;
              m.target = i;
              m.text = where(plan, r, t, d) + strFormat(": moved before its wait, op %u", i);
              out.push_back(m);
              break;
            }
            break;
          }
          case Kind::ShiftChunk: {
            if (op.type == OpType::Pipeline) break;
            for (uint32_t k = 0; k < static_cast<uint32_t>(op.nSrc + op.nDst); ++k) {
              const bool src = k < op.nSrc;
              const BufferRef& ref = tb.refs[src ? op.srcBegin + k : op.dstBegin + (k - op.nSrc)];
              const uint32_t n = chunksOf(plan, r, ref);
              if (static_cast<uint64_t>(ref.index) + ref.size + 1 > n && ref.index == 0) continue;
              m.slot = static_cast<int>(k);
              m.text = where(plan, r, t, i) + strFormat(": %s[%u] moved to the next chunk",
                                                        src ? "src_buff" : "dst_buff", src ? k : k - op.nSrc);
              out.push_back(m);
            }
            break;
          }
          case Kind::DropPair:
            break;
          case Kind::DropNop:
            if (op.type != OpType::Nop) break;
            m.text = where(plan, r, t, i) + ": dropped";
            out.push_back(m);
            break;
        }
      }
    }
  }
  return out;
}

Plan apply(const Plan& plan, const Mutation& m) {
  Plan p = plan;
  ThreadblockPlan& tb = p.ranks[m.rank].threadblocks[m.tb];
  Op& op = tb.ops[m.op];
  switch (m.kind) {
    case Kind::DropWait:
    case Kind::DropSignal:
    case Kind::DropNop:
      dropSlot(tb, m.op, m.slot);
      break;
    case Kind::DropPair: {
      ThreadblockPlan& other = p.ranks[m.pairRank].threadblocks[m.pairTb];
      // Erasing the later op first keeps the other's
      // index valid when both are in one threadblock.
      if (&other == &tb && m.pairOp > m.op) {
        dropSlot(other, m.pairOp, m.pairSlot);
        dropSlot(tb, m.op, m.slot);
      } else {
        dropSlot(tb, m.op, m.slot);
        dropSlot(other, m.pairOp, m.pairSlot);
      }
      break;
    }
    case Kind::EarlyOp: {
      const Op moved = op;
      const std::string source = tb.opSources.empty() ? std::string() : tb.opSources[m.op];
      tb.ops.erase(tb.ops.begin() + m.op);
      tb.ops.insert(tb.ops.begin() + m.target, moved);
      if (!tb.opSources.empty()) {
        tb.opSources.erase(tb.opSources.begin() + m.op);
        tb.opSources.insert(tb.opSources.begin() + m.target, source);
      }
      break;
    }
    case Kind::ShiftChunk: {
      const uint32_t k = static_cast<uint32_t>(m.slot);
      BufferRef& ref = tb.refs[k < op.nSrc ? op.srcBegin + k : op.dstBegin + (k - op.nSrc)];
      const uint32_t n = chunksOf(p, m.rank, ref);
      if (static_cast<uint64_t>(ref.index) + ref.size + 1 <= n)
        ++ref.index;
      else
        --ref.index;
      break;
    }
  }
  return p;
}

}  // namespace mscclpp::plan::mutate
