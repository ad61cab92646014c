// mscclpp-plan verify: loads every rank of each plan
// and runs the verifier; prints the verdict and the
// findings. Exits 0 only when every plan is proven.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/plan/commands.hpp"
#include "plan/plan_loader.hpp"
#include "plan/verify/verify.hpp"
#include "support/args.hpp"

namespace {

namespace mpv = mscclpp::plan::verify;

const char* const kVerifyUsage =
    "usage: mscclpp-plan verify [--max-findings N] [--reuse-scratch-bytes B] [--strict-kernel-boundaries] [--stats]\n"
    "                           FILE...\n"
    "  proves each plan race-free, deadlock-free, with no leftover counts and a correct result for every message\n"
    "  size it accepts, or lists the findings (docs/plan-verifier.md). B is a size (128M); it is the executor's\n"
    "  MSCCLPP_REUSE_SCRATCH_BYTES, where reuse_resources plans wrap their scratch (default 128 MiB).\n"
    "  --strict-kernel-boundaries: a write another rank reads after a launch ends must be released to it with\n"
    "  signal/wait (the PTX memory model taken strictly), not only ordered before the end.\n"
    "exit status: 0 every plan proven, 1 a plan not proven or not loaded, 2 usage error\n";

}  // namespace

int verifyCommand(int argc, char** argv, int first) {
  mpv::Options options;
  bool stats = false;
  std::vector<std::string> files;
  mscclpp::tools::ArgParser args("mscclpp-plan verify", kVerifyUsage);
  args.integer("--max-findings", &options.maxFindings, 1, 100000)
      .size("--reuse-scratch-bytes", &options.reuseScratchBytes, 1)
      .flag("--strict-kernel-boundaries", &options.strictKernelBoundaries)
      .flag("--stats", &stats)
      .positional(&files, 1, SIZE_MAX, "FILE");
  if (int stop = args.parse(argc, argv, first); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  int failed = 0;
  for (const std::string& file : files) {
    mscclpp::plan::PlanPtr plan;
    try {
      plan = mscclpp::plan::loadPlanFile(file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ++failed;
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const mpv::Result r = mpv::verifyPlan(*plan, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fputs(mpv::formatResult(*plan, r).c_str(), stdout);
    if (stats) {
      std::printf("  stats: %.3f s, %zu chunk size(s), largest model %llu events, %llu accesses\n", seconds,
                  r.chunkSizes.size(), static_cast<unsigned long long>(r.events),
                  static_cast<unsigned long long>(r.accesses));
    }
    if (!r.proven) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
