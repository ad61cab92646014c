// Where the registry finds plans and where python3 -m mscclpp --install writes them.
//   1. MSCCLPP_PLAN_DIR, when set: exactly its colon-separated directories.
//   2. Else the installed default plans, found relative to the library
//      (from a build folder: the source tree's plans), then the user's plan cache.
// mscclpp/_paths.py implements the same rule from the same Meson constant;
// a test in tests/python/integration checks they agree (docs/plan-core.md).
#ifndef MSCCLPP_PLAN_PLAN_DIRS_HPP_
#define MSCCLPP_PLAN_PLAN_DIRS_HPP_

#include <string>
#include <vector>

namespace mscclpp::plan {

struct PlanDirectories {
  std::vector<std::string> dirs;
  bool fromEnvironment = false;  // MSCCLPP_PLAN_DIR named them: a missing one warns
};

PlanDirectories planDirectories();

// The default plans installed with this library,
// or "" when its path is unknown.
// A tool that links the plan layer statically
// finds those installed with the tool.
// A library or tool run from its build folder finds the source tree's plans.
std::string installedPlanDirectory();

// Whether dir holds the installed default plans: it is installedPlanDirectory()
// or the source tree's plans. Their plans rank after the user's.
bool isDefaultPlanDirectory(const std::string& dir);

// The user's plan cache;
// "" without MSCCLPP_CACHE_DIR and a home directory.
std::string userPlanCacheDirectory();

// A colon-separated list, empty parts dropped.
std::vector<std::string> splitDirectoryList(const std::string& list);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_DIRS_HPP_
