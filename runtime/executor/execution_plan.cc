// ExecutionPlan (mscclpp/executor.hpp): a loaded plan behind the public API.
#include "mscclpp/executor.hpp"
#include "plan/plan.hpp"
#include "plan/plan_loader.hpp"

namespace mscclpp {

ExecutionPlan::ExecutionPlan(const std::string& planPath) : plan_(plan::loadPlanFile(planPath)) {}

std::string ExecutionPlan::name() const { return plan_->header.name; }
std::string ExecutionPlan::collective() const { return plan::collectiveName(plan_->header.collective); }
size_t ExecutionPlan::minMessageSize() const { return static_cast<size_t>(plan_->header.minMessageSize); }
size_t ExecutionPlan::maxMessageSize() const { return static_cast<size_t>(plan_->header.maxMessageSize); }
bool ExecutionPlan::isInPlace() const { return plan_->header.inPlace; }

}  // namespace mscclpp
