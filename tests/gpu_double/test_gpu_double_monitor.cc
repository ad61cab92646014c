// The call monitor on the CUDA backend, against the CUDA device double (docs/failure-handling.md,
// "Mismatched calls"): ranks as threads of this process, each with its Communicator and an Executor
// on the CUDA backend. Calls are asynchronous there: a rank whose call hits a cached execution
// context enqueues a kernel and returns, and that kernel waits for a peer that runs another call.
// Without the monitor such a mismatch ends only at the kernel's deadline (MSCCLPP_TIMEOUT_S, 30 s
// here) as a timeout; with it every rank gets InvalidUsage naming both calls within seconds.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "../support/scoped_env.hpp"
#include "cuda_double.h"
#include "gpu_harness.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

struct Outcome {
  bool failed = false;
  ErrorCode code = ErrorCode::InternalError;
  std::string message;
};

// Two ranks, a two-rank allreduce, two call sizes (float32 elements).
struct Job {
  plan::PlanPtr plan = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/allreduce_allpairs_n2_oop.json");
  uint64_t smallBytes = messageSizeFor(*plan, 1), largeBytes = 2 * smallBytes;
  GpuRanks ranks{2, largeBytes};

  void call(int r, uint64_t bytes) {
    ranks.executor(r).execute(r, ranks.send(r), ranks.recv(r), bytes, bytes, DataType::Float32, plan, ranks.stream(r));
  }
  // Both ranks call each size of `sizes` in turn (contexts built collectively) and synchronise.
  void warmUp(const std::vector<uint64_t>& sizes) {
    ThreadBarrier barrier(2);
    const std::string err = onRanks(2, [&](int r) {
      for (uint64_t bytes : sizes) {
        barrier.arriveAndWait(60);
        call(r, bytes);
        GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
      }
    });
    REQUIRE(err == "");
  }
  // Rank r calls bytes[r], waits for its stream, then calls again: the communicator's failure, if
  // any, is the error of one of those (the call itself when it builds a context, else the next).
  std::vector<Outcome> mismatch(const std::vector<uint64_t>& bytes, double* seconds) {
    std::vector<Outcome> out(2);
    const auto start = std::chrono::steady_clock::now();
    const std::string err = onRanks(2, [&](int r) {
      try {
        call(r, bytes[r]);
        GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
        call(r, bytes[r]);
        GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
      } catch (const Error& e) {
        out[r].failed = true;
        out[r].code = e.code();
        out[r].message = e.what();
      }
    });
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE(err == "");
    return out;
  }
};

std::string elements(uint64_t bytes) { return std::to_string(bytes / 4) + " x float32"; }

}  // namespace

TEST_CASE("call monitor: mismatched calls fail on every rank with both calls, not a timeout", "[monitor]") {
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "30");
  Job job;
  REQUIRE(job.smallBytes != 0);
  REQUIRE(job.smallBytes != job.largeBytes);
  double seconds = 0;
  std::vector<Outcome> out;
  std::string number;
  SECTION("a cached context on rank 0, a new one on rank 1") {
    job.warmUp({job.smallBytes});
    out = job.mismatch({job.smallBytes, job.largeBytes}, &seconds);
    number = "#2";
  }
  SECTION("cached contexts on both ranks, for different counts") {
    job.warmUp({job.smallBytes, job.largeBytes});
    out = job.mismatch({job.smallBytes, job.largeBytes}, &seconds);
    number = "#3";
  }
  SECTION("new contexts on both ranks: found by the build's exchange, at once") {
    out = job.mismatch({job.smallBytes, job.largeBytes}, &seconds);
  }
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message);
    CHECK(out[r].failed);
    CHECK(out[r].code == ErrorCode::InvalidUsage);
    const std::string found = number.empty()
                                  ? "mismatched calls: rank " + std::to_string(r) + " called allreduce"
                                  : "mismatched calls: call " + number + " on this communicator is allreduce";
    CHECK_THAT(out[r].message, Catch::Contains(found) && Catch::Contains(elements(job.smallBytes)) &&
                                   Catch::Contains(elements(job.largeBytes)));
  }
  // The monitor looks 2 s into a stuck call; the exchange finds it at once.
  CHECK(seconds < (number.empty() ? 1.5 : 10));
}

int main(int argc, char** argv) {
  if (!cudadouble::active()) return 1;
  return Catch::Session().run(argc, argv);
}
