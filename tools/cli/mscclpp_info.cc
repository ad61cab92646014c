// mscclpp-info: what this build of MSCCL++ is and how it is configured.
//   mscclpp-info            version and build features
//   mscclpp-info --params   every MSCCLPP_* environment parameter: current value, default, doc
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "core/log_config.hpp"
#include "core/params.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp_config.h"
#include "plan/plan_dirs.hpp"
#include "support/args.hpp"

namespace {

const char kUsage[] =
    "usage: mscclpp-info [--params]\n"
    "       mscclpp-info --help | --version\n"
    "  without options: the version and the features of this build\n"
    "  --params: every MSCCLPP_* environment parameter with its current value, default and doc (exit 1 when a\n"
    "            value set in the environment is invalid)\n";

int printParams() {
  int bad = 0;
  for (const auto& p : mscclpp::params::allParams()) {
    const char* raw = mscclpp::params::rawValue(p);
    std::string current = raw ? raw : std::string("(unset, default ") + p.defaultValue + ")";
    if (raw && std::strcmp(p.typeName, "secret") == 0) current = "(set; not shown)";
    std::string problem;
    try {
      mscclpp::params::checkValue(p);
    } catch (const mscclpp::Error& e) {
      problem = e.what();
      ++bad;
    }
    std::printf("%-40s = %s\n    type %s; default '%s'; declared by %s\n    %s\n", p.envName, current.c_str(),
                p.typeName, p.defaultValue, p.owner, p.doc);
    if (!problem.empty()) std::printf("    ERROR: %s\n", problem.c_str());
  }
  // The logging variables are checked together:
  // an unset MSCCLPP_DEBUG defers to NCCL_DEBUG.
  try {
    mscclpp::logConfigFromEnvironment();
  } catch (const mscclpp::Error& e) {
    std::printf("ERROR: %s\n", e.what());
    ++bad;
  }
  return bad == 0 ? 0 : 1;
}

void printBuild() {
  std::printf("MSCCL++ %s\n", MSCCLPP_VERSION);
  std::printf("CUDA backend:      %s\n", MSCCLPP_HAVE_CUDA ? "built" : "not built");
  std::printf("IB verbs transport: %s\n", MSCCLPP_HAVE_IBVERBS ? "built" : "not built");
  // The registry's directories, by the rule the Python package shares.
  const mscclpp::plan::PlanDirectories dirs = mscclpp::plan::planDirectories();
  for (const std::string& dir : dirs.dirs) {
    struct stat st {};
    std::printf("plan directory:    %s%s%s\n", dir.c_str(), dirs.fromEnvironment ? " (MSCCLPP_PLAN_DIR)" : "",
                ::stat(dir.c_str(), &st) == 0 ? "" : " (absent)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool params = false;
  mscclpp::tools::ArgParser args("mscclpp-info", kUsage);
  args.flag("--params", &params);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  if (params) return printParams();
  printBuild();
  return 0;
}
