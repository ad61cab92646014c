// ExecutionPlan and Executor::execute through the installed headers only:
// a user loads a plan file and runs it on its own ranks, as MSCCL++'s
// executor.hpp allows.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "api_test_util.hpp"
#include "mscclpp/executor.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

namespace {
std::string planPath(const char* name) { return std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/" + name; }
}  // namespace

TEST_CASE("ExecutionPlan describes a plan file", "[api][executor]") {
  ExecutionPlan plan(planPath("allreduce_ll_n2_ip.json"));
  CHECK(plan.name() == "allreduce_ll_n2_ip");
  CHECK(plan.collective() == "allreduce");
  CHECK(plan.isInPlace());
  CHECK(plan.minMessageSize() <= plan.maxMessageSize());
  ExecutionPlan outOfPlace(planPath("allreduce_ll_n2_oop.json"));
  CHECK_FALSE(outOfPlace.isInPlace());
  try {
    ExecutionPlan missing(planPath("no_such_plan.json"));
    FAIL("a missing plan file loaded");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::SystemError);  // the file cannot be opened
    CHECK_THAT(e.what(), Catch::Contains("no_such_plan.json"));
  }
  CHECK_THROWS_AS(ExecutionPlan(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/../README.md"), Error);
}

TEST_CASE("Executor::execute runs an ExecutionPlan on two ranks", "[api][executor]") {
  ExecutionPlan plan(planPath("allreduce_ll_n2_oop.json"));
  auto comms = test::makeHostComms(2);
  const size_t count = 1024;
  std::vector<std::vector<float>> out(2, std::vector<float>(count, -1.0f));
  runRanks(2, [&](int r) {
    Executor executor(comms[r]);
    CHECK(executor.backend() == Backend::Cpu);
    std::vector<float> in(count);
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(r + 1) * static_cast<float>(i % 7);
    executor.execute(r, in.data(), out[r].data(), count * sizeof(float), count * sizeof(float), DataType::Float32,
                     plan);
  });
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < count; ++i) {
      INFO("rank " << r << " element " << i);
      REQUIRE(out[r][i] == 3.0f * static_cast<float>(i % 7));
    }
  }
}
