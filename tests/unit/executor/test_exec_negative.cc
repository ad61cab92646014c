// Plans that are wrong, and the errors that say so: a missing wait (wrong
// result), a wait nobody signals and a wait cycle (diagnosed deadlock within a
// short deadline, message checked), a corrupted packet flag, and calls a plan
// cannot serve.
#include <catch2/catch.hpp>

#include "core/format.hpp"
#include "exec_test_util.hpp"
#include "executor/emulation/emulator.hpp"
#include "mscclpp/packet_device.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

exec::EmulationResult emulate(const std::string& file, int iterations = 2, double timeout = 1, bool processes = false) {
  exec::EmulationOptions opt;
  opt.sizeBytes = 4096;
  opt.iterations = iterations;
  opt.timeoutSeconds = timeout;
  opt.processes = processes;
  return exec::emulatePlan(loadDataPlan(file), opt);
}

}  // namespace

TEST_CASE("reading before the data arrives is a wrong result", "[exec][negative]") {
  exec::EmulationResult r = emulate("allreduce_wrong_order_2.json");
  REQUIRE_FALSE(r.failed);
  REQUIRE_FALSE(r.passed);
  REQUIRE(r.mismatches > 0);
  REQUIRE_THAT(r.report, Catch::Contains("iteration 0:") && Catch::Contains("mismatching elements on rank 1") &&
                             Catch::Contains("rank 1 offset 0 (element 0): expected"));
}

TEST_CASE("a wait nobody signals is a deadlock within the deadline", "[exec][negative]") {
  bool processes = GENERATE(false, true);
  auto t0 = std::chrono::steady_clock::now();
  exec::EmulationResult r = emulate("deadlock_unsignaled_wait_2.json", 1, 0.5, processes);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.report);
  REQUIRE(s < 10);
  REQUIRE(r.failed);
  REQUIRE(r.errorCode == ErrorCode::Timeout);
  REQUIRE_THAT(r.report, Catch::Contains("rank 1 failed in iteration 0: plan deadlock_unsignaled_wait_2"));
  REQUIRE_THAT(r.report,
               Catch::Contains("rank 1 threadblock 0 op 0 (wait) waits on memory channel 0 (peer 0): signal #1 "
                               "expected, counter at 0; no op of rank 0 signals its paired channel 0, so this wait "
                               "can never complete [timed out] (first to time out)"));
  REQUIRE_THAT(r.report, Catch::Contains("rank 0: all 1 threadblocks finished"));
  REQUIRE_THAT(r.report, Catch::Contains("(the emulator's timeout: 0.5 s)"));  // its option, not the variable
}

TEST_CASE("a wait cycle shows every rank in the wait-for picture", "[exec][negative]") {
  exec::EmulationResult r = emulate("deadlock_cycle_2.json", 1, 0.5);
  INFO(r.report);
  REQUIRE(r.failed);
  REQUIRE(r.errorCode == ErrorCode::Timeout);
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE_THAT(r.report,
                 Catch::Contains(strFormat("rank %d threadblock 0 op 0 (wait) waits on memory channel 0 (peer %d)",
                                           rank, 1 - rank)));
  }
  REQUIRE_THAT(r.report, Catch::Contains("(first to time out)"));
}

TEST_CASE("a corrupted packet flag stops the reader, naming it", "[exec][negative][packets]") {
  json p = planJson("unpack", "custom", "LL", false,
                    {gpu(0, 1, 1, 1, {threadblock(0, {op("upkt", {lref("s", 0)}, {lref("o", 0)})})})});
  ThreadRun run(loadPlan(p), 1024, 1024);
  // Write the packets the launch expects (flag 1) ourselves, then corrupt one half of packet 5.
  LL16Packet* pkts = run.scratch<LL16Packet>(0);
  for (int i = 0; i < 128; ++i) pkts[i].write(static_cast<uint64_t>(i) * 3, 1);
  pkts[5].halves[1] = packHalf(0, 0xBAD);
  std::string err = run.launch(DataType::Float32, ReduceOp::Sum, PacketType::LL16, 0.3);
  REQUIRE_THAT(err, Catch::Contains("rank 0 threadblock 0 op 0 (upkt) waits for LL packet flag 1 at byte 80 of its "
                                    "scratch (src_buff[0] = s chunk 0): flag 2989 is there"));
  REQUIRE_THAT(err, Catch::Contains("[timed out]"));
  // The packets before the corrupted one were unpacked.
  for (int i = 0; i < 5; ++i) REQUIRE(run.output<uint64_t>(0)[i] == static_cast<uint64_t>(i) * 3);
  // The context is dead after a failure.
  REQUIRE_THAT(run.launch(), Catch::Contains("failed in an earlier launch"));
}

TEST_CASE("calls a plan cannot serve are refused with the reason", "[exec][negative]") {
  plan::PlanPtr plan = loadDataPlan("deadlock_cycle_2.json");
  exec::EmulationOptions opt;
  opt.sizeBytes = 4100;  // not a multiple of the 16-byte alignment
  try {
    exec::emulatePlan(plan, opt);
    FAIL("an unaligned size ran");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::NotSupported);
    REQUIRE_THAT(e.what(), Catch::Contains("plan deadlock_cycle_2") && Catch::Contains("cannot serve rank 0"));
  }
  opt.sizeBytes = 4096;
  opt.nRanks = 4;
  REQUIRE_THROWS_WITH(exec::emulatePlan(plan, opt), Catch::Contains("written for 2 ranks, not 4"));
}
