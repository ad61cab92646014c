// mscclpp-info: what this build of MSCCL++ is and how it is configured.
//   mscclpp-info            version and build features
//   mscclpp-info --params   every MSCCLPP_* environment parameter: current value, default, doc
#include <cstdio>
#include <cstring>
#include <string>

#include "core/params.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp_config.h"

namespace {

int printParams() {
  int bad = 0;
  for (const auto& p : mscclpp::params::allParams()) {
    const char* raw = mscclpp::params::rawValue(p);
    std::string current = raw ? raw : std::string("(unset, default ") + p.defaultValue + ")";
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
  return bad == 0 ? 0 : 1;
}

void printBuild() {
  std::printf("MSCCL++ %s\n", MSCCLPP_VERSION);
  std::printf("CUDA backend:      %s\n", MSCCLPP_HAVE_CUDA ? "built" : "not built");
  std::printf("IB verbs transport: %s\n", MSCCLPP_HAVE_IBVERBS ? "built" : "not built");
  std::printf("installed plans:   %s\n", MSCCLPP_INSTALL_PLAN_DIR);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--params") == 0) return printParams();
  if (argc == 1) {
    printBuild();
    return 0;
  }
  std::fprintf(stderr, "usage: %s [--params]\n", argv[0]);
  return 2;
}
