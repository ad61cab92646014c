// One schedule of the model: events run as soon as their predecessors completed and, for waits and
// sem_acquires, their counter allows (claims in the order waits start, as the executor's atomic
// claim does). If the schedule cannot finish, the plan can deadlock: the stuck waits (or the cycle
// of waits) are the findings. The order found is a topological order of the happens-before graph,
// in which the symbolic execution runs.
#ifndef MSCCLPP_PLAN_VERIFY_SCHEDULE_HPP_
#define MSCCLPP_PLAN_VERIFY_SCHEDULE_HPP_

#include <cstdint>
#include <vector>

#include "plan/verify/event_graph.hpp"

namespace mscclpp::plan::verify {

struct Schedule {
  std::vector<uint32_t> order;  // events in the order they ran
  std::vector<uint32_t> index;  // event -> position in order, kNone if it never ran
  bool complete = false;
};

Schedule simulate(const Graph& g, FindingSink* sink);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_SCHEDULE_HPP_
