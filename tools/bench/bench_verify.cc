// Benchmark and mutation table of the plan verifier; the numbers are
// in docs/plan-verifier.md. bench_verify.py generates its plans.
//
//   bench_verify [--repeat N] PLAN...
//       verifies every rank of each plan N times; prints the best and
//       median time, the verdict and the model size.
//   bench_verify --mutations [--kind K]... [--every N] [--show-missed M] PLAN...
//       verifies every mutant of each kind, or every N-th, of each plan
//       that verifies; prints per kind how many were caught, and up to M
//       of the mutants missed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/plan/plan_mutations.hpp"
#include "plan/plan_loader.hpp"
#include "plan/verify/verify.hpp"
#include "support/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace mpv = mscclpp::plan::verify;
namespace mut = mscclpp::plan::mutate;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int timing(const std::vector<std::string>& files, int repeat) {
  std::printf("%-44s %6s %10s %10s %10s %9s %10s  %s\n", "plan", "ranks", "load s", "verify s", "median s", "events",
              "accesses", "verdict");
  int failed = 0;
  for (const std::string& f : files) {
    const auto t0 = Clock::now();
    mscclpp::plan::PlanPtr plan = mscclpp::plan::loadPlanFile(f);
    const double load = since(t0);
    std::vector<double> times;
    mpv::Result r;
    for (int i = 0; i < repeat; ++i) {
      const auto t1 = Clock::now();
      r = mpv::verifyPlan(*plan);
      times.push_back(since(t1));
    }
    std::sort(times.begin(), times.end());
    std::printf("%-44s %6d %10.3f %10.3f %10.3f %9llu %10llu  %s\n", plan->header.name.c_str(), plan->header.worldSize,
                load, times.front(), times[times.size() / 2], static_cast<unsigned long long>(r.events),
                static_cast<unsigned long long>(r.accesses), r.proven ? "proven" : "NOT proven");
    failed += r.proven ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}

int mutations(const std::vector<std::string>& files, std::vector<mut::Kind> kinds, size_t every, size_t showMissed) {
  if (kinds.empty()) kinds.assign(std::begin(mut::kAllKinds), std::end(mut::kAllKinds));
  struct Row {
    size_t mutants = 0, caught = 0;
    std::map<std::string, size_t> byFinding;  // the kind of the first finding
    std::map<std::string, size_t> harmless;   // why the mutants not caught change nothing
    std::vector<std::string> missed;
  };
  std::map<int, Row> rows;
  size_t plansUsed = 0;
  mpv::Options options;
  options.maxFindings = 1;
  const auto t0 = Clock::now();
  for (const std::string& f : files) {
    mscclpp::plan::PlanPtr plan = mscclpp::plan::loadPlanFile(f);
    if (!mpv::verifyPlan(*plan).proven) {
      std::printf("skipped %s: the plan itself is not proven\n", f.c_str());
      continue;
    }
    ++plansUsed;
    for (mut::Kind kind : kinds) {
      const std::vector<mut::Mutation> all = mut::list(*plan, kind);
      Row& row = rows[static_cast<int>(kind)];
      for (size_t i = 0; i < all.size(); i += every) {
        const mscclpp::plan::Plan mutant = mut::apply(*plan, all[i]);
        const mpv::Result r = mpv::verifyPlan(mutant, options);
        ++row.mutants;
        if (!r.proven) {
          ++row.caught;
          ++row.byFinding[r.findings.empty() ? "?" : mpv::findingKindName(r.findings[0].kind)];
        } else {
          const std::string why = kind == mut::Kind::DropNop ? mut::harmlessNop(*plan, all[i]) : std::string();
          ++row.harmless[why.empty() ? "no known reason" : why];
          if (why.empty() && row.missed.size() < showMissed)
            row.missed.push_back(plan->header.name + ": " + all[i].text);
        }
      }
    }
  }
  std::printf("%zu plan(s), %.1f s\n%-12s %8s %8s %8s  %s\n", plansUsed, since(t0), "mutation", "mutants", "caught",
              "missed", "first finding of the caught ones");
  for (auto& [k, row] : rows) {
    std::string by;
    for (const auto& [name, n] : row.byFinding) by += (by.empty() ? "" : ", ") + name + " " + std::to_string(n);
    std::printf("%-12s %8zu %8zu %8zu  %s\n", mut::kindName(static_cast<mut::Kind>(k)), row.mutants, row.caught,
                row.mutants - row.caught, by.c_str());
  }
  for (auto& [k, row] : rows)
    for (const auto& [why, n] : row.harmless)
      std::printf("  %s not caught: %zu: %s\n", mut::kindName(static_cast<mut::Kind>(k)), n, why.c_str());
  for (auto& [k, row] : rows)
    for (const std::string& m : row.missed)
      std::printf("  not caught (%s): %s\n", mut::kindName(static_cast<mut::Kind>(k)), m.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool mutate = false;
  int repeat = 3;
  size_t every = 1, showMissed = 20;
  std::vector<std::string> kindNames, files;
  mscclpp::tools::ArgParser args(
      "bench_verify",
      "usage: bench_verify [--repeat N] PLAN...\n"
      "       bench_verify --mutations [--kind K]... [--every N] [--show-missed M] PLAN...\n"
      "  --repeat: verifications per plan, 1 to 1000 (default 3); --mutations: the mutation table instead;\n"
      "  K: drop-wait, drop-signal, drop-pair, early-op, shift-chunk or drop-nop (default all); --every: every\n"
      "  N-th mutant (default 1); --show-missed: mutants listed that are not caught (default 20)\n");
  args.integer("--repeat", &repeat, 1, 1000)
      .flag("--mutations", &mutate)
      .texts("--kind", &kindNames)
      .integer("--every", &every, 1, 1000000)
      .integer("--show-missed", &showMissed, 0, 1000000)
      .positional(&files, 1, SIZE_MAX, "PLAN");
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  std::vector<mut::Kind> kinds;
  for (const std::string& name : kindNames) {
    bool found = false;
    for (mut::Kind k : mut::kAllKinds)
      if (name == mut::kindName(k)) kinds.push_back(k), found = true;
    if (!found) return args.usageError("--kind '" + name + "': not a mutation kind");
  }
  try {
    return mutate ? mutations(files, kinds, every, showMissed) : timing(files, repeat);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_verify: %s\n", e.what());
    return 1;
  }
}
