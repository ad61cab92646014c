// The public Executor on the CPU backend: ranks as threads, wired by the emulator's shared world
// and by a real Communicator (in-process bootstrap, host shared memory). User buffers are plain
// malloc'd memory of each rank.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "core/deadline.hpp"
#include "exec_test_util.hpp"
#include "executor/context_wiring.hpp"
#include "executor/emulation/reference.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/executor.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

// Runs body(rank) on n threads; returns the first error text ("" when none).
std::string onRanks(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::mutex m;
  std::string first;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(m);
        if (first.empty()) first = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return first;
}

plan::PlanPtr preset(const char* name) { return plan::loadPlanFile(defaultPlanDir() + "/" + name); }

std::vector<float> values(int rank, size_t n, float scale = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i % 7) + rank + 1);
  return v;
}

}  // namespace

TEST_CASE("Executor: allreduce out of place on an in-place plan, malloc'd buffers, every op", "[exec][executor]") {
  const int n = 4;
  auto plan = preset("allreduce_ll_n4_ip.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<Executor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<Executor>(wiring, Backend::Cpu));
  const size_t count = 4096;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg, ReduceOp::PreMulSum}) {
    std::vector<std::vector<float>> out(n, std::vector<float>(count, -1));
    const float scalar = 0.5f;
    std::string err = onRanks(n, [&](int r) {
      std::vector<float> in = values(r, count);
      float* send = static_cast<float*>(std::malloc(count * 4));
      std::copy(in.begin(), in.end(), send);
      ex[r]->execute(r, send, out[r].data(), count * 4, count * 4, DataType::Float32, plan, nullptr, PacketType::LL16, op,
                     &scalar);
      for (size_t i = 0; i < count; ++i) {
        if (send[i] != in[i]) throw std::runtime_error("the send buffer of an out-of-place call changed");
      }
      std::free(send);
    });
    REQUIRE(err == "");
    std::vector<std::vector<float>> in(n);
    for (int k = 0; k < n; ++k) in[k] = values(k, count);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        float sum = 0, mx = 0;
        for (int k = 0; k < n; ++k) sum += in[k][i], mx = std::max(mx, in[k][i]);
        float expect = op == ReduceOp::Sum ? sum : op == ReduceOp::Max ? mx : op == ReduceOp::Avg ? sum * (1.f / n) : sum * scalar;
        REQUIRE(out[r][i] == expect);
      }
    }
  }
  // One context per rank served all four calls.
  for (int r = 0; r < n; ++r) REQUIRE(ex[r]->contextCount() == 1);
}

TEST_CASE("Executor: in-place allgather, reduce to a root with null recv elsewhere", "[exec][executor]") {
  const int n = 4;
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<Executor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<Executor>(wiring, Backend::Cpu));
  const size_t per = 2048;
  auto ag = preset("allgather_put_n4_ip.json");
  std::vector<std::vector<float>> buf(n, std::vector<float>(per * n, 0));
  REQUIRE(onRanks(n, [&](int r) {
            std::vector<float> mine = values(r, per);
            std::copy(mine.begin(), mine.end(), buf[r].begin() + r * per);
            ex[r]->execute(r, buf[r].data() + r * per, buf[r].data(), per * 4, per * n * 4, DataType::Float32, ag);
          }) == "");
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < n; ++k) {
      std::vector<float> v = values(k, per);
      for (size_t i = 0; i < per; ++i) REQUIRE(buf[r][k * per + i] == v[i]);
    }

  auto red = preset("reduce_put_n4_oop_root2.json");
  std::vector<float> rootOut(per, -1);
  REQUIRE(onRanks(n, [&](int r) {
            std::vector<float> in = values(r, per);
            ex[r]->execute(r, in.data(), r == 2 ? rootOut.data() : nullptr, per * 4, per * 4, DataType::Float32, red,
                           nullptr, PacketType::LL16, ReduceOp::Min);
          }) == "");
  std::vector<float> v0 = values(0, per);
  for (size_t i = 0; i < per; ++i) REQUIRE(rootOut[i] == v0[i]);
}

TEST_CASE("Executor: refused calls name the reason", "[exec][executor]") {
  auto wiring = std::make_shared<exec::LocalWorldWiring>(4);
  Executor cpu(wiring, Backend::Cpu);
  auto plan = preset("allreduce_ll_n4_ip.json");
  std::vector<float> a(100);
  REQUIRE_THROWS_WITH(cpu.execute(0, a.data(), a.data(), 100 * 4 + 2, 100 * 4 + 2, DataType::Float32, plan),
                      Catch::Contains("cannot serve rank 0"));
  REQUIRE_THROWS_WITH(cpu.execute(0, a.data(), a.data(), 400, 400, DataType::Float32, plan, nullptr, PacketType::LL16,
                                  ReduceOp::PreMulSum, nullptr),
                      Catch::Contains("premulsum needs a scalar"));
  REQUIRE_THROWS_WITH(cpu.execute(0, a.data(), a.data(), 400, 400, DataType::Float32, preset("allreduce_ll_n2_ip.json")),
                      Catch::Contains("written for 2 ranks; the executor's world has 4"));
  REQUIRE_THROWS_WITH(cpu.execute(0, nullptr, a.data(), 400, 400, DataType::Float32, plan),
                      Catch::Contains("a null send buffer of 400 bytes"));
  Executor cuda(wiring, Backend::Cuda);
  try {
    cuda.execute(0, a.data(), a.data(), 400, 400, DataType::Float32, plan);
    FAIL("the cuda backend ran without contexts");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::NotSupported);
    REQUIRE_THAT(e.what(), Catch::Contains("MSCCLPP_BACKEND=cpu"));
  }
}

TEST_CASE("Executor over a Communicator: ranks exchange host shared memory", "[exec][executor][comm]") {
  const int n = 4;
  auto group = InProcessBootstrap::createGroup(n);
  std::vector<std::shared_ptr<Communicator>> comms(n);
  REQUIRE(onRanks(n, [&](int r) {
            comms[r] = std::make_shared<Communicator>(std::make_shared<InProcessBootstrap>(group, r), kHostDevice);
          }) == "");
  const size_t count = 8192;
  for (const char* name : {"allreduce_allpairs_n4_oop.json", "allreduce_rsag_n4_ip.json", "alltoall_put_n4_oop.json"}) {
    auto plan = preset(name);
    const bool a2a = plan->header.collective == plan::Collective::AllToAll;
    std::vector<std::vector<float>> out(n, std::vector<float>(count, -1));
    REQUIRE(onRanks(n, [&](int r) {
              Executor ex(comms[r]);
              if (ex.backend() != Backend::Cpu) throw std::runtime_error("not the CPU backend");
              std::vector<float> in = values(r, count);
              for (int it = 0; it < 3; ++it)
                ex.execute(r, in.data(), out[r].data(), count * 4, count * 4, DataType::Float32, plan);
            }) == "");
    std::vector<std::vector<float>> in(n);
    for (int k = 0; k < n; ++k) in[k] = values(k, count);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        float expect = 0;
        if (a2a) {
          const size_t block = count / n;
          expect = in[i / block][r * block + i % block];
        } else {
          for (int k = 0; k < n; ++k) expect += in[k][i];
        }
        REQUIRE(out[r][i] == expect);
      }
    }
  }
}

TEST_CASE("Executor::abort stops a launch waiting for a peer and refuses later calls", "[exec][executor][abort]") {
  // Rank 0 runs alone, so its launch waits for rank 1's signals until MSCCLPP_TIMEOUT_S (60 s in
  // the test environment) unless abort() stops it.
  const int n = 2;
  auto plan = preset("allreduce_ll_n2_ip.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  Executor ex(wiring, Backend::Cpu);
  std::vector<float> buf = values(0, 1024);
  std::string error;
  ErrorCode code = ErrorCode::InternalError;  // overwritten by the expected Error(Aborted)
  auto start = std::chrono::steady_clock::now();
  std::thread rank0([&] {
    try {
      ex.execute(0, buf.data(), buf.data(), 4096, 4096, DataType::Float32, plan);
    } catch (const Error& e) {
      error = e.what();
      code = e.code();
    }
  });
  Deadline entered(30);
  while (!ex.launchInFlight() && !entered.expired()) std::this_thread::yield();
  REQUIRE(ex.launchInFlight());
  ex.abort();
  rank0.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(code == ErrorCode::Aborted);
  CHECK_THAT(error, Catch::Contains("plan allreduce_ll_n2_ip") && Catch::Contains("rank 0: launch with flag"));
  CHECK(seconds < 20);
  CHECK(ex.aborted());
  CHECK_FALSE(ex.launchInFlight());
  CHECK_THROWS_WITH(ex.execute(0, buf.data(), buf.data(), 4096, 4096, DataType::Float32, plan),
                    Catch::Contains("rank 0: the executor was aborted"));
}
