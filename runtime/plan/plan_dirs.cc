#include "plan/plan_dirs.hpp"

#include <dlfcn.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>

#include "core/params.hpp"
#include "mscclpp_config.h"

namespace mscclpp::plan {

std::vector<std::string> splitDirectoryList(const std::string& list) {
  std::vector<std::string> dirs;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t colon = list.find(':', start);
    const std::string part = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!part.empty()) dirs.push_back(part);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return dirs;
}

std::string installedPlanDirectory() {
  // The folder this library was loaded from, as the loader names it (dladdr of our own code).
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&installedPlanDirectory), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  // Lexically normalized, as Python's os.path.normpath (the package computes the same path).
  const std::filesystem::path library(info.dli_fname);
  return (library.parent_path() / MSCCLPP_PLANS_FROM_LIBDIR).lexically_normal().string();
}

std::string userPlanCacheDirectory() {
  const std::string cache = params::cacheDir();
  if (!cache.empty()) return cache + "/plans";
  // The passwd entry, not $HOME: the Python package does the same (mscclpp/_paths.py).
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(getuid(), &pw, buffer.data(), buffer.size(), &found) != 0 || found == nullptr || !pw.pw_dir) return "";
  return std::string(pw.pw_dir) + "/.cache/mscclpp/plans";
}

PlanDirectories planDirectories() {
  PlanDirectories result;
  result.dirs = splitDirectoryList(params::planDir());
  result.fromEnvironment = !result.dirs.empty();
  if (result.fromEnvironment) return result;
  for (const std::string& dir : {installedPlanDirectory(), userPlanCacheDirectory()}) {
    if (!dir.empty()) result.dirs.push_back(dir);
  }
  return result;
}

}  // namespace mscclpp::plan
