// The symbolic execution: runs the schedule's events in order over symbolic buffer contents, checks
// every access against the earlier accesses of the same bytes (races), and compares every output
// with the collective's definition when the user reads it after a call (wrong results).
#ifndef MSCCLPP_PLAN_VERIFY_SYMBOLIC_HPP_
#define MSCCLPP_PLAN_VERIFY_SYMBOLIC_HPP_

#include <cstdint>

#include "plan/verify/event_graph.hpp"
#include "plan/verify/happens_before.hpp"
#include "plan/verify/schedule.hpp"
#include "plan/verify/terms.hpp"

namespace mscclpp::plan::verify {

// Returns the number of accesses checked. dataFlows (optional) receives (writer, reader) event pairs of
// the first call where the reader runs on another rank than the op that wrote what it reads.
uint64_t runSymbolic(const Graph& g, const Schedule& s, HappensBefore* hb, TermTable* terms, FindingSink* sink,
                     std::vector<std::pair<uint32_t, uint32_t>>* dataFlows = nullptr);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_SYMBOLIC_HPP_
