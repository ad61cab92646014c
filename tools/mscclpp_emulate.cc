// mscclpp-emulate PLAN.json --ranks N --size BYTES [--dtype T] [--op O] [--iterations K]
//                 [--processes] [--packet ll16|ll8] [--scalar X] [--seed S] [--timeout SECONDS]
//
// Runs an execution plan on the CPU backend (every rank a thread, or with --processes a forked
// process), checks the outputs against the reference of the plan's collective and prints the
// mismatches (rank, offset, expected, actual) or the error with the wait-for picture of every
// rank. Exit status: 0 passed, 1 mismatch or run-time failure (timeout, deadlock), 2 bad usage
// or a plan that cannot run at this size.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/format.hpp"
#include "executor/emulation/emulator.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

namespace {

const char kUsage[] =
    "usage: mscclpp-emulate PLAN.json --ranks N --size BYTES [--dtype T] [--op O] [--iterations K]\n"
    "                       [--processes] [--packet ll16|ll8] [--scalar X] [--seed S] [--timeout SECONDS]\n"
    "  --size: message size in bytes as plans state it (allgather: output, gather/scatter: per-rank part, else\n"
    "          input); K/M/G suffixes allowed\n"
    "  --dtype: int8 uint8 int32 uint32 int64 uint64 float16 float32 float64 bfloat16 float8e4m3 float8e5m2\n"
    "           (or f32, f16, bf16, ...); default float32\n"
    "  --op: sum prod max min avg premulsum (default sum); --scalar: premulsum's factor (default 2)\n";

bool parseSize(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s) return false;
  uint64_t mult = 1;
  if (*end == 'K' || *end == 'k') mult = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm') mult = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g') mult = 1ull << 30, ++end;
  if (*end == 'i' || *end == 'B') ++end;
  if (*end == 'B') ++end;
  if (*end != '\0' || s[0] == '-') return false;
  *out = v * mult;
  return true;
}

int usageError(const std::string& what) {
  std::fprintf(stderr, "mscclpp-emulate: %s\n%s", what.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mscclpp;
  std::string planPath;
  exec::EmulationOptions opt;
  bool haveRanks = false, haveSize = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--processes") {
      opt.processes = true;
    } else if (a == "--ranks" || a == "--size" || a == "--dtype" || a == "--op" || a == "--iterations" ||
               a == "--packet" || a == "--scalar" || a == "--seed" || a == "--timeout") {
      const char* v = next(a.c_str());
      if (v == nullptr) return usageError(a + " needs a value");
      char* end = nullptr;
      if (a == "--ranks") {
        long n = std::strtol(v, &end, 10);
        if (*end != '\0' || n < 1 || n > 4096) return usageError(strFormat("--ranks %s: expected 1 to 4096", v));
        opt.nRanks = static_cast<int>(n);
        haveRanks = true;
      } else if (a == "--size") {
        if (!parseSize(v, &opt.sizeBytes)) return usageError(strFormat("--size %s: expected a byte count", v));
        haveSize = true;
      } else if (a == "--dtype") {
        if (!dataTypeFromName(v, &opt.dtype)) return usageError(strFormat("--dtype %s: unknown datatype", v));
      } else if (a == "--op") {
        if (!reduceOpFromName(v, &opt.op)) return usageError(strFormat("--op %s: unknown reduce op", v));
      } else if (a == "--iterations") {
        long k = std::strtol(v, &end, 10);
        if (*end != '\0' || k < 1 || k > 1000000) return usageError(strFormat("--iterations %s: expected 1 to 1000000", v));
        opt.iterations = static_cast<int>(k);
      } else if (a == "--packet") {
        if (std::strcmp(v, "ll16") == 0 || std::strcmp(v, "LL16") == 0) opt.packet = PacketType::LL16;
        else if (std::strcmp(v, "ll8") == 0 || std::strcmp(v, "LL8") == 0) opt.packet = PacketType::LL8;
        else return usageError(strFormat("--packet %s: expected ll16 or ll8", v));
      } else if (a == "--scalar") {
        opt.scalar = std::strtod(v, &end);
        if (*end != '\0') return usageError(strFormat("--scalar %s: expected a number", v));
      } else if (a == "--seed") {
        opt.seed = std::strtoull(v, &end, 10);
        if (*end != '\0') return usageError(strFormat("--seed %s: expected an integer", v));
      } else if (a == "--timeout") {
        opt.timeoutSeconds = std::strtod(v, &end);
        if (*end != '\0' || opt.timeoutSeconds <= 0) return usageError(strFormat("--timeout %s: expected seconds > 0", v));
      }
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option " + a);
    } else if (planPath.empty()) {
      planPath = a;
    } else {
      return usageError("more than one plan file given");
    }
  }
  if (planPath.empty()) return usageError("no plan file given");
  if (!haveRanks) return usageError("--ranks is required");
  if (!haveSize) return usageError("--size is required");

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
    std::printf(r.checked ? "PASSED: outputs match the %s reference\n" : "PASSED: completed (no reference for %s plans)\n",
                plan::collectiveName(plan->header.collective));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "mscclpp-emulate: %s\n", e.what());
    return 2;
  }
}
