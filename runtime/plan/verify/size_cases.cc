#include "plan/verify/size_cases.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "core/format.hpp"
#include "plan/verify/call_layout.hpp"

namespace mscclpp::plan::verify {
namespace {

using u128 = unsigned __int128;

// Most chunk sizes checked for thread-block groups;
// groups of up to 6 need at most 492.
constexpr uint64_t kMaxGroupSizes = 512;

// message = chunk x num / den, as in messageForChunk but unchecked.
void messageRatio(const Plan& plan, uint64_t* num, uint64_t* den) {
  const PlanHeader& h = plan.header;
  const RankPlan& r0 = plan.ranks.at(0);
  const uint64_t n = static_cast<uint64_t>(h.worldSize);
  *num = 1;
  *den = 1;
  if (r0.inputChunks == 0 && r0.outputChunks == 0) return;
  if (r0.inputChunks != 0) {
    *num = r0.inputChunks * (h.collective == Collective::AllGather ? n : 1);
    *den = h.collective == Collective::Scatter ? n : 1;
  } else {
    *num = r0.outputChunks * (h.collective == Collective::ReduceScatter ? n : 1);
    *den = h.collective == Collective::Gather ? n : 1;
  }
}

struct PipelinedRef {
  uint32_t index, size;
  bool operator<(const PipelinedRef& o) const { return index != o.index ? index < o.index : size < o.size; }
};

// Whether pipelined references of one buffer
// overlap at different chunk offsets.
// The pipeline argument needs every overlap at one offset,
// where iterations line up.
bool pipelinedRefsOverlapAtOffsets(const Plan& plan) {
  std::map<std::pair<int, int>, std::set<PipelinedRef>> byBuffer;  // by owner rank and buffer type
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const RankPlan& rp = plan.ranks[r];
    for (const ThreadblockPlan& tb : rp.threadblocks) {
      for (size_t i = 0; i < tb.ops.size(); ++i) {
        const Op& p = tb.ops[i];
        if (p.type != OpType::Pipeline) continue;
        for (size_t b = i + 1; b <= i + p.bodyCount && b < tb.ops.size(); ++b) {
          const Op& op = tb.ops[b];
          for (uint32_t k = 0; k < static_cast<uint32_t>(op.nSrc + op.nDst); ++k) {
            const BufferRef& ref = tb.refs[(k < op.nSrc ? op.srcBegin + k : op.dstBegin + (k - op.nSrc))];
            std::vector<int> owners;
            int type = static_cast<int>(ref.type);
            if (ref.kind == RefKind::Local) owners.push_back(static_cast<int>(r));
            if (ref.kind == RefKind::Remote) {
              owners.push_back(rp.remoteBuffers[ref.id].rank);
              type = static_cast<int>(rp.remoteBuffers[ref.id].type);
            }
            if (ref.kind == RefKind::Multicast) {
              owners = rp.switchChannels[ref.id].ranks;
              type = static_cast<int>(rp.switchChannels[ref.id].bufferType);
            }
            for (int o : owners) byBuffer[{o, type}].insert({ref.index, ref.size});
          }
        }
      }
    }
  }
  for (const auto& [key, refs] : byBuffer) {
    uint64_t reach = 0;
    uint32_t reachIndex = 0;
    bool any = false;
    for (const PipelinedRef& ref : refs) {
      if (any && ref.index < reach && ref.index != reachIndex) return true;
      if (!any || ref.index + static_cast<uint64_t>(ref.size) > reach) {
        reach = ref.index + static_cast<uint64_t>(ref.size);
        reachIndex = ref.index;
      }
      any = true;
    }
  }
  return false;
}

}  // namespace

SizeCases chooseSizes(const Plan& plan, uint64_t reuseScratchBytes) {
  SizeCases sc;
  const PlanHeader& h = plan.header;
  const uint64_t a = h.bufferAlignment == 0 ? 1 : h.bufferAlignment;
  std::set<uint32_t> groups;
  std::vector<std::pair<uint64_t, uint32_t>> pipelines;  // unit, num_chunks
  for (const auto& r : plan.ranks)
    for (const auto& tb : r.threadblocks)
      for (const auto& op : tb.ops) {
        if (op.tbgSize > 1) groups.insert(op.tbgSize);
        if (op.type == OpType::Pipeline && op.unitSize > 0) pipelines.push_back({op.unitSize, op.numChunks});
      }
  std::sort(pipelines.begin(), pipelines.end());
  pipelines.erase(std::unique(pipelines.begin(), pipelines.end()), pipelines.end());

  uint64_t num = 1, den = 1;
  messageRatio(plan, &num, &den);
  // Chunks whose message lies in [min, max].
  const u128 lo128 = (static_cast<u128>(h.minMessageSize) * den + num - 1) / num;
  const u128 hi128 = static_cast<u128>(h.maxMessageSize) * den / num;
  const uint64_t cHi = hi128 > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(hi128);
  uint64_t cLo = lo128 > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(lo128);
  cLo = std::max<uint64_t>(a, (cLo + a - 1) / a * a);
  std::set<uint64_t> chosen;
  // The first accepted chunk at or above c.
  // Accepted chunks are multiples of the alignment;
  // some collectives also need them divisible by the rank count.
  auto firstAccepted = [&](uint64_t c) -> uint64_t {
    c = std::max(cLo, (c + a - 1) / a * a);
    for (int tries = 0; tries < 4096 && c <= cHi; ++tries, c += a) {
      uint64_t m = 0;
      if (messageForChunk(plan, c, &m)) return c;
    }
    return 0;
  };
  const uint64_t smallest = firstAccepted(cLo);
  if (smallest == 0) {
    sc.note = "the plan accepts no message size";
    return sc;
  }
  chosen.insert(smallest);
  std::string why =
      "no thread-block groups or pipelines: every byte range scales with the chunk, so one size stands "
      "for all";
  if (!groups.empty()) {
    const uint64_t gmax = *groups.rbegin();
    uint64_t period = 1;
    for (uint32_t g : groups) period = std::lcm(period, static_cast<uint64_t>(g));
    const uint64_t u0 = 2 * gmax * gmax * gmax;
    const uint64_t uLo = smallest / a;
    uint64_t uHi = std::max(uLo, u0) + period;
    if (uHi - uLo >= kMaxGroupSizes) {
      // Groups this large make the covering set too long to check:
      // check the first sizes only.
      uHi = uLo + kMaxGroupSizes - 1;
      sc.standForAll = false;
    }
    for (uint64_t u = uLo; u <= uHi && u <= cHi / a; ++u) {
      uint64_t m = 0;
      if (messageForChunk(plan, u * a, &m)) chosen.insert(u * a);
    }
    why = strFormat(
        "thread-block groups of %s threadblocks: every chunk of %llu to %llu alignment units (the "
        "arrangements of slice boundaries repeat beyond that)",
        [&] {
          std::string s;
          for (uint32_t g : groups) s += (s.empty() ? "" : ", ") + std::to_string(g);
          return s;
        }()
            .c_str(),
        static_cast<unsigned long long>(uLo), static_cast<unsigned long long>(uHi));
    if (!sc.standForAll) why += "; the groups are too large for the covering set, so only these sizes are checked";
  }
  if (!pipelines.empty()) {
    for (const auto& [unit, chunks] : pipelines) {
      const uint64_t nc = std::max<uint32_t>(chunks, 1);
      for (uint64_t halves : {1, 2, 3, 4, 5, 6}) {  // half a unit to 3 units per pipeline
        const uint64_t c = firstAccepted(std::max<uint64_t>(a, halves * unit / (2 * nc)));
        if (c) chosen.insert(c);
      }
    }
    bool wraps = false;
    if (h.reuseResources) {
      uint32_t maxScratch = 0;
      for (const auto& r : plan.ranks) maxScratch = std::max(maxScratch, r.scratchChunks);
      const uint64_t factor = (h.protocol == Protocol::LL ? 2 : 1) * (h.useDoubleScratchBuffer ? 2 : 1);
      if (maxScratch > 0) {
        const uint64_t threshold = reuseScratchBytes / (static_cast<uint64_t>(maxScratch) * factor) + 1;
        const uint64_t atThreshold = firstAccepted(threshold);
        if (atThreshold) {
          const CallLayout L = makeLayout(plan, atThreshold, reuseScratchBytes);
          if (L.served && L.wrapScratch) {
            // Enough iterations to run past the first wrap of every pipeline.
            uint64_t want = atThreshold;
            for (const auto& [unit, chunks] : pipelines) {
              const uint64_t wrapIterations = L.scratchChunk / unit;
              want = std::max(want, (wrapIterations + 3) * unit / std::max<uint32_t>(chunks, 1));
            }
            const uint64_t c = firstAccepted(want);
            if (c) {
              chosen.insert(c);
              wraps = true;
            }
          }
        }
      }
    }
    sc.standForAll = sc.standForAll && !pipelinedRefsOverlapAtOffsets(plan);
    why = std::string("pipelines: chunks giving 1, 2 and 3 iterations (whole and partial last units)") +
          (wraps ? " and a chunk where reuse_resources wraps the scratch, past the wrap" : "") +
          (groups.empty() ? "" : ", with the thread-block group sizes") +
          (sc.standForAll ? ""
                          : "; pipelined references overlap at different chunk offsets, so these sizes do not "
                            "stand for every size");
  }
  sc.chunks.assign(chosen.begin(), chosen.end());
  sc.note = "sizes: " + why;
  return sc;
}

}  // namespace mscclpp::plan::verify
