// One schedule of the model: an event runs once its predecessors completed
// and, for a wait, once its counter allows. Waits claim in the order they start,
// as the executor's atomic claim does. A schedule that cannot finish is a deadlock;
// the stuck waits are the findings. The symbolic execution runs in this order.
#ifndef MSCCLPP_PLAN_VERIFY_SCHEDULE_HPP_
#define MSCCLPP_PLAN_VERIFY_SCHEDULE_HPP_

#include <cstdint>
#include <vector>

#include "plan/verify/event_graph.hpp"

namespace mscclpp::plan::verify {

struct Schedule {
  std::vector<uint32_t> order;  // events in the order they ran
  std::vector<uint32_t> index;  // per event: its position in order; kNone if it never ran
  bool complete = false;
};

Schedule simulate(const Graph& g, FindingSink* sink);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_SCHEDULE_HPP_
