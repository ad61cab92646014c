#include "plan/plan_dirs.hpp"

#include <dlfcn.h>
#include <link.h>
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
  // The file this code was loaded from, as dladdr names it.
  // The plan layer lives in libmscclpp.so and, linked statically,
  // in the shim and the tools: each finds the plans from its own folder.
  Dl_info info{};
  link_map* object = nullptr;
  if (dladdr1(reinterpret_cast<const void*>(&installedPlanDirectory), &info, reinterpret_cast<void**>(&object),
              RTLD_DL_LINKMAP) == 0 ||
      info.dli_fname == nullptr || object == nullptr) {
    return "";
  }
  // Made absolute:
  // a library dlopen()ed by a relative path is named by that path.
  std::error_code absoluteError;
  std::filesystem::path file = std::filesystem::absolute(info.dli_fname, absoluteError);
  if (absoluteError) return "";
  const char* fromFolder = MSCCLPP_PLANS_FROM_LIBDIR;
  if (object->l_name == nullptr || object->l_name[0] == '\0') {
    // dladdr names the main program by argv[0], maybe bare;
    // /proc/self/exe is its file.
    std::error_code error;
    file = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error) return "";
    fromFolder = MSCCLPP_PLANS_FROM_BINDIR;
  } else if (file.filename().string().rfind("libnccl.so", 0) == 0) {
    fromFolder = MSCCLPP_PLANS_FROM_NCCL_DIR;
  }
  // Not installed: the build folder knows its source tree.
  const std::string buildRoot = std::string(MSCCLPP_BUILD_ROOT) + "/";
  if (file.string().compare(0, buildRoot.size(), buildRoot) == 0) return MSCCLPP_SOURCE_PLAN_DIR;
  // Normalized as Python's os.path.normpath does,
  // so the package computes the same path.
  return (file.parent_path() / fromFolder).lexically_normal().string();
}

bool isDefaultPlanDirectory(const std::string& dir) {
  for (const std::string& defaults : {installedPlanDirectory(), std::string(MSCCLPP_SOURCE_PLAN_DIR)}) {
    std::error_code error;
    if (!defaults.empty() && std::filesystem::equivalent(dir, defaults, error)) return true;
  }
  return false;
}

std::string userPlanCacheDirectory() {
  const std::string cache = params::cacheDir();
  if (!cache.empty()) return cache + "/plans";
  // The passwd entry, not $HOME, as mscclpp/_paths.py does.
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
