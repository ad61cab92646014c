// Mutation tests of the verifier (tools/cli/plan/plan_mutations.hpp): every
// default plan for 2 and 4 ranks broken by a dropped wait, a dropped signal, a
// dropped signal/wait pair, an op moved before its wait or a chunk index
// shifted is caught; a dropped nop is caught unless it changes nothing (a
// reason is given), which bench_verify --mutations tabulates for all plans.
#include <dirent.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "cli/plan/plan_mutations.hpp"
#include "plan/plan_loader.hpp"
#include "plan/verify/verify.hpp"

using namespace mscclpp::plan;

namespace {

std::vector<std::string> smallDefaultPlans() {
  std::vector<std::string> files;
  const std::string dir = MSCCLPP_TEST_DEFAULT_PLANS;
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0 &&
        (n.find("_n2_") != std::string::npos || n.find("_n4_ip") != std::string::npos ||
         n.find("2node") != std::string::npos))
      files.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("mutants of the default plans are caught", "[verify][mutations]") {
  const auto files = smallDefaultPlans();
  REQUIRE(files.size() > 40);
  verify::Options options;
  options.maxFindings = 1;
  size_t mutants = 0, harmless = 0;
  for (const std::string& file : files) {
    PlanPtr plan = loadPlanFile(file);
    REQUIRE(verify::verifyPlan(*plan).proven);
    for (mutate::Kind kind : mutate::kAllKinds) {
      for (const mutate::Mutation& m : mutate::list(*plan, kind)) {
        const Plan mutant = mutate::apply(*plan, m);
        const verify::Result r = verify::verifyPlan(mutant, options);
        ++mutants;
        if (!r.proven) continue;
        INFO(plan->header.name << ": " << mutate::kindName(kind) << ": " << m.text);
        // A variable-size LL plan's handshake keeps launches apart when a zero
        // count removes a pair's packets; the model, every count nonzero, has
        // the packets order them instead.
        const auto& ops = plan->ranks[m.rank].threadblocks[m.tb].ops;
        // The wait itself, the one an op moves before, or the one a nop follows.
        const uint32_t wait = kind == mutate::Kind::EarlyOp               ? m.target
                              : kind == mutate::Kind::DropNop && m.op > 0 ? m.op - 1
                                                                          : m.op;
        const bool variableHandshake =
            plan->header.variableSizes && plan->header.protocol == Protocol::LL &&
            (kind == mutate::Kind::DropPair || kind == mutate::Kind::EarlyOp || kind == mutate::Kind::DropNop) &&
            ops[wait].type == OpType::RelaxedWait;
        if (variableHandshake) {
          ++harmless;
          continue;
        }
        REQUIRE(kind == mutate::Kind::DropNop);
        // The root of an out-of-place gather signals its peers, then copies its
        // own part: nothing the peers do touches the bytes of that copy, so the
        // nop between them orders nothing.
        const bool gatherRootCopy =
            plan->header.collective == Collective::Gather && !plan->header.inPlace && m.rank == plan->header.root;
        CHECK((!mutate::harmlessNop(*plan, m).empty() || gatherRootCopy));
        ++harmless;
      }
    }
  }
  CHECK(mutants > 3000);
  CHECK(harmless < mutants / 5);
}
