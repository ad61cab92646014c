// The CUDA backend's steady-state call path against the CUDA double
// (docs/cuda-backend.md, "The call path"): a call on a cached context,
// eager or captured into a graph, allocates nothing and makes exactly the
// CUDA calls the page lists and justifies. The double counts the calls of
// the calling thread and leaves its own allocations out of the count.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <map>
#include <string>

#include "cuda_double.h"
#include "executor/call_monitor.hpp"
#include "gpu_harness.hpp"
#include "plan/plan_loader.hpp"
#include "support/allocation_counter.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

constexpr int kCalls = 50;

struct Observed {
  uint64_t allocations = 0;
  std::map<std::string, uint64_t> calls;  // by name, over the kCalls calls
};

// Rank 0's kCalls steady-state calls, eager or captured, with both ranks
// calling (the double runs the kernels, which wait for the peer).
Observed observe(const std::string& planFile, bool inPlace, bool captured) {
  plan::PlanPtr p = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/" + planFile);
  GpuRanks w(2, 1 << 16);
  const uint64_t bytes = 4096;
  Observed seen;
  support::AllocationCounter::excludeWhile(&cudadouble_inside_api);
  std::string err = onRanks(2, [&](int r) {
    cudaStream_t s = w.stream(r);
    void* recv = w.recv(r);
    const void* send = inPlace ? recv : w.send(r);
    auto call = [&] { w.executor(r).execute(r, send, recv, bytes, bytes, DataType::Float32, p, s); };
    // Steady state: the context built, and the call monitor's rings of
    // recent and captured calls turned once (their slots keep their capacity).
    for (uint64_t i = 0; i <= exec::CallMonitor::kRecentCalls; ++i) call();
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    cudaGraph_t g = nullptr;
    if (captured) {
      GPUTEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      // The first call hands the graph its reference to the context.
      for (uint64_t i = 0; i <= exec::CallMonitor::kMaxCaptured; ++i) call();
    }
    if (r == 0) {
      cudadouble_api_tally(nullptr, 1);
      support::AllocationCounter counter(support::AllocationCounter::Scope::ThisThread);
      for (int i = 0; i < kCalls; ++i) call();
      seen.allocations = counter.stop();
      cudadouble_tally t{};
      cudadouble_api_tally(&t, 1);
      for (int i = 0; i < t.names; ++i) seen.calls[t.name[i]] = t.count[i];
    } else {
      for (int i = 0; i < kCalls; ++i) call();
    }
    if (captured) {
      GPUTEST_CUDA(cudaStreamEndCapture(s, &g));
      GPUTEST_CUDA(cudaGraphDestroy(g));
    }
    GPUTEST_CUDA(cudaStreamSynchronize(s));
  });
  support::AllocationCounter::excludeWhile(nullptr);
  REQUIRE(err.empty());
  return seen;
}

// Calls per steady-state call, from calls over kCalls.
std::map<std::string, uint64_t> perCall(std::map<std::string, uint64_t> calls) {
  for (auto& [name, n] : calls) n = n % kCalls == 0 ? n / kCalls : n * 1000;  // a fraction shows as a large count
  return calls;
}

std::string describe(const std::map<std::string, uint64_t>& calls) {
  std::string s = "CUDA calls over " + std::to_string(kCalls) + " calls: ";
  for (const auto& [name, n] : calls) s += name + " " + std::to_string(n) + "; ";
  return s;
}

}  // namespace

TEST_CASE("a steady eager call allocates nothing", "[call-path]") {
  REQUIRE(observe("allreduce_ll_n2_oop.json", false, false).allocations == 0);
}

TEST_CASE("a steady captured call allocates nothing", "[call-path]") {
  REQUIRE(observe("allreduce_ll_n2_oop.json", false, true).allocations == 0);
}

TEST_CASE("a steady eager call makes the six listed CUDA calls", "[call-path]") {
  const Observed o = observe("allreduce_ll_n2_oop.json", false, false);
  INFO(describe(o.calls));
  const std::map<std::string, uint64_t> want = {{"cudaGetDevice", 1},
                                                {"cudaStreamGetCaptureInfo", 1},
                                                {"cuPointerGetAttribute", 2},
                                                {"cudaLaunchCooperativeKernel", 1},
                                                {"cuStreamWriteValue64", 1}};
  REQUIRE(perCall(o.calls) == want);
}

TEST_CASE("an in-place call asks for its buffer's id once", "[call-path]") {
  const Observed o = observe("allreduce_ll_n2_ip.json", true, false);
  INFO(describe(o.calls));
  REQUIRE(perCall(o.calls).at("cuPointerGetAttribute") == 1);
}

TEST_CASE("a steady captured call makes the five listed calls", "[call-path]") {
  const Observed o = observe("allreduce_ll_n2_oop.json", false, true);
  INFO(describe(o.calls));
  const std::map<std::string, uint64_t> want = {{"cudaGetDevice", 1},
                                                {"cudaStreamGetCaptureInfo", 1},
                                                {"cuPointerGetAttribute", 2},
                                                {"cudaLaunchCooperativeKernel", 1}};
  REQUIRE(perCall(o.calls) == want);
}

int main(int argc, char** argv) {
  if (!cudadouble::active()) return 1;
  return mscclpp::test::runCatchSession(argc, argv);
}
