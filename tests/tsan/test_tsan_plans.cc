// Runs under ThreadSanitizer (meson setup -Db_sanitize=thread; see
// docs/executor.md): plans that are correct must run with no race report in the
// plan or in our code (TSAN_OPTIONS makes the first report fail the test), and
// plans with a race must be reported.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "executor/emulation/emulator.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;

namespace {

void emulate(const std::string& path, uint64_t size, DataType dtype, ReduceOp op, PacketType packet, int iterations) {
  exec::EmulationOptions opt;
  opt.sizeBytes = size;
  opt.dtype = dtype;
  opt.op = op;
  opt.packet = packet;
  opt.iterations = iterations;
  opt.timeoutSeconds = 60;
  exec::EmulationResult r = exec::emulatePlan(plan::loadPlanFile(path), opt);
  INFO(path << "\n" << r.report);
  REQUIRE(r.passed);
}

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

}  // namespace

TEST_CASE("race-free plans run clean under ThreadSanitizer", "[tsan]") {
  const std::string ref = MSCCLPP_TEST_REFERENCE_PLANS "/mscclpp/";
  const std::string presets = MSCCLPP_TEST_DEFAULT_PLANS "/";
  // One plan per mechanism: memory-channel signal/wait + rres, LL packets (LL16
  // and LL8), tbg packets, pipelines with semaphores, switch channels,
  // barriers, port channels through the proxy.
  emulate(ref + "committed/allreduce.json", 2 * 4096, DataType::Float32, ReduceOp::Sum, PacketType::LL16, 3);
  emulate(ref + "committed/allreduce_packet.json", 4 * 1040, DataType::BFloat16, ReduceOp::Avg, PacketType::LL8, 3);
  emulate(ref + "committed/executor-tests-reduce_pack_tbg.json", 4 * 1040, DataType::Int32, ReduceOp::Max,
          PacketType::LL16, 3);
  emulate(ref + "committed/allreduce_pipeline.json", 4 * 4096, DataType::Float32, ReduceOp::Sum, PacketType::LL16, 2);
  emulate(ref + "generated/sn_allgather_tbg.json", 4 * 4096, DataType::Float32, ReduceOp::Sum, PacketType::LL16, 2);
  emulate(ref + "generated/sn_allgather_nvls_zero_copy_pkt_8.json", 8 * 1024, DataType::Float32, ReduceOp::Sum,
          PacketType::LL16, 2);
  emulate(ref + "generated/sn_alltoall_ring_8.json", 64 * 1024, DataType::Float32, ReduceOp::Sum, PacketType::LL16, 2);
  emulate(ref + "generated/ut_put_with_signal_and_flush_test.json", 4096, DataType::Float32, ReduceOp::Sum,
          PacketType::LL16, 2);
  emulate(presets + "allreduce_ll_n4_oop.json", 64 * 1024, DataType::Float16, ReduceOp::PreMulSum, PacketType::LL16, 3);
  emulate(presets + "allreduce_rsag_n4_ip.json", 1 << 20, DataType::Float32, ReduceOp::Sum, PacketType::LL16, 2);
}

TEST_CASE("a plan missing a wait is reported as a data race", "[tsan]") {
  // The tool runs the plan in a child process so the expected report cannot fail this one.
  for (const std::string plan :
       {std::string(MSCCLPP_TEST_EXEC_DATA "/race_missing_wait_2.json"),
        std::string(MSCCLPP_TEST_REFERENCE_PLANS "/mscclpp/committed/executor-tests-reduce_tbg.json")}) {
    int status = 0;
    std::string out = run(std::string("TSAN_OPTIONS=halt_on_error=1:exitcode=66 ") + MSCCLPP_EMULATE + " " + plan +
                              " --ranks 2 --size 4288 --iterations 2 --timeout 30",
                          &status);
    INFO(out);
    REQUIRE_THAT(out, Catch::Contains("WARNING: ThreadSanitizer: data race"));
    REQUIRE(WEXITSTATUS(status) == 66);
  }
}
