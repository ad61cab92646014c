// mscclpp-emulate PLAN.json --ranks N --size BYTES [--dtype T] [--op O] [--iterations K]
//                 [--processes] [--packet ll16|ll8] [--scalar X] [--seed S] [--timeout SECONDS]
//
// Runs an execution plan on the CPU backend, each
// rank a thread, or a process with --processes.
// Checks the outputs against the reference of the
// plan's collective, and prints each mismatch, or the
// error with every rank's wait-for picture. Exits 0
// when it passed, 1 on a mismatch or failure, 2 on
// bad usage or a plan that cannot run at this size.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "executor/emulation/emulator.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"
#include "support/args.hpp"

namespace {

const char kUsage[] =
    "usage: mscclpp-emulate PLAN.json --ranks N --size BYTES [--dtype T] [--op O] [--iterations K]\n"
    "                       [--processes] [--packet ll16|ll8] [--scalar X] [--seed S] [--timeout SECONDS]\n"
    "       mscclpp-emulate --help | --version\n"
    "  --ranks: 1 to 4096\n"
    "  --size: message size in bytes as plans state it (allgather: output, gather/scatter: per-rank part, else\n"
    "          input): a whole number with an optional binary unit K, M, G or T (4K, 1MiB, 2G)\n"
    "  --dtype: int8 uint8 int32 uint32 int64 uint64 float16 float32 float64 bfloat16 float8e4m3 float8e5m2\n"
    "           (or f32, f16, bf16, ...); default float32\n"
    "  --op: sum prod max min avg premulsum (default sum); --scalar: premulsum's factor (default 2)\n"
    "  --iterations: 1 to 1000000 (default 1); --timeout: seconds > 0 (default MSCCLPP_TIMEOUT_S)\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace mscclpp;
  exec::EmulationOptions opt;
  std::vector<std::string> planPaths;
  tools::ArgParser args("mscclpp-emulate", kUsage);
  args.positional(&planPaths, 1, 1, "PLAN.json")
      .integer("--ranks", &opt.nRanks, 1, 4096)
      .size("--size", &opt.sizeBytes)
      .custom("--dtype",
              [&](const std::string& v, std::string* error) {
                *error = "unknown datatype";
                return dataTypeFromName(v.c_str(), &opt.dtype);
              })
      .custom("--op",
              [&](const std::string& v, std::string* error) {
                *error = "unknown reduce op";
                return reduceOpFromName(v.c_str(), &opt.op);
              })
      .integer("--iterations", &opt.iterations, 1, 1000000)
      .flag("--processes", &opt.processes)
      .custom("--packet",
              [&](const std::string& v, std::string* error) {
                *error = "expected ll16 or ll8";
                if (v == "ll16" || v == "LL16")
                  opt.packet = PacketType::LL16;
                else if (v == "ll8" || v == "LL8")
                  opt.packet = PacketType::LL8;
                else
                  return false;
                return true;
              })
      .real("--scalar", &opt.scalar, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max())
      .integer("--seed", &opt.seed)
      .real("--timeout", &opt.timeoutSeconds, 1e-3, 1e9)
      .required("--ranks")
      .required("--size");
  if (int stop = args.parse(argc, argv); stop != tools::ArgParser::kContinue) return stop;
  const std::string& planPath = planPaths[0];

  try {
    plan::PlanPtr plan = plan::loadPlanFile(planPath);
    exec::EmulationResult r = exec::emulatePlan(plan, opt);
    std::printf("plan %s (%s, %s, %d ranks): input %llu B, output %llu B, %s, op %s, %d iteration(s), %s\n",
                plan->header.name.c_str(), plan::collectiveName(plan->header.collective),
                plan->header.protocol == plan::Protocol::LL ? "LL" : "Simple", opt.nRanks,
                static_cast<unsigned long long>(r.inputBytes), static_cast<unsigned long long>(r.outputBytes),
                dataTypeName(opt.dtype), reduceOpName(opt.op), opt.iterations,
                opt.processes ? "ranks as processes" : "ranks as threads");
    if (!r.report.empty()) std::fputs(r.report.c_str(), r.passed ? stdout : stderr);
    std::printf("time: %.3f s total, %.3f ms in launches (slowest rank, all iterations)\n", r.wallSeconds,
                r.launchSeconds * 1e3);
    if (r.failed) {
      std::printf("FAILED: %s\n", errorCodeName(r.errorCode));
      return 1;
    }
    if (r.mismatches > 0) {
      std::printf("FAILED: %llu mismatching elements\n", static_cast<unsigned long long>(r.mismatches));
      return 1;
    }
    std::printf(
        r.checked ? "PASSED: outputs match the %s reference\n" : "PASSED: completed (no reference for %s plans)\n",
        plan::collectiveName(plan->header.collective));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "mscclpp-emulate: %s\n", e.what());
    return 2;
  }
}
