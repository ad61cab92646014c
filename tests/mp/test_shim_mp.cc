// The NCCL call path in real processes. N ranks of shim_mp_worker, an NCCL
// program linked against the shim's replace-mode libnccl.so.2 or run under
// LD_PRELOAD=libmscclpp_nccl.so, rendezvous through our bootstrap and run a
// scenario. Every rank must report "RESULT OK".
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
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

// A fresh folder for the workers' meeting marks and logs ($MSCCLPP_TEST_MARK_DIR), removed at the end.
struct MarkDir {
  std::string path;
  MarkDir() {
    char name[] = "/tmp/mscclpp-shim-mp-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }
  ~MarkDir() { std::filesystem::remove_all(path); }
  std::string env() const { return "MSCCLPP_TEST_MARK_DIR=" + path; }
};

// Prints the lines of each rank's output that contain `what` (the numbers a scenario measured).
void printLines(const std::vector<shimmp::RankResult>& results, const std::string& what) {
  for (const auto& r : results) {
    size_t at = 0;
    while (at < r.output.size()) {
      size_t end = r.output.find('\n', at);
      if (end == std::string::npos) end = r.output.size();
      const std::string line = r.output.substr(at, end - at);
      if (line.find(what) != std::string::npos) std::cout << line << "\n";
      at = end + 1;
    }
  }
}

}  // namespace

TEST_CASE("processes: every call reaches the real NCCL twin exactly", "[mp][fallback]") {
  for (int n : {2, 4, 8}) {
    INFO(n << " ranks");
    requireAllOk(runWorker("fallback", n), n);
  }
}

TEST_CASE("processes: the program under LD_PRELOAD=libmscclpp_nccl.so", "[mp][fallback]") {
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

TEST_CASE("processes: every collective on plans, checked", "[mp][plans]") {
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

TEST_CASE("processes: differing plan sets agree; mismatches fail both", "[mp][agree]") {
  requireAllOk(runWorker("agree", 2, {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS}), 2);
}

// A rank SIGKILLed mid-loop, through the NCCL API with default settings:
// no MSCCLPP_TIMEOUT_S.
TEST_CASE("processes: killing a rank fails the others' calls, naming it", "[mp][kill]") {
  MarkDir marks;
  const int n = 4;
  auto results =
      runWorker("kill", n, {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS, "MSCCLPP_TIMEOUT_S=0", marks.env()});
  printLines(results, "failed after");
  REQUIRE(static_cast<int>(results.size()) == n);
  for (const auto& r : results) {
    INFO("rank " << r.rank << " exited with " << r.exitCode << ":\n" << r.output);
    if (r.rank == n - 1) {
      CHECK(r.output.find("killing myself") != std::string::npos);
    } else {
      CHECK(r.exitCode == 0);
      CHECK(r.output.find("RESULT OK") != std::string::npos);
    }
  }
}

// A rank leaves while the others still call, through the NCCL API with
// default settings: destroyed at 2 to 16 ranks, finalized, or exited.
TEST_CASE("processes: a rank that leaves fails the others, saying so", "[mp][leave]") {
  struct Case {
    const char* how;
    int n;
  };
  for (Case c : {Case{"destroy", 2}, Case{"destroy", 4}, Case{"destroy", 8}, Case{"destroy", 16}, Case{"finalize", 4},
                 Case{"exit", 4}}) {
    INFO(c.how << " at " << c.n << " ranks");
    MarkDir marks;
    auto results = runWorker("leave", c.n,
                             {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS + ":" + SHIM_PLAN16_DIR,
                              "MSCCLPP_TIMEOUT_S=0", std::string("MSCCLPP_TEST_LEAVE=") + c.how, marks.env()});
    printLines(results, "after rank");
    requireAllOk(results, c.n);
  }
}

TEST_CASE("processes: a late rank is waited for quietly, with a WARN", "[mp][slow]") {
  MarkDir marks;
  auto results = runWorker(
      "slow", 2,
      {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS, "MSCCLPP_TIMEOUT_S=0", "MSCCLPP_WAIT_WARN_S=1", marks.env()});
  printLines(results, "waited");
  requireAllOk(results, 2);
}

TEST_CASE("processes: one rank's registry change fails both ranks", "[mp][agree]") {
  // Each rank aborts only once both failed (the mark directory): an abort
  // before the peer heard of the mismatch would look like a death to it.
  MarkDir marks;
  auto results = runWorker("reregister", 2,
                           {std::string("MSCCLPP_PLAN_DIR=") + SHIM_PLAN_DIRS, "MSCCLPP_TIMEOUT_S=0", marks.env()});
  printLines(results, "failed after");
  requireAllOk(results, 2);
}

// Native algorithms (no plans, MSCCLPP_NATIVE_ENABLE=1), as plans above.
TEST_CASE("processes: every collective on native algorithms", "[mp][native]") {
  for (int n : {3, 5}) {
    INFO(n << " ranks");
    requireAllOk(runWorker("native", n, {"MSCCLPP_NATIVE_ENABLE=1"}), n);
  }
}

TEST_CASE("processes: a killed rank fails native kernels' waits", "[mp][native]") {
  MarkDir marks;
  const int n = 3;
  auto results = runWorker("kill", n, {"MSCCLPP_NATIVE_ENABLE=1", "MSCCLPP_TIMEOUT_S=0", marks.env()});
  printLines(results, "failed after");
  REQUIRE(static_cast<int>(results.size()) == n);
  for (const auto& r : results) {
    INFO("rank " << r.rank << " exited with " << r.exitCode << ":\n" << r.output);
    if (r.rank == n - 1) continue;
    CHECK(r.exitCode == 0);
    CHECK(r.output.find("RESULT OK") != std::string::npos);
  }
}

TEST_CASE("processes: a native kernel waits for a late rank, WARNs", "[mp][native]") {
  MarkDir marks;
  auto results =
      runWorker("slow", 2, {"MSCCLPP_NATIVE_ENABLE=1", "MSCCLPP_TIMEOUT_S=0", "MSCCLPP_WAIT_WARN_S=1", marks.env()});
  printLines(results, "waited");
  requireAllOk(results, 2);
}

TEST_CASE("processes: ranks choosing native or not agree on NCCL", "[mp][native]") {
  MarkDir marks;
  requireAllOk(runWorker("nativeagree", 2, {"MSCCLPP_NATIVE_ENABLE=1", marks.env()}), 2);
}

TEST_CASE("processes: one rank's native choice change fails both", "[mp][native]") {
  auto results = runWorker("reregister", 2, {"MSCCLPP_NATIVE_ENABLE=1", "MSCCLPP_TIMEOUT_S=0"});
  printLines(results, "failed after");
  requireAllOk(results, 2);
}
