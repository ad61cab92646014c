// The plan-directory rule: where the registry finds plans, and where `python3 -m mscclpp --install`
// writes them. The Python package implements the same rule (mscclpp/_paths.py) with the same
// constant (MSCCLPP_PLANS_FROM_LIBDIR, written by Meson for both); tests/python/integration checks
// that the two agree. docs/plan-core.md states it:
//   1. MSCCLPP_PLAN_DIR set: exactly its colon-separated directories, in order;
//   2. otherwise the installed default plans (<folder of libmscclpp>/MSCCLPP_PLANS_FROM_LIBDIR:
//      relocatable, so a pip-installed wheel finds its own), then the user's plan cache:
//      $MSCCLPP_CACHE_DIR/plans, else ~/.cache/mscclpp/plans with ~ the passwd entry's home.
#ifndef MSCCLPP_PLAN_PLAN_DIRS_HPP_
#define MSCCLPP_PLAN_PLAN_DIRS_HPP_

#include <string>
#include <vector>

namespace mscclpp::plan {

struct PlanDirectories {
  std::vector<std::string> dirs;
  bool fromEnvironment = false;  // MSCCLPP_PLAN_DIR named them (a missing one is then worth a warning)
};

PlanDirectories planDirectories();

// The default plans installed with this library ("" when the library's own path is unknown); in a tool that
// links the plan layer statically, those installed with the tool (MSCCLPP_PLANS_FROM_BINDIR).
std::string installedPlanDirectory();

// The user's plan cache ("" when there is no MSCCLPP_CACHE_DIR and no home directory).
std::string userPlanCacheDirectory();

// A colon-separated list, empty parts dropped.
std::vector<std::string> splitDirectoryList(const std::string& list);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_DIRS_HPP_
