// Ordering queries on the model (docs/plan-verifier.md, "Happens-before"):
//
// * After a read, a later access needs execution order only: any path of edges (a relaxed signal
//   or an LL packet arrival is enough: the read has returned before the signal was sent).
// * After a write, a later access needs the write to be visible: a path of strong edges (program
//   order with a block-wide barrier, release/acquire signal and wait, barriers, the proxy's ordered
//   requests), or the write performed by a kernel boundary: a path to the end of some rank's call
//   (strong under strictKernelBoundaries, any path otherwise), then any path from that rank's next
//   call or its host (a launch starts after everything the previous launch on its stream saw).
//
// Within one call the queries search the graph; across calls they use per-event tables of which
// kernel boundaries each event reaches (rank-indexed, so cheap).
#ifndef MSCCLPP_PLAN_VERIFY_HAPPENS_BEFORE_HPP_
#define MSCCLPP_PLAN_VERIFY_HAPPENS_BEFORE_HPP_

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "plan/verify/event_graph.hpp"
#include "plan/verify/schedule.hpp"

namespace mscclpp::plan::verify {

class HappensBefore {
 public:
  // strictBoundaries: Options::strictKernelBoundaries.
  HappensBefore(const Graph& g, const Schedule& s, bool strictBoundaries);
  // a ran before b in the schedule; is every schedule's a ordered before b? strong: a wrote and b
  // must see it; otherwise execution order suffices.
  bool ordered(uint32_t a, uint32_t b, bool strong);

 private:
  static constexpr uint8_t kNoCall = 0xFF;
  bool intraCall(uint32_t a, uint32_t b, bool strong);
  uint8_t& endStrong(uint32_t e, uint32_t r) { return endStrong_[static_cast<size_t>(e) * nRanks_ + r]; }
  uint8_t& endAny(uint32_t e, uint32_t r) { return endAny_[static_cast<size_t>(e) * nRanks_ + r]; }
  uint8_t& startAny(uint32_t e, uint32_t r) { return startAny_[static_cast<size_t>(e) * nRanks_ + r]; }

  const Graph& g_;
  const Schedule& s_;
  size_t nRanks_;
  bool strict_;
  // Earliest call whose kernel end on rank r an event reaches by strong / any edges (kNoCall: none).
  std::vector<uint8_t> endStrong_, endAny_;
  // Latest call whose kernel start on rank r reaches the event by any edges, plus one (0: none).
  std::vector<uint8_t> startAny_;
  std::vector<uint32_t> stamp_;
  uint32_t stampValue_ = 0;
  std::vector<uint32_t> stack_;
  std::unordered_map<uint64_t, bool> cache_;
};

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_HAPPENS_BEFORE_HPP_
