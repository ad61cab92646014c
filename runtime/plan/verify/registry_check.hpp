// The registry's use of the verifier with MSCCLPP_VERIFY_PLANS=1.
// A plan the verifier cannot prove is refused like one that fails validation.
#ifndef MSCCLPP_PLAN_VERIFY_REGISTRY_CHECK_HPP_
#define MSCCLPP_PLAN_VERIFY_REGISTRY_CHECK_HPP_

#include <string>

namespace mscclpp::plan::verify {

// Does nothing unless MSCCLPP_VERIFY_PLANS is on.
// Else loads the plan in full, from path
// or, when path is empty, from json.
// Throws InvalidPlan naming the first finding when it is not proven.
void checkForRegistry(const std::string& path, const std::string& json, const std::string& source);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_REGISTRY_CHECK_HPP_
