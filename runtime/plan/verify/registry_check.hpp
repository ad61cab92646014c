// The registry's use of the verifier (MSCCLPP_VERIFY_PLANS=1): a plan the verifier cannot prove is
// refused like a plan that fails validation.
#ifndef MSCCLPP_PLAN_VERIFY_REGISTRY_CHECK_HPP_
#define MSCCLPP_PLAN_VERIFY_REGISTRY_CHECK_HPP_

#include <string>

namespace mscclpp::plan::verify {

// Does nothing unless MSCCLPP_VERIFY_PLANS is on. Then loads the plan in full (the file at path, or
// json when path is empty) and throws Error(InvalidPlan) naming the first finding when it is not proven.
void checkForRegistry(const std::string& path, const std::string& json, const std::string& source);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_REGISTRY_CHECK_HPP_
