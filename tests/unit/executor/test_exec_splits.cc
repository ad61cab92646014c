// Executor::execute with SplitSizes on the CPU backend, through the public
// ExecutionPlan: premulsum's scalar, and its errors.
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "exec_test_util.hpp"
#include "executor/emulation/local_world_wiring.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/errors.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

// Element i of what rank s sends rank d.
float sent(int s, int d, uint64_t i) { return static_cast<float>(s * 100 + d * 10 + static_cast<int>(i % 7)); }

// One call on every rank, each from its own thread; returns each rank's error text ("" when it ran).
std::vector<std::string> onRanks(int n, const std::function<void(int)>& body) {
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace

TEST_CASE("public split execute scales by premulsum's scalar", "[exec][splits]") {
  const int n = 2;
  const ExecutionPlan plan(defaultPlanDir() + "/alltoallv_ll_n2_oop.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<exec::RuntimeExecutor>(wiring, Backend::Cpu));
  const std::vector<uint64_t> counts = {5, 300, 0, 17};  // counts[s * n + d]
  const float scalar = 3.0f;
  std::vector<std::vector<float>> send(n), recv(n, std::vector<float>(400, -1.0f));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      for (uint64_t i = 0; i < counts[s * n + d]; ++i) send[s].push_back(sent(s, d, i));
  SplitSizes splits;
  splits.counts = counts.data();
  const std::vector<std::string> errors = onRanks(n, [&](int r) {
    ex[r]->execute(r, send[r].data(), recv[r].data(), send[r].size() * 4, recv[r].size() * 4, DataType::Float32, plan,
                   splits, nullptr, PacketType::LL16, ReduceOp::PreMulSum, &scalar);
  });
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    CHECK(errors[r] == "");
    uint64_t at = 0;
    for (int s = 0; s < n; ++s)
      for (uint64_t i = 0; i < counts[s * n + r]; ++i, ++at) REQUIRE(recv[r][at] == scalar * sent(s, r, i));
    CHECK(recv[r][at] == -1.0f);
  }
}

TEST_CASE("public split execute: premulsum and scalar go together", "[exec][splits]") {
  const ExecutionPlan plan(defaultPlanDir() + "/alltoallv_ll_n2_oop.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(2);
  exec::RuntimeExecutor ex(wiring, Backend::Cpu);
  const std::vector<uint64_t> counts = {1, 1, 1, 1};
  std::vector<float> buf(4);
  SplitSizes splits;
  splits.counts = counts.data();
  try {
    ex.execute(0, buf.data(), buf.data() + 2, 8, 8, DataType::Float32, plan, splits, nullptr, PacketType::LL16,
               ReduceOp::PreMulSum);
    FAIL("the call ran");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("plan alltoallv_ll_n2_oop rank 0: premulsum needs a scalar"));
  }
  const float scalar = 2.0f;
  try {
    ex.execute(0, buf.data(), buf.data() + 2, 8, 8, DataType::Float32, plan, splits, nullptr, PacketType::LL16,
               ReduceOp::Sum, &scalar);
    FAIL("the call ran");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("a scalar was given with reduce op sum; only premulsum takes one"));
  }
  CHECK(ex.contextCount() == 0);
}
