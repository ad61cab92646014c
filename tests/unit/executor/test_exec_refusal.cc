// A call the executor declines is a value, decided before ranks exchange
// anything: RuntimeExecutor::tryExecute returns the refusal, or nullopt when the
// call ran, and Executor::execute throws the same text as NotSupported. Each
// check returns its reason; its throwing form gives the same message. Bad
// arguments stay exceptions on both paths.
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "exec_test_util.hpp"
#include "executor/context_image.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/cuda/launch_config.hpp"
#include "executor/emulation/local_world_wiring.hpp"
#include "executor/executor_internal.hpp"
#include "executor/scale_steps.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

plan::PlanPtr preset(const char* name) { return plan::loadPlanFile(defaultPlanDir() + "/" + name); }

// A copy of `plan` whose reduce ops are `mask` (bits of plan::PlanReduceOp).
plan::PlanPtr withReduceOps(const plan::PlanPtr& plan, uint32_t mask) {
  auto copy = std::make_shared<plan::Plan>(*plan);
  copy->header.reduceOps = mask;
  return copy;
}

uint32_t bit(plan::PlanReduceOp op) { return 1u << static_cast<unsigned>(op); }

// The message of the Error(NotSupported) that `f` throws ("" when it throws nothing or another code).
std::string notSupportedOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::NotSupported) return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("refusing checks return the text their throwing forms throw", "[exec][refusal]") {
  auto plan = preset("allreduce_ll_n4_ip.json");

  SECTION("the plan's reduce op") {
    CHECK_FALSE(exec::planOpRefusal(plan->header, ReduceOp::Max).has_value());  // a sum plan serves every op
    auto maxPlan = withReduceOps(plan, bit(plan::PlanReduceOp::Max));
    CHECK_FALSE(exec::planOpRefusal(maxPlan->header, ReduceOp::Max).has_value());
    exec::Refusal r = exec::planOpRefusal(maxPlan->header, ReduceOp::Sum);
    REQUIRE(r.has_value());
    CHECK_THAT(*r, Catch::Contains("reduces with max; the call asks for sum"));
    CHECK(notSupportedOf([&] { exec::checkPlanServesOp(maxPlan->header, ReduceOp::Sum); }) == *r);
    auto mixed = withReduceOps(plan, bit(plan::PlanReduceOp::Max) | bit(plan::PlanReduceOp::Min));
    r = exec::planOpRefusal(mixed->header, ReduceOp::Max);
    REQUIRE(r.has_value());
    CHECK_THAT(*r, Catch::Contains("mixes several reduce ops"));
    CHECK(notSupportedOf([&] { exec::checkPlanServesOp(mixed->header, ReduceOp::Max); }) == *r);
  }
  SECTION("the call's sizes") {
    exec::CallShape shape;
    CHECK_FALSE(exec::tryShapeCall(*plan, 0, 400, 400, DataType::Float32, &shape).has_value());
    CHECK(shape.chunkBytes > 0);
    exec::Refusal r = exec::tryShapeCall(*plan, 0, 402, 402, DataType::Float32, &shape);
    REQUIRE(r.has_value());
    CHECK_THAT(*r, Catch::Contains("cannot serve rank 0 with 402 input and 402 output bytes"));
    CHECK(notSupportedOf([&] { exec::shapeCall(*plan, 0, 402, 402, DataType::Float32); }) == *r);
    // A rank outside the plan is a bad argument, not a refusal.
    CHECK_THROWS_MATCHES(
        exec::tryShapeCall(*plan, 9, 400, 400, DataType::Float32, &shape), Error,
        Catch::Predicate<Error>([](const Error& e) { return e.code() == ErrorCode::InvalidArgument; }));
  }
  SECTION("the CUDA backend's threads per block") {
    exec::GpuDeviceLimits dev;
    dev.device = 0;
    dev.name = "test GPU";
    dev.maxThreadsPerBlock = 1024;
    exec::GpuKernelLimits kernel{512, 0};
    CHECK_FALSE(exec::threadsPerBlockRefusal(plan->header, 0, 512, dev, kernel).has_value());
    exec::Refusal r = exec::threadsPerBlockRefusal(plan->header, 1, 768, dev, kernel);
    REQUIRE(r.has_value());
    CHECK_THAT(*r, Catch::Contains("num_threads_per_block 768 exceeds 512"));
    CHECK(notSupportedOf([&] { exec::checkThreadsPerBlock(plan->header, 1, 768, dev, kernel); }) == *r);
  }
  SECTION("the CUDA backend's datatypes") {
    // This build's GPU code (none in a CPU-only build): a type without it is refused, never thrown.
    for (DataType t : {DataType::Float32, DataType::Int8}) {
      exec::Refusal r = exec::gpuDtypeRefusal(t);
      CHECK(r.has_value() == !exec::gpuHasDtype(t));
      if (r) CHECK_FALSE(r->empty());
    }
  }
}

TEST_CASE("tryExecute returns refusals; execute throws NotSupported", "[exec][refusal]") {
  const int n = 4;
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  auto plan = preset("allreduce_ll_n4_ip.json");
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<exec::RuntimeExecutor>(wiring, Backend::Cpu));
  std::vector<std::vector<float>> buf(n, std::vector<float>(100, 1.0f));

  // Each refusal: returned without an exception, the same text execute()
  // throws, and nothing built (no rank started the collective build: the
  // refusing rank returns alone, no peer needed).
  auto expectRefusal = [&](const plan::PlanPtr& p, size_t bytes, ReduceOp op, const char* reason) {
    std::optional<std::string> r;
    REQUIRE_NOTHROW(r = ex[0]->tryExecute(0, buf[0].data(), buf[0].data(), bytes, bytes, DataType::Float32, p, nullptr,
                                          PacketType::LL16, op));
    REQUIRE(r.has_value());
    CHECK_THAT(*r, Catch::Contains(reason));
    CHECK(notSupportedOf([&] {
            ex[0]->execute(0, buf[0].data(), buf[0].data(), bytes, bytes, DataType::Float32, p, nullptr,
                           PacketType::LL16, op);
          }) == *r);
    CHECK(ex[0]->contextCount() == 0);
  };
  expectRefusal(plan, 402, ReduceOp::Sum, "cannot serve rank 0 with 402 input and 402 output bytes");
  expectRefusal(withReduceOps(plan, bit(plan::PlanReduceOp::Max)), 400, ReduceOp::Sum,
                "reduces with max; the call asks for sum");

  // A bad argument is an exception on both paths.
  CHECK_THROWS_MATCHES(ex[0]->tryExecute(0, nullptr, buf[0].data(), 400, 400, DataType::Float32, plan), Error,
                       Catch::Predicate<Error>([](const Error& e) { return e.code() == ErrorCode::InvalidArgument; }));

  // The CUDA backend on a wiring without a communicator (and in builds without CUDA): refused, not thrown.
  exec::RuntimeExecutor cuda(wiring, Backend::Cuda);
  std::optional<std::string> r;
  REQUIRE_NOTHROW(r = cuda.tryExecute(0, buf[0].data(), buf[0].data(), 400, 400, DataType::Float32, plan));
  REQUIRE(r.has_value());
  CHECK_THAT(*r, Catch::Contains("MSCCLPP_BACKEND=cpu"));
  // A variable-size plan is refused alike.
  std::vector<uint64_t> counts(n * n, 10);
  SplitSizes splits;
  splits.counts = counts.data();
  REQUIRE_NOTHROW(r = cuda.tryExecuteVariable(0, buf[0].data(), buf[1].data(), 400, 400, DataType::Float32,
                                              preset("alltoallv_direct_n4_oop.json"), splits));
  REQUIRE(r.has_value());
  CHECK_THAT(*r, Catch::Contains("MSCCLPP_BACKEND=cpu"));

  // After the refusals every rank runs the call the plan serves: nullopt, the sum in every buffer.
  std::vector<std::thread> threads;
  std::vector<std::string> outcome(n);
  for (int q = 0; q < n; ++q) {
    threads.emplace_back([&, q] {
      try {
        std::optional<std::string> refused =
            ex[q]->tryExecute(q, buf[q].data(), buf[q].data(), 400, 400, DataType::Float32, plan);
        outcome[q] = refused ? "refused: " + *refused : "ran";
      } catch (const std::exception& e) {
        outcome[q] = std::string("threw: ") + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int q = 0; q < n; ++q) {
    CHECK(outcome[q] == "ran");
    CHECK(buf[q][0] == static_cast<float>(n));
    CHECK(ex[q]->contextCount() == 1);
  }
}
