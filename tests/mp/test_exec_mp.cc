// The CPU backend across real processes: each rank is a forked process with
// its own TcpBootstrap, Communicator, Executor and malloc'd buffers. Contexts
// are wired through host shared memory exchanged over the bootstrap. The test
// is declared in tests/unit/executor/meson.build, suite mp.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../support/scoped_env.hpp"
#include "core/deadline.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;

namespace {

// Forks n ranks running body(rank, bootstrap); returns their exit statuses. A
// rank exits 0 when body returns true; it writes its failure to stderr.
std::vector<int> forkRanks(int n, const std::function<bool(int, std::shared_ptr<Bootstrap>)>& body, double timeout) {
  UniqueId id = TcpBootstrap::createUniqueId();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 1;
      try {
        auto b = std::make_shared<TcpBootstrap>(r, n);
        b->initialize(id, 30);
        code = body(r, b) ? 0 : 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      std::fflush(stderr);
      _exit(code);  // a forked rank must not run the test framework's exit handlers
    }
    pids.push_back(pid);
  }
  std::vector<int> status(n, -1);
  Deadline deadline(timeout);
  int left = n;
  for (unsigned i = 0; left > 0 && !deadline.expired(); ++i) {
    for (int r = 0; r < n; ++r) {
      if (pids[r] > 0 && waitpid(pids[r], &status[r], WNOHANG) == pids[r]) {
        pids[r] = 0;
        --left;
      }
    }
    backoffPause(i);
  }
  for (int r = 0; r < n; ++r) {
    if (pids[r] > 0) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
    }
  }
  return status;
}

float value(int rank, size_t i) { return static_cast<float>((i % 11) + 2 * rank + 1); }

}  // namespace

TEST_CASE("CPU across processes: default plans, malloc'd buffers", "[mp][exec]") {
  const int n = 4;
  const std::string dir = MSCCLPP_TEST_DEFAULT_PLANS;
  auto status = forkRanks(
      n,
      [&](int rank, std::shared_ptr<Bootstrap> b) {
        auto comm = std::make_shared<Communicator>(b, kHostDevice);
        exec::RuntimeExecutor ex(comm);
        const size_t count = 32768;  // 128 KiB per rank
        for (const char* name :
             {"allreduce_ll_n4_ip.json", "allreduce_allpairs_n4_oop.json", "allreduce_rsag_n4_ip.json",
              "reducescatter_put_n4_oop.json", "allgather_ll_n4_oop.json"}) {
          auto plan = plan::loadPlanFile(dir + "/" + name, plan::LoadOptions{rank});
          const auto c = plan->header.collective;
          const size_t inCount = c == plan::Collective::ReduceScatter ? count * n : count;
          const size_t outCount =
              c == plan::Collective::AllGather ? count * n : (c == plan::Collective::ReduceScatter ? count : count);
          float* send = static_cast<float*>(std::malloc(inCount * 4));
          float* recv = static_cast<float*>(std::malloc(outCount * 4));
          for (size_t i = 0; i < inCount; ++i) send[i] = value(rank, i);
          for (int it = 0; it < 3; ++it)
            ex.execute(rank, send, recv, inCount * 4, outCount * 4, DataType::Float32, plan);
          for (size_t i = 0; i < outCount; ++i) {
            float expect = 0;
            if (c == plan::Collective::AllGather) {
              expect = value(static_cast<int>(i / count), i % count);
            } else {
              const size_t at = c == plan::Collective::ReduceScatter ? rank * count + i : i;
              for (int k = 0; k < n; ++k) expect += value(k, at);
            }
            if (recv[i] != expect) {
              std::fprintf(stderr, "rank %d %s element %zu: expected %g, got %g\n", rank, name, i, expect, recv[i]);
              return false;
            }
          }
          std::free(send);
          std::free(recv);
        }
        return true;
      },
      120);
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << " status " << status[r]);
    REQUIRE(WIFEXITED(status[r]));
    REQUIRE(WEXITSTATUS(status[r]) == 0);
  }
}

TEST_CASE("CPU across processes: a deadlock times out, naming the wait", "[mp][exec]") {
  const int n = 2;
  const std::string plan = std::string(MSCCLPP_TEST_EXEC_DATA) + "/deadlock_unsignaled_wait_2.json";
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "1");
  auto status = forkRanks(
      n,
      [&](int rank, std::shared_ptr<Bootstrap> b) {
        auto comm = std::make_shared<Communicator>(b, kHostDevice);
        exec::RuntimeExecutor ex(comm);
        auto p = plan::loadPlanFile(plan);
        std::vector<float> in(1024, 1.f), out(1024);
        // Rank 0 stays until rank 1 timed out: its leaving would fail rank 1 first, saying so.
        const std::string done = "/tmp/mscclpp-exec-mp-deadlock-" + std::to_string(getppid());
        try {
          ex.execute(rank, in.data(), out.data(), 4096, 4096, DataType::Float32, p);
        } catch (const TimeoutError& e) {
          // Rank 1 waits on a channel nobody signals; rank 0 completes.
          const std::string m = e.what();
          std::fclose(std::fopen(done.c_str(), "w"));
          return rank == 1 &&
                 m.find(
                     "rank 1 threadblock 0 op 0 (wait) waits on memory channel 0 (peer 0): signal #1 expected, "
                     "counter at 0") != std::string::npos;
        }
        for (int i = 0; i < 1000 && rank == 0 && access(done.c_str(), F_OK) != 0; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::remove(done.c_str());
        return rank == 0;
      },
      60);
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << " status " << status[r]);
    REQUIRE(WIFEXITED(status[r]));
    REQUIRE(WEXITSTATUS(status[r]) == 0);
  }
}
