#include "plan/verify/registry_check.hpp"

#include <algorithm>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "plan/plan_loader.hpp"
#include "plan/verify/verify.hpp"

namespace mscclpp::plan::verify {

void checkForRegistry(const std::string& path, const std::string& json, const std::string& source) {
  if (!params::verifyPlans()) return;
  PlanPtr plan = path.empty() ? loadPlanJson(json, source) : loadPlanFile(path);
  Options options;
  // The executor's scratch limit decides where
  // reuse_resources plans wrap their scratch.
  options.reuseScratchBytes = static_cast<uint64_t>(std::max<int64_t>(0, params::reuseScratchBytes()));
  options.maxFindings = 4;
  const Result r = verifyPlan(*plan, options);
  if (r.proven) {
    MSCCLPP_INFO(LogPlan, "%s: proven by the plan verifier (MSCCLPP_VERIFY_PLANS=1)", source.c_str());
    return;
  }
  std::string more;
  if (r.findings.size() > 1)
    more = strFormat(" (and %zu more finding(s): mscclpp-plan verify lists them)", r.findings.size() - 1);
  MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: not proven by the plan verifier (MSCCLPP_VERIFY_PLANS=1): %s%s",
                source.c_str(), r.findings.empty() ? "no finding" : formatFinding(r.findings[0]).c_str(), more.c_str());
}

}  // namespace mscclpp::plan::verify
