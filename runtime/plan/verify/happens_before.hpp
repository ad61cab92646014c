// Ordering queries on the model (docs/plan-verifier.md, "The model").
// After a read, a later access needs any path of edges: the read has returned.
// After a write, it needs a path of strong edges, or a kernel boundary between:
// a path to the end of some rank's call, then one from that rank's next call or host.
// The path to the end is strong under strictKernelBoundaries, any path otherwise.
// Within a call the queries search the graph. Across calls they use per-event
// tables of the kernel boundaries each event reaches, indexed by rank.
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
  // a ran before b in the schedule. Does every schedule order a before b?
  // With strong, a wrote and b must see it; else execution order suffices.
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
  // Earliest call whose kernel end on rank r
  // an event reaches by strong or any edges; else kNoCall.
  std::vector<uint8_t> endStrong_, endAny_;
  // Latest call whose kernel start on rank r
  // reaches the event, plus one; 0 when none.
  std::vector<uint8_t> startAny_;
  std::vector<uint32_t> stamp_;
  uint32_t stampValue_ = 0;
  std::vector<uint32_t> stack_;
  std::unordered_map<uint64_t, bool> cache_;
};

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_HAPPENS_BEFORE_HPP_
