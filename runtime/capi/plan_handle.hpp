// What an mscclpp_c.h plan handle holds: the request a plan was chosen for and, per rank, the plan
// loaded for that rank. Selection without a rank (seed 004's registry.select has none) only
// chooses; the first execute() of a rank selects again for that rank, which loads the plan's part
// for it (the registry caches both) and must give the same plan.
#ifndef MSCCLPP_CAPI_PLAN_HANDLE_HPP_
#define MSCCLPP_CAPI_PLAN_HANDLE_HPP_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mscclpp/mscclpp_c.h"
#include "plan/registry.hpp"

struct mscclppPlanHandle {
  // Copies request (strings included) and records the chosen plan's name.
  mscclppPlanHandle(const mscclpp::plan::SelectRequest& request, std::string chosenName);
  mscclppPlanHandle(const mscclppPlanHandle&) = delete;
  mscclppPlanHandle& operator=(const mscclppPlanHandle&) = delete;

  // The plan loaded for rank; throws Error(InvalidUsage) naming both plans when the registry now
  // chooses another plan (or none) for this request, e.g. after an unregistration. Thread-safe.
  mscclpp::plan::PlanPtr planFor(int rank);

  const std::string name;

 private:
  mscclpp::plan::SelectRequest request_;  // rank -1; tags_ point into tagStorage_
  std::vector<std::string> tagStorage_;
  std::vector<const char*> tags_;
  std::mutex mutex_;
  std::map<int, mscclpp::plan::PlanPtr> loaded_;
};

#endif  // MSCCLPP_CAPI_PLAN_HANDLE_HPP_
