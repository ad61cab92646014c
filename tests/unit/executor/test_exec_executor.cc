// The public Executor on the CPU backend: ranks as threads, wired by the
// emulator's shared world and by a real Communicator (in-process bootstrap,
// host shared memory). User buffers are plain malloc'd memory of each rank.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "../../support/scoped_env.hpp"
#include "core/deadline.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "exec_test_util.hpp"
#include "executor/cpu/context_wiring.hpp"
#include "executor/emulation/local_world_wiring.hpp"
#include "executor/emulation/reference.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
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

TEST_CASE("Executor: out-of-place allreduce on an in-place plan", "[exec][executor]") {
  const int n = 4;
  auto plan = preset("allreduce_ll_n4_ip.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<exec::RuntimeExecutor>(wiring, Backend::Cpu));
  const size_t count = 4096;
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Avg, ReduceOp::PreMulSum}) {
    std::vector<std::vector<float>> out(n, std::vector<float>(count, -1));
    const float scalar = 0.5f;
    std::string err = onRanks(n, [&](int r) {
      std::vector<float> in = values(r, count);
      float* send = static_cast<float*>(std::malloc(count * 4));
      std::copy(in.begin(), in.end(), send);
      ex[r]->execute(r, send, out[r].data(), count * 4, count * 4, DataType::Float32, plan, nullptr, PacketType::LL16,
                     op, &scalar);
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
        float expect = op == ReduceOp::Sum   ? sum
                       : op == ReduceOp::Max ? mx
                       : op == ReduceOp::Avg ? sum * (1.f / n)
                                             : sum * scalar;
        REQUIRE(out[r][i] == expect);
      }
    }
  }
  // One context per rank and op: the call's datatype and op are part of a
  // context's identity, so that ranks calling with different ones never share a
  // context (the call monitor then finds the mismatch).
  for (int r = 0; r < n; ++r) REQUIRE(ex[r]->contextCount() == 4);
}

TEST_CASE("Executor: in-place allgather; reduce with null recv off root", "[exec][executor]") {
  const int n = 4;
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<exec::RuntimeExecutor>(wiring, Backend::Cpu));
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

TEST_CASE("Executor: gather, scatter on every root, null buffers off it", "[exec][executor]") {
  const int n = 4;
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<exec::RuntimeExecutor>(wiring, Backend::Cpu));
  const size_t per = 768;
  for (int root = 0; root < n; ++root) {
    for (bool inPlace : {false, true}) {
      const std::string flavour = std::string(inPlace ? "ip" : "oop") + "_root" + std::to_string(root) + ".json";
      // Gather: the root's output holds every rank's part; the others pass no receive buffer.
      auto gather = preset(("gather_put_n4_" + flavour).c_str());
      std::vector<float> all(per * n, -1);
      REQUIRE(onRanks(n, [&](int r) {
                std::vector<float> mine = values(r, per);
                float* send = mine.data();
                if (r == root && inPlace) {
                  std::copy(mine.begin(), mine.end(), all.begin() + r * per);
                  send = all.data() + r * per;
                }
                ex[r]->execute(r, send, r == root ? all.data() : nullptr, per * 4, per * n * 4, DataType::Float32,
                               gather);
              }) == "");
      for (int k = 0; k < n; ++k) {
        std::vector<float> v = values(k, per);
        for (size_t i = 0; i < per; ++i) REQUIRE(all[k * per + i] == v[i]);
      }
      // Scatter: part r of the root's input reaches rank r; the others pass no
      // send buffer, or (odd ranks) a pointer to fewer bytes than the call
      // names, which NCCL allows and we must not read.
      auto scatter = preset(("scatter_put_n4_" + flavour).c_str());
      std::vector<float> src(per * n);
      for (int k = 0; k < n; ++k) {
        std::vector<float> v = values(k, per, 3);
        std::copy(v.begin(), v.end(), src.begin() + k * per);
      }
      const std::vector<float> original = src;
      std::vector<std::vector<float>> out(n, std::vector<float>(per, -1));
      REQUIRE(onRanks(n, [&](int r) {
                float* recv = r == root && inPlace ? src.data() + r * per : out[r].data();
                std::vector<float> tiny(1);
                const float* send = r == root ? src.data() : r % 2 ? tiny.data() : nullptr;
                ex[r]->execute(r, send, recv, per * n * 4, per * 4, DataType::Float32, scatter);
              }) == "");
      for (int r = 0; r < n; ++r) {
        const float* got = r == root && inPlace ? src.data() + r * per : out[r].data();
        for (size_t i = 0; i < per; ++i) REQUIRE(got[i] == original[r * per + i]);
      }
      REQUIRE(src == original);  // the root's send buffer is only read
    }
  }
  // The root still needs its buffers.
  auto gather = preset("gather_put_n4_oop_root1.json");
  std::vector<float> part(per);
  REQUIRE_THROWS_WITH(ex[1]->execute(1, part.data(), nullptr, per * 4, per * n * 4, DataType::Float32, gather),
                      "Executor::execute: a null receive buffer of 12288 bytes on rank 1");
  auto scatter = preset("scatter_put_n4_oop_root2.json");
  REQUIRE_THROWS_WITH(ex[2]->execute(2, nullptr, part.data(), per * n * 4, per * 4, DataType::Float32, scatter),
                      "Executor::execute: a null send buffer of 12288 bytes on rank 2");
}

TEST_CASE("reference: gather checks the root, scatter every rank", "[exec][executor]") {
  const int n = 3;
  const uint64_t per = 4;  // float32 elements per rank
  std::vector<std::vector<float>> inputs(n);
  std::vector<const char*> inputPtrs(n);
  for (int r = 0; r < n; ++r) {
    inputs[r].resize(per * n);
    for (uint64_t i = 0; i < per * n; ++i) inputs[r][i] = static_cast<float>(100 * r + i);
    inputPtrs[r] = reinterpret_cast<const char*>(inputs[r].data());
  }
  exec::CheckRequest req;
  req.nRanks = n;
  req.dtype = DataType::Float32;
  req.root = 1;
  req.inputs = inputPtrs.data();
  req.maxLines = 4;
  // Gather: root's output = every rank's first `per` elements; other ranks are not checked.
  req.collective = plan::Collective::Gather;
  req.inputBytes = per * 4;
  req.outputBytes = per * n * 4;
  std::vector<float> out(per * n);
  for (int k = 0; k < n; ++k)
    for (uint64_t i = 0; i < per; ++i) out[k * per + i] = inputs[k][i];
  exec::CheckResult res = exec::checkOutput(req, 1, reinterpret_cast<const char*>(out.data()));
  CHECK(res.checked);
  CHECK(res.mismatches == 0);
  out[2 * per + 3] = -5;
  res = exec::checkOutput(req, 1, reinterpret_cast<const char*>(out.data()));
  CHECK(res.mismatches == 1);
  CHECK(res.text == "rank 1 offset 44 (element 11): expected 203, actual -5\n");
  CHECK(exec::checkOutput(req, 0, reinterpret_cast<const char*>(out.data())).mismatches == 0);
  // Scatter: rank r's output = part r of the root's input.
  req.collective = plan::Collective::Scatter;
  req.inputBytes = per * n * 4;
  req.outputBytes = per * 4;
  std::vector<float> part(inputs[1].begin() + 2 * per, inputs[1].begin() + 3 * per);
  CHECK(exec::checkOutput(req, 2, reinterpret_cast<const char*>(part.data())).mismatches == 0);
  res = exec::checkOutput(req, 0, reinterpret_cast<const char*>(part.data()));
  CHECK(res.mismatches == per);
}

TEST_CASE("Executor: refused calls name the reason", "[exec][executor]") {
  auto wiring = std::make_shared<exec::LocalWorldWiring>(4);
  exec::RuntimeExecutor cpu(wiring, Backend::Cpu);
  auto plan = preset("allreduce_ll_n4_ip.json");
  std::vector<float> a(100);
  REQUIRE_THROWS_WITH(cpu.execute(0, a.data(), a.data(), 100 * 4 + 2, 100 * 4 + 2, DataType::Float32, plan),
                      Catch::Contains("cannot serve rank 0"));
  REQUIRE_THROWS_WITH(cpu.execute(0, a.data(), a.data(), 400, 400, DataType::Float32, plan, nullptr, PacketType::LL16,
                                  ReduceOp::PreMulSum, nullptr),
                      Catch::Contains("premulsum needs a scalar"));
  REQUIRE_THROWS_WITH(
      cpu.execute(0, a.data(), a.data(), 400, 400, DataType::Float32, preset("allreduce_ll_n2_ip.json")),
      Catch::Contains("written for 2 ranks; the executor's world has 4"));
  REQUIRE_THROWS_WITH(cpu.execute(0, nullptr, a.data(), 400, 400, DataType::Float32, plan),
                      Catch::Contains("a null send buffer of 400 bytes"));
  exec::RuntimeExecutor cuda(wiring, Backend::Cuda);
  try {
    cuda.execute(0, a.data(), a.data(), 400, 400, DataType::Float32, plan);
    FAIL("the cuda backend ran without contexts");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::NotSupported);
    REQUIRE_THAT(e.what(), Catch::Contains("MSCCLPP_BACKEND=cpu"));
  }
}

TEST_CASE("Executor over a Communicator on host shared memory", "[exec][executor][comm]") {
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
              exec::RuntimeExecutor ex(comms[r]);
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

TEST_CASE("Executor::abort stops a waiting launch and later calls", "[exec][executor][abort]") {
  // Rank 0 runs alone, so its launch waits for rank 1's signals until
  // MSCCLPP_TIMEOUT_S (60 s in the test environment) unless abort() stops it.
  const int n = 2;
  auto plan = preset("allreduce_ll_n2_ip.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  exec::RuntimeExecutor ex(wiring, Backend::Cpu);
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

// The shim asks this before running a group's calls on one thread
// (docs/nccl-shim.md): a call that would build its context must not wait for
// ranks the same thread has not reached yet.
TEST_CASE("Executor: wouldBuildContext reads the context cache", "[exec][executor]") {
  const int n = 2;
  auto plan = preset("allreduce_ll_n2_oop.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> ex;
  for (int r = 0; r < n; ++r) ex.push_back(std::make_unique<exec::RuntimeExecutor>(wiring, Backend::Cpu));
  const size_t count = 1024;
  std::vector<std::vector<float>> in(n), out(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r) in[r] = values(r, count);
  auto would = [&](int r, size_t bytes) {
    return ex[r]->wouldBuildContext(r, in[r].data(), out[r].data(), bytes, bytes, DataType::Float32, plan);
  };
  for (int r = 0; r < n; ++r) REQUIRE(would(r, count * 4));  // no backend yet
  REQUIRE(onRanks(n, [&](int r) {
            ex[r]->execute(r, in[r].data(), out[r].data(), count * 4, count * 4, DataType::Float32, plan);
          }) == "");
  for (int r = 0; r < n; ++r) {
    CHECK_FALSE(would(r, count * 4));  // the call above built it
    CHECK(would(r, count * 2));        // other sizes: another context
  }
  for (int r = 0; r < n; ++r) REQUIRE(ex[r]->contextCount() == 1);  // asking built nothing
}

namespace {

// Two ranks of a Communicator over an in-process bootstrap, each with its
// Executor, and a first call that both make (their contexts exist, so the next
// call goes straight to a launch).
struct TwoRanks {
  std::vector<std::shared_ptr<InProcessBootstrap>> bootstraps;
  std::vector<std::shared_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> executors;
  std::shared_ptr<const plan::Plan> plan = preset("allreduce_ll_n2_ip.json");
  std::vector<std::vector<float>> bufs{values(0, 1024), values(1, 1024)};

  // bootstrapTimeout > 0: each bootstrap gets that timeout (setTimeout) before its communicator is made.
  explicit TwoRanks(double bootstrapTimeout = 0) {
    auto group = InProcessBootstrap::createGroup(2);
    for (int r = 0; r < 2; ++r) {
      bootstraps.push_back(std::make_shared<InProcessBootstrap>(group, r));
      if (bootstrapTimeout > 0) bootstraps.back()->setTimeout(bootstrapTimeout);
    }
    comms.resize(2);
    executors.resize(2);
    REQUIRE(onRanks(2, [&](int r) {
              comms[r] = std::make_shared<Communicator>(bootstraps[r], kHostDevice);
              executors[r] = std::make_unique<exec::RuntimeExecutor>(comms[r]);
              run(r);
            }) == "");
  }
  void run(int r) { executors[r]->execute(r, bufs[r].data(), bufs[r].data(), 4096, 4096, DataType::Float32, plan); }
};

}  // namespace

TEST_CASE("Executor: a failed peer ends waits with RemoteError", "[exec][executor][failure]") {
  TwoRanks job;
  std::string error;
  ErrorCode code = ErrorCode::InternalError;
  auto start = std::chrono::steady_clock::now();
  std::thread rank0([&] {
    try {
      job.run(0);  // rank 1 never calls: no deadline by default, the wait ends with rank 1's failure
    } catch (const Error& e) {
      error = e.what();
      code = e.code();
    }
  });
  Deadline entered(30);
  while (!job.executors[0]->launchInFlight() && !entered.expired()) std::this_thread::yield();
  REQUIRE(job.executors[0]->launchInFlight());
  job.bootstraps[1]->abort();  // in process, the stand-in for rank 1's crash
  rank0.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(error);
  CHECK(code == ErrorCode::RemoteError);
  CHECK_THAT(error, Catch::StartsWith("communicator rank 0/2: rank 1 (host ") &&
                        Catch::Contains("rank 0: launch with flag") && Catch::Contains("[aborted]"));
  CHECK(seconds < 5);
  // The next call fails at once, before any launch.
  CHECK_THROWS_WITH(job.run(0), Catch::StartsWith("communicator rank 0/2: rank 1 (host ") &&
                                    Catch::Contains("plan allreduce_ll_n2_ip rank 0: not run"));
}

TEST_CASE("Executor: a late peer is waited for, with WARNs", "[exec][executor][slow]") {
  test::ScopedEnv warn("MSCCLPP_WAIT_WARN_S", "0.3");
  TwoRanks job;
  std::string error = "none";
  std::thread rank0([&] {
    try {
      job.run(0);
      error.clear();
    } catch (const Error& e) {
      error = e.what();
    }
  });
  // Rank 1 is late: past the call monitor's first two looks (2 and 4 s), which find it idle, not stuck.
  std::this_thread::sleep_for(std::chrono::milliseconds(4600));
  const std::string warning = lastWarning();
  job.run(1);
  rank0.join();
  CHECK(error.empty());
  INFO(warning);
  CHECK_THAT(warning, Catch::Contains("plan allreduce_ll_n2_ip rank 0: launch with flag") &&
                          Catch::Contains("has waited") && Catch::Contains("MSCCLPP_WAIT_WARN_S=0.3") &&
                          Catch::Contains("rank 0 threadblock") && Catch::Contains("waits for LL packet flag") &&
                          Catch::Contains("rank 1 is not in a call"));
  // The values are right: the slow call completed normally.
  CHECK(job.bufs[0][5] == job.bufs[1][5]);
}

namespace {

// Runs body on both ranks and returns each rank's error ("" when it returned normally) and the time taken.
std::vector<std::pair<ErrorCode, std::string>> bothRanks(const std::function<void(int)>& body, double* seconds) {
  std::vector<std::pair<ErrorCode, std::string>> out(2, {ErrorCode::InternalError, ""});
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const Error& e) {
        out[r] = {e.code(), e.what()};
      }
    });
  }
  for (auto& t : threads) t.join();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace

TEST_CASE("Executor: MSCCLPP_TIMEOUT_S bounds waits on live peers", "[exec][executor][slow]") {
  TwoRanks job;  // its first call builds the context without a deadline
  test::ScopedEnv deadline("MSCCLPP_TIMEOUT_S", "1");
  auto start = std::chrono::steady_clock::now();
  std::string error;
  ErrorCode code = ErrorCode::InternalError;
  try {
    job.run(0);  // rank 1 never calls: a live, late peer
  } catch (const Error& e) {
    error = e.what();
    code = e.code();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(error);
  CHECK(code == ErrorCode::Timeout);  // not RemoteError: the peer is alive
  CHECK_THAT(error, Catch::Contains("rank 0 threadblock") && Catch::Contains("rank 1"));
  CHECK(seconds >= 0.9);
  CHECK(seconds < 10);
  ErrorCode failedCode;
  CHECK_FALSE(job.comms[0]->failed(&failedCode));  // a deadline that passed fails this call, not the communicator
}

TEST_CASE("Executor: the communicator's timeout bounds waits on peers", "[exec][executor][slow]") {
  test::ScopedEnv unset("MSCCLPP_TIMEOUT_S", nullptr);  // the default (the suite sets one)
  TwoRanks job(1.0);                                    // the bootstrap's timeout is the communicator's
  CHECK(job.comms[0]->timeoutSeconds() == 1.0);
  auto start = std::chrono::steady_clock::now();
  ErrorCode code = ErrorCode::InternalError;
  std::string error;
  try {
    job.run(0);  // rank 1 never calls
  } catch (const Error& e) {
    error = e.what();
    code = e.code();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(error);
  CHECK(code == ErrorCode::Timeout);
  CHECK_THAT(error, Catch::Contains("(the communicator's timeout: 1 s)"));  // not MSCCLPP_TIMEOUT_S, unset here
  CHECK(seconds >= 0.9);
  CHECK(seconds < 10);
  {
    test::ScopedEnv shorter("MSCCLPP_TIMEOUT_S", "0.5");  // the earlier of the two deadlines applies
    CHECK(job.comms[0]->timeoutSeconds() == 0.5);
  }
  {
    test::ScopedEnv later("MSCCLPP_TIMEOUT_S", "30");
    CHECK(job.comms[0]->timeoutSeconds() == 1.0);
  }
  TwoRanks plain;
  CHECK(plain.comms[0]->timeoutSeconds() == 0);  // the default: no deadline
}

TEST_CASE("Executor: mismatched calls fail every rank, naming both", "[exec][executor][mismatch]") {
  TwoRanks job;
  double seconds = 0;
  SECTION("different counts, new contexts: found at the build") {
    auto errors = bothRanks(
        [&](int r) {
          std::vector<float> b(r == 0 ? 256 : 512, 1.0f);
          job.executors[r]->execute(r, b.data(), b.data(), b.size() * 4, b.size() * 4, DataType::Float32, job.plan);
        },
        &seconds);
    for (int r = 0; r < 2; ++r) {
      INFO(errors[r].second);
      CHECK(errors[r].first == ErrorCode::InvalidUsage);
      CHECK_THAT(errors[r].second, Catch::Contains("mismatched calls") &&
                                       Catch::Contains("allreduce of 256 x float32") &&
                                       Catch::Contains("allreduce of 512 x float32"));
    }
    CHECK(seconds < 2);
  }
  SECTION("different counts, cached contexts: found by the monitor") {
    std::vector<std::vector<float>> small(2, std::vector<float>(256, 1.0f));
    REQUIRE(onRanks(2, [&](int r) {  // both sizes have contexts on both ranks
              job.executors[r]->execute(r, small[r].data(), small[r].data(), 1024, 1024, DataType::Float32, job.plan);
            }) == "");
    auto errors = bothRanks(
        [&](int r) {
          if (r == 0)
            job.executors[0]->execute(0, small[0].data(), small[0].data(), 1024, 1024, DataType::Float32, job.plan);
          else
            job.run(1);  // 4096 bytes
        },
        &seconds);
    for (int r = 0; r < 2; ++r) {
      INFO(errors[r].second);
      CHECK(errors[r].first == ErrorCode::InvalidUsage);
      CHECK_THAT(errors[r].second, Catch::Contains("mismatched calls: call #3 on this communicator is allreduce of") &&
                                       Catch::Contains("256 x float32") && Catch::Contains("1024 x float32"));
    }
    CHECK(seconds < 6);
  }
  SECTION("different datatypes of the same size") {
    auto errors = bothRanks(
        [&](int r) {
          job.executors[r]->execute(r, job.bufs[r].data(), job.bufs[r].data(), 4096, 4096,
                                    r == 0 ? DataType::Float32 : DataType::Int32, job.plan);
        },
        &seconds);
    for (int r = 0; r < 2; ++r) {
      INFO(errors[r].second);
      CHECK(errors[r].first == ErrorCode::InvalidUsage);
      CHECK_THAT(errors[r].second, Catch::Contains("1024 x float32") && Catch::Contains("1024 x int32"));
    }
    CHECK(seconds < 6);
  }
}

TEST_CASE("Executor: a deadlock of live ranks fails with the cycle", "[exec][executor][deadlock]") {
  TwoRanks job;
  std::string planFile, waits[2];
  SECTION("channel waits") {
    planFile = "deadlock_cycle_2.json";
    for (int r = 0; r < 2; ++r)
      waits[r] = strFormat("rank %d threadblock 0 op 0 (wait) waits on memory channel 0 (peer %d)", r, 1 - r);
  }
  // An LL packet wait is released by the rank whose ops write those packets (here the peer's ppkt).
  SECTION("LL packet waits") {
    planFile = "deadlock_packets_2.json";
    for (int r = 0; r < 2; ++r)
      waits[r] = strFormat("rank %d threadblock 0 op 0 (upkt) waits for LL packet flag 1 at byte 0 of its scratch", r);
  }
  plan::PlanPtr cycle = plan::loadPlanFile(std::string(MSCCLPP_TEST_EXEC_DATA) + "/" + planFile);
  double seconds = 0;
  auto errors = bothRanks(
      [&](int r) {
        job.executors[r]->execute(r, job.bufs[r].data(), job.bufs[r].data(), 4096, 4096, DataType::Float32, cycle);
      },
      &seconds);
  for (int r = 0; r < 2; ++r) {
    INFO(errors[r].second);
    CHECK(errors[r].first == ErrorCode::InternalError);
    CHECK_THAT(errors[r].second,
               Catch::Contains("deadlock with every rank alive: ranks 0, 1 wait only on each other") &&
                   Catch::Contains("wait-for cycle rank 0 -> rank 1 -> rank 0") && Catch::Contains(waits[0]) &&
                   Catch::Contains(waits[1]));
  }
  CHECK(seconds < 8);
}
