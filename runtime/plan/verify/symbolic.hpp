// The symbolic execution: runs the schedule's events over symbolic buffer contents.
// It checks every access against earlier ones to the same bytes, for races,
// and each output read after a call against the collective's definition.
#ifndef MSCCLPP_PLAN_VERIFY_SYMBOLIC_HPP_
#define MSCCLPP_PLAN_VERIFY_SYMBOLIC_HPP_

#include <cstdint>

#include "plan/verify/event_graph.hpp"
#include "plan/verify/happens_before.hpp"
#include "plan/verify/schedule.hpp"
#include "plan/verify/terms.hpp"

namespace mscclpp::plan::verify {

// Returns the number of accesses checked.
// dataFlows, when given, gets the first call's writer and reader
// events that run on different ranks.
uint64_t runSymbolic(const Graph& g, const Schedule& s, HappensBefore* hb, TermTable* terms, FindingSink* sink,
                     std::vector<std::pair<uint32_t, uint32_t>>* dataFlows = nullptr);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_SYMBOLIC_HPP_
