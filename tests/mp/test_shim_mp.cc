// The NCCL call path in real processes: N ranks of shim_mp_worker (an NCCL program linked against libnccl.so.2,
// here the shim's replace-mode copy; or with LD_PRELOAD=libmscclpp_nccl.so) rendezvous through our bootstrap and
// run each scenario; every rank must report "RESULT OK".
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "shim_mp_launch.hpp"

namespace {

std::vector<shimmp::RankResult> runWorker(const std::string& scenario, int nRanks, std::vector<std::string> env = {}) {
  shimmp::LaunchOptions o;
  o.program = SHIM_MP_WORKER;
  o.args = {scenario};
  o.nRanks = nRanks;
  o.env = std::move(env);
  o.timeoutSeconds = 90;
  return shimmp::launchRanks(o);
}

void requireAllOk(const std::vector<shimmp::RankResult>& results, int nRanks) {
  INFO(shimmp::describeFailures(results));
  CHECK(static_cast<int>(results.size()) == nRanks);
  CHECK(shimmp::describeFailures(results).empty());
}

}  // namespace

TEST_CASE("processes: every call reaches the real NCCL's twin with its exact arguments", "[mp][fallback]") {
  for (int n : {2, 4, 8}) {
    INFO(n << " ranks");
    requireAllOk(runWorker("fallback", n), n);
  }
}

TEST_CASE("processes: the same program under LD_PRELOAD=libmscclpp_nccl.so", "[mp][fallback]") {
  requireAllOk(runWorker("fallback", 4, {std::string("LD_PRELOAD=") + SHIM_LIB_PATH}), 4);
}

TEST_CASE("processes: split by color and key, NOCOLOR gets NULL", "[mp][split]") {
  for (int n : {2, 4, 8}) {
    INFO(n << " ranks");
    requireAllOk(runWorker("split", n), n);
  }
}

TEST_CASE("processes: abort returns promptly after a rank vanished", "[mp][abort]") {
  for (int n : {2, 4}) {
    INFO(n << " ranks");
    requireAllOk(runWorker("abort", n), n);
  }
}

TEST_CASE("processes: every collective through plans, checked against a reference", "[mp][plans]") {
  for (int n : {2, 4, 8}) {
    INFO(n << " ranks");
    requireAllOk(runWorker("plans", n, {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS}), n);
  }
}

TEST_CASE("processes: plans under LD_PRELOAD=libmscclpp_nccl.so", "[mp][plans]") {
  requireAllOk(
      runWorker("plans", 2,
                {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS, std::string("LD_PRELOAD=") + SHIM_LIB_PATH}),
      2);
}

TEST_CASE("processes: ranks whose plan sets differ agree on NCCL; mismatched calls fail on both (issue 13)",
          "[mp][agree]") {
  requireAllOk(runWorker("agree", 2, {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS}), 2);
}
