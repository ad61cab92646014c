// All-to-all-v through the NCCL API in real processes: shim_alltoallv_worker,
// a C program linked against the shim's replace-mode libnccl.so.2, issues
// grouped ncclSend/ncclRecv with random uneven counts (zeros left out, as
// PyTorch does) and ncclAlltoAll, on the alltoallv plans alone.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "shim_mp_launch.hpp"

namespace {

// A plan folder holding only the all-to-all-v plans for n ranks.
struct PlanDir {
  std::string path;
  explicit PlanDir(int n) {
    char name[] = "/tmp/mscclpp-a2av-plans-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
    for (const char* kind : {"ll", "direct"}) {
      const std::string file = "alltoallv_" + std::string(kind) + "_n" + std::to_string(n) + "_oop.json";
      std::filesystem::copy_file(std::string(SHIM_DEFAULT_PLANS) + "/" + file, path + "/" + file);
    }
  }
  ~PlanDir() { std::filesystem::remove_all(path); }
};

std::vector<shimmp::RankResult> run(const std::string& scenario, int n, const PlanDir& plans) {
  shimmp::LaunchOptions o;
  o.program = SHIM_ALLTOALLV_WORKER;
  o.args = {scenario};
  o.nRanks = n;
  o.env = {"MSCCLPP_PLAN_DIR=" + plans.path, "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=COLL"};
  o.timeoutSeconds = 60;
  return shimmp::launchRanks(o);
}

bool everyRankSays(const std::vector<shimmp::RankResult>& results, const std::string& text) {
  for (const auto& r : results)
    if (r.output.find(text) == std::string::npos) return false;
  return !results.empty();
}

}  // namespace

TEST_CASE("C program: grouped send/recv all-to-all-v runs on plans", "[mp][alltoallv]") {
  for (int n : {2, 4, 8}) {
    INFO(n << " ranks");
    PlanDir plans(n);
    const auto results = run("splits", n, plans);
    INFO(shimmp::describeFailures(results));
    REQUIRE(shimmp::describeFailures(results).empty());
    const std::string suffix = "_n" + std::to_string(n) + "_oop ran";
    CHECK(everyRankSays(results, "plan alltoallv_ll" + suffix + ": alltoallv of"));
    CHECK(everyRankSays(results, "plan alltoallv_direct" + suffix + ": alltoallv of"));
    CHECK(everyRankSays(results, "plan alltoallv_ll" + suffix + ": alltoall,"));
  }
}

TEST_CASE("C program: a receive count mismatch fails every rank", "[mp][alltoallv]") {
  PlanDir plans(4);
  const auto results = run("mismatch", 4, plans);
  INFO(shimmp::describeFailures(results));
  CHECK(shimmp::describeFailures(results).empty());
}

TEST_CASE("C program: a ring of sends and receives goes to NCCL", "[mp][alltoallv]") {
  PlanDir plans(4);
  const auto results = run("ring", 4, plans);
  INFO(shimmp::describeFailures(results));
  CHECK(shimmp::describeFailures(results).empty());
  CHECK(everyRankSays(results,
                      "NCCL ran because grouped sends and receives: no rank has sends or receives with every "
                      "other rank"));
}
