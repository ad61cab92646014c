// ExecutionPlan (mscclpp/executor.hpp): a loaded plan behind the public API.
#include "executor/executor_internal.hpp"
#include "plan/plan_loader.hpp"

namespace mscclpp {

ExecutionPlan::ExecutionPlan(const std::string& planPath)
    : impl_(std::make_shared<const Impl>(Impl{plan::loadPlanFile(planPath)})) {}

std::string ExecutionPlan::name() const { return impl_->plan->header.name; }
std::string ExecutionPlan::collective() const { return plan::collectiveName(impl_->plan->header.collective); }
size_t ExecutionPlan::minMessageSize() const { return static_cast<size_t>(impl_->plan->header.minMessageSize); }
size_t ExecutionPlan::maxMessageSize() const { return static_cast<size_t>(impl_->plan->header.maxMessageSize); }
bool ExecutionPlan::isInPlace() const { return impl_->plan->header.inPlace; }

}  // namespace mscclpp
