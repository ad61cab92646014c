// Every datatype x reduce op through the three reduction paths of the
// interpreter: plain data (re/res/rre/rres), LL packets (respkt/repkt with LL16
// and LL8) and switch channels (glres), plus avg and premulsum, checked against
// the emulator's reference.
#include <catch2/catch.hpp>

#include "exec_test_util.hpp"
#include "executor/emulation/emulator.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                         ReduceOp::Min, ReduceOp::Avg,  ReduceOp::PreMulSum};

void emulateAll(const std::string& file, uint64_t size, PacketType packet) {
  plan::PlanPtr plan = plan::loadPlanFile(referencePlanDir() + "/" + file);
  for (DataType t : allDataTypes()) {
    for (ReduceOp op : kOps) {
      exec::EmulationOptions opt;
      opt.sizeBytes = size;
      opt.dtype = t;
      opt.op = op;
      opt.iterations = 2;
      opt.packet = packet;
      opt.timeoutSeconds = 30;
      opt.scalar = 2;
      exec::EmulationResult r = exec::emulatePlan(plan, opt);
      INFO(file << " " << dataTypeName(t) << " " << reduceOpName(op) << "\n" << r.report);
      REQUIRE(r.checked);
      REQUIRE(r.passed);
    }
  }
}

}  // namespace

TEST_CASE("every dtype x op: plain reductions (re, res, rre, rres)", "[exec][reduce]") {
  // 2 ranks, chunk 4096 + 48 bytes: vector tiles and an element tail for every type size.
  emulateAll("mscclpp/committed/executor-tests-reduce.json", 4 * 4144, PacketType::LL16);
}

TEST_CASE("every dtype x op: LL packet reductions with LL16 and LL8", "[exec][reduce][packets]") {
  PacketType pt = GENERATE(PacketType::LL16, PacketType::LL8);
  emulateAll("mscclpp/committed/executor-tests-reduce_pack.json", 4 * 1040, pt);
}

TEST_CASE("every dtype x op: switch-channel reductions (glres)", "[exec][reduce][switch]") {
  emulateAll("mscclpp/committed/executor-tests-reduce_nvls.json", 2 * 2064, PacketType::LL16);
}

TEST_CASE("a plan reducing with an explicit op refuses other call ops", "[exec][reduce]") {
  json p = planJson(
      "maxonly", "allreduce", "Simple", true,
      {gpu(0, 1, 1, 0,
           {threadblock(0, {op("re", {lref("i", 0), lref("i", 0)}, {lref("i", 0)}, {{"reduce_op", "max"}})})})});
  plan::PlanPtr plan = loadPlan(p);
  REQUIRE(plan->header.reduceOps == (1u << static_cast<unsigned>(plan::PlanReduceOp::Max)));
  exec::EmulationOptions opt;
  opt.sizeBytes = 64;
  opt.op = ReduceOp::Max;
  REQUIRE(exec::emulatePlan(plan, opt).passed);
  opt.op = ReduceOp::Sum;
  try {
    exec::emulatePlan(plan, opt);
    FAIL("a max plan ran a sum call");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::NotSupported);
    REQUIRE_THAT(e.what(), Catch::Contains("plan maxonly reduces with max; the call asks for sum"));
  }
}
