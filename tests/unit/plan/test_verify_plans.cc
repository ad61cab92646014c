// The verifier on real plans: every default plan (plans/) is proven; every
// collective plan of the MSCCL++ reference corpus is proven except those with a
// defect the verifier names (docs/plan-verifier.md explains each); the corpus's
// unit-test plans get the findings their known problems deserve.
#include <dirent.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "plan/plan_loader.hpp"
#include "plan/verify/verify.hpp"
#include "plan_test_util.hpp"
#include "verify_test_plans.hpp"

using namespace mscclpp::plan;
using verify::FindingKind;

namespace {

std::vector<std::string> jsonFiles(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) files.push_back(dir + "/" + n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

std::string baseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

}  // namespace

TEST_CASE("every default plan is proven", "[verify][plans]") {
  const auto files = jsonFiles(MSCCLPP_TEST_DEFAULT_PLANS);
  REQUIRE(files.size() == 199);  // with sendrecv_put_n2_oop, 16 all-to-all-v and 14 reduce-scatter-v plans
  for (const std::string& file : files) {
    INFO(file);
    PlanPtr plan = loadPlanFile(file);
    const verify::Result r = verify::verifyPlan(*plan);
    INFO(verifytest::text(r));
    CHECK(r.proven);
    CHECK(r.sizesStandForAll);
  }
}

TEST_CASE("reference corpus: each plan is proven or its defect named", "[verify][corpus]") {
  // Defects of plans as MSCCL++'s compiler wrote them (docs/plan-verifier.md, "The reference corpus"):
  const std::map<std::string, std::pair<FindingKind, const char*>> defects = {
      // Threadblock 1 of rank 0 reads a scratch half that only threadblock 0's
      // peer synchronises (docs/executor.md, "Findings on the reference
      // corpus": ThreadSanitizer sees it too).
      {"executor-tests-reduce_tbg.json", {FindingKind::Race, "scratch"}},
      // reuse_resources wraps the scratch, and nothing keeps the copying
      // threadblock from running a whole scratch ahead of the readers; the
      // corpus's committed allreduce_pipeline has that credit.
      {"sn_allreduce_pipeline.json", {FindingKind::Race, "pipeline iteration"}},
      // Unit plans: the ones docs/executor.md lists as never completing, ...
      {"ut_read_put_packet_test.json", {FindingKind::Deadlock, "no op of any rank writes"}},
      {"ut_reduce_copy_packet_test.json", {FindingKind::Deadlock, "no op of any rank writes"}},
      {"ut_reduce_copy_send_packet_test.json", {FindingKind::Deadlock, "no op of any rank writes"}},
      {"ut_reduce_packets_fuse_test.json", {FindingKind::Deadlock, "no op of any rank writes"}},
      {"ut_reduce_packets_test.json", {FindingKind::Deadlock, "no op of any rank writes"}},
      {"ut_reduce_send_packet_test.json", {FindingKind::Deadlock, "no op of any rank writes"}},
      {"ut_relaxed_signal_wait_fuse_test.json", {FindingKind::Deadlock, "can never complete"}},
      {"ut_signal_wait_fuse_test.json", {FindingKind::Deadlock, "can never complete"}},
      // ... and single-op tests that touch peers' buffers with no synchronisation at all.
      {"ut_put_fuse_test.json", {FindingKind::Race, "writes"}},
      {"ut_put_with_signal_test.json", {FindingKind::Race, "proxy"}},
      {"ut_switch_broadcast_test.json", {FindingKind::Race, "host"}},
      {"ut_switch_reduce_test.json", {FindingKind::Race, "host"}},
      {"ut_tbg_reduce_send_test.json", {FindingKind::Race, "host"}},
  };
  size_t proven = 0, collectives = 0;
  for (const std::string& file : plantest::referencePlanFiles()) {
    const std::string name = baseName(file);
    INFO(file);
    PlanPtr plan = loadPlanFile(file);
    verify::Options options;
    options.maxFindings = 64;
    const verify::Result r = verify::verifyPlan(*plan, options);
    const std::string findings = verifytest::text(r);
    INFO(findings);
    collectives += plan->header.collective != Collective::Test;
    auto it = defects.find(name);
    if (it == defects.end()) {
      CHECK(r.proven);
      proven += r.proven && plan->header.collective != Collective::Test;
      continue;
    }
    CHECK_FALSE(r.proven);
    CHECK(verifytest::has(r, it->second.first));
    CHECK(findings.find(it->second.second) != std::string::npos);
  }
  CHECK(collectives == 27);
  CHECK(proven == 25);
}

TEST_CASE("strict model: a relaxed signal does not publish multimem", "[verify][corpus]") {
  // Under the PTX memory model taken strictly, the NVLS plans of the corpus
  // publish the result of their multimem stores to the other ranks only through
  // a relaxed signal before the launch ends.
  for (const char* name :
       {"committed/executor-tests-reduce_nvls.json", "committed/executor-tests-reduce_nvls_pipeline.json",
        "generated/sn_allgather_nvls_zero_copy_8.json", "generated/sn_allreduce_nvls_zero_copy_8.json"}) {
    INFO(name);
    PlanPtr plan = loadPlanFile(plantest::referencePlansDir() + "/mscclpp/" + name);
    CHECK(verify::verifyPlan(*plan).proven);
    verify::Options strict;
    strict.strictKernelBoundaries = true;
    const verify::Result r = verify::verifyPlan(*plan, strict);
    CHECK_FALSE(r.proven);
    CHECK(verifytest::text(r).find("relaxed signal/wait") != std::string::npos);
  }
  // Our own NVLS presets release their result with signal/wait: proven under both models.
  verify::Options strict;
  strict.strictKernelBoundaries = true;
  for (const char* name : {"allreduce_nvls_n8_ip.json", "allreduce_nvls_n8_oop.json"}) {
    PlanPtr plan = loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/" + name);
    CHECK(verify::verifyPlan(*plan, strict).proven);
  }
}
