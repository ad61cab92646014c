// The example programs themselves (examples/*.cu as built): ranks as threads of
// one process, and ranks as processes joining one rendezvous, on the CPU
// backend; their exact output and exit status.
#include <catch2/catch.hpp>

#include "example_process.hpp"

#ifndef EXAMPLE_BIN_DIR
#error "EXAMPLE_BIN_DIR must name the build folder of examples/"
#endif

using mscclpp::test::ProcessResult;
using mscclpp::test::runProcesses;

namespace {

std::string exe(const std::string& name) { return std::string(EXAMPLE_BIN_DIR) + "/example_" + name; }

// Runs `name` as nRanks processes; returns them in rank order.
std::vector<ProcessResult> runAsProcesses(const std::string& name, int nRanks, const std::vector<std::string>& extra) {
  std::string root = mscclpp::test::freeLoopbackRoot();
  std::vector<std::vector<std::string>> commands;
  for (int r = 0; r < nRanks; ++r) {
    std::vector<std::string> argv = {exe(name), "--device",        "cpu",    "--nranks", std::to_string(nRanks),
                                     "--rank",  std::to_string(r), "--root", root};
    argv.insert(argv.end(), extra.begin(), extra.end());
    commands.push_back(argv);
  }
  return runProcesses(commands, 120);
}

ProcessResult runAsThreads(const std::string& name, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {exe(name), "--device", "cpu"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return runProcesses({argv}, 120)[0];
}

}  // namespace

TEST_CASE("example programs run with ranks as threads", "[api][examples][programs]") {
  ProcessResult p = runAsThreads("put_signal_wait", {"--iterations", "2"});
  CHECK(p.err == "");
  CHECK(p.exitCode == 0);
  CHECK(p.out ==
        "put_signal_wait: rank 0: put 1024 bytes and signalled rank 1, 2 times over SHM on the CPU backend\n"
        "put_signal_wait: rank 1: waited, then read 1024 correct bytes from rank 0, 2 times over SHM on the CPU "
        "backend\n");

  p = runAsThreads("packets", {});
  CHECK(p.exitCode == 0);
  CHECK(p.out ==
        "packets: rank 0: put 1024 bytes as 2048 bytes of LL16 packets, flags 1..3\n"
        "packets: rank 1: got 1024 correct bytes from LL16 packets, flags 1..3\n");

  p = runAsThreads("overlap", {"--transport", "tcp"});
  CHECK(p.exitCode == 0);
  for (int r = 0; r < 2; ++r) {
    CHECK_THAT(p.out, Catch::Contains("overlap: rank " + std::to_string(r) +
                                      ": putWithSignal of 1024 bytes over TCP overlapped with a 48x48 matrix product; "
                                      "both correct (2 triggers handled by the proxy)\n"));
  }

  p = runAsThreads("alltoall", {});  // 4 ranks by default
  CHECK(p.exitCode == 0);
  std::string expected;
  for (int r = 0; r < 4; ++r) {
    expected += "alltoall: rank " + std::to_string(r) +
                ": all-to-all of 1024 ints per rank pair among 4 ranks (3 blocks, DeviceSyncer) correct\n";
  }
  CHECK(p.out == expected);
}

TEST_CASE("example programs run with ranks as processes", "[api][examples][programs]") {
  SECTION("put_signal_wait: 2 processes, memory channel over SHM") {
    auto ps = runAsProcesses("put_signal_wait", 2, {});
    REQUIRE(ps.size() == 2);
    CHECK(ps[0].exitCode == 0);
    CHECK(ps[1].exitCode == 0);
    CHECK(ps[0].out ==
          "put_signal_wait: rank 0: put 1024 bytes and signalled rank 1, 3 times over SHM on the CPU "
          "backend\n");
    CHECK(ps[1].out ==
          "put_signal_wait: rank 1: waited, then read 1024 correct bytes from rank 0, 3 times over SHM "
          "on the CPU backend\n");
    CHECK(ps[1].err == "");
  }
  SECTION("packets: 2 processes") {
    auto ps = runAsProcesses("packets", 2, {"--iterations", "4"});
    CHECK(ps[0].exitCode == 0);
    CHECK(ps[1].exitCode == 0);
    CHECK(ps[1].out == "packets: rank 1: got 1024 correct bytes from LL16 packets, flags 1..4\n");
  }
  SECTION("overlap: 2 processes, TCP port channels") {
    auto ps = runAsProcesses("overlap", 2, {"--transport", "tcp"});
    for (int r = 0; r < 2; ++r) {
      CHECK(ps[r].exitCode == 0);
      CHECK(ps[r].out == "overlap: rank " + std::to_string(r) +
                             ": putWithSignal of 1024 bytes over TCP overlapped with a 48x48 matrix product; both "
                             "correct (2 triggers handled by the proxy)\n");
    }
  }
  SECTION("alltoall: 4 processes, SHM port channels") {
    auto ps = runAsProcesses("alltoall", 4, {"--transport", "shm"});
    for (int r = 0; r < 4; ++r) {
      CHECK(ps[r].exitCode == 0);
      CHECK(ps[r].out ==
            "alltoall: rank " + std::to_string(r) +
                ": all-to-all of 1024 ints per rank pair among 4 ranks (3 blocks, DeviceSyncer) correct\n");
      CHECK(ps[r].err == "");
    }
  }
}

TEST_CASE("example programs report bad requests by exit status", "[api][examples][programs]") {
  ProcessResult p = runAsThreads("put_signal_wait", {"--nranks", "3"});
  CHECK(p.exitCode == 1);
  CHECK(p.out == "");
  CHECK(p.err == "put_signal_wait: FAILED: put_signal_wait runs on exactly 2 ranks (got 3)\n");

  p = runAsThreads("packets", {"--bogus", "1"});
  CHECK(p.exitCode == 2);
  CHECK_THAT(p.err, Catch::StartsWith("packets: unknown option --bogus\nusage: "));

  p = runAsThreads("alltoall", {"--rank", "0"});
  CHECK(p.exitCode == 2);
  CHECK_THAT(p.err, Catch::StartsWith("alltoall: --rank needs --root HOST:PORT (the rendezvous rank 0 runs)\n"));

  p = runAsThreads("overlap", {"--transport", "carrier-pigeon"});
  CHECK(p.exitCode == 1);
  CHECK(p.err == "overlap: FAILED: --transport: expected auto, shm, tcp, ipc, ib or ib0..ib7, got carrier-pigeon\n");

#if !EXAMPLES_BUILT_WITH_NVCC
  p = runProcesses({{exe("overlap"), "--device", "gpu"}}, 60)[0];
  CHECK(p.exitCode == 77);
  CHECK(p.out == "overlap: SKIP: --device gpu: this program was compiled without nvcc (CPU backend only)\n");
#endif
}
