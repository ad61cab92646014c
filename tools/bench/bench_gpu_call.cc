// Host time of one execute() on the CUDA backend at steady state (a cached
// context), eager and while the stream is captured: per call, the CUDA API
// calls it makes and the allocations. Against the CUDA double
// (docs/cuda-double.md: CUDA_DOUBLE_NULL_KERNELS) the double times its own
// API calls, which are subtracted to give our code's share; on a GPU only
// the total.
//
//   bench_gpu_call [--plan FILE] [--bytes N] [--iters N]
// Exits 0, 1 on an error, or 77 without a device.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_double.h"
#include "executor/call_monitor.hpp"
#include "gpu_harness.hpp"
#include "plan/plan_loader.hpp"
#include "support/allocation_counter.hpp"
#include "support/args.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

using Clock = std::chrono::steady_clock;
double nsSince(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }

// The double's tally, when the double is the libcudart this process loaded.
struct DoubleTally {
  void (*tally)(cudadouble_tally*, int) = nullptr;
  int (*inside)() = nullptr;
  bool present() const { return tally != nullptr && inside != nullptr; }
  static DoubleTally find() {
    DoubleTally d;
    d.tally = reinterpret_cast<void (*)(cudadouble_tally*, int)>(dlsym(RTLD_DEFAULT, "cudadouble_api_tally"));
    d.inside = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "cudadouble_inside_api"));
    return d;
  }
};

struct PathResult {
  double hostNs = 0;   // per call, measured around execute()
  double cudaNs = -1;  // per call, inside the double's API calls (-1: not known)
  double oursNs = -1;  // per call, the rest
  double allocations = 0;
  std::vector<std::pair<std::string, double>> calls;  // per call, by API name
  double callCount = -1;
};

// The double's time outside the window it measures, per API call: the call
// and the clock reads, charged to CUDA, not to us.
double tallyLeakNs(const DoubleTally& d) {
  if (!d.present()) return 0;
  const int n = 20000;
  cudadouble_tally t{};
  d.tally(nullptr, 1);
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) (void)cudaPeekAtLastError();
  const double wall = nsSince(t0);
  d.tally(&t, 1);
  return std::max(0.0, (wall - static_cast<double>(t.ns)) / n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Times `iters` calls of `call` on this thread, in batches of kBatch, and
// counts on this thread too. Each time is the median over the batches: a
// batch the machine preempted stands out instead of moving the mean.
constexpr int kBatch = 500;
PathResult measure(const DoubleTally& d, double leakNs, int iters, const std::function<void()>& call) {
  PathResult r;
  std::vector<double> host, cuda, ours;
  uint64_t allocations = 0, calls = 0;
  std::vector<std::pair<std::string, double>> byName;
  for (int done = 0; done < iters;) {
    const int n = std::min(kBatch, iters - done);
    if (d.present()) d.tally(nullptr, 1);
    support::AllocationCounter counter(support::AllocationCounter::Scope::ThisThread);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) call();
    const double wall = nsSince(t0);
    allocations += counter.stop();
    host.push_back(wall / n);
    if (d.present()) {
      cudadouble_tally t{};
      d.tally(&t, 1);
      const double c = (static_cast<double>(t.ns) + leakNs * static_cast<double>(t.calls)) / n;
      cuda.push_back(c);
      ours.push_back(wall / n - c);
      calls += t.calls;
      if (byName.empty())
        for (int i = 0; i < t.names; ++i) byName.emplace_back(t.name[i], static_cast<double>(t.count[i]) / n);
    }
    done += n;
  }
  r.allocations = static_cast<double>(allocations) / iters;
  r.hostNs = median(host);
  if (d.present()) {
    r.cudaNs = median(cuda);
    r.oursNs = median(ours);
    r.callCount = static_cast<double>(calls) / iters;
    r.calls = byName;
  }
  return r;
}

void printRow(const char* path, const PathResult& r) {
  char cuda[32] = "-", ours[32] = "-", count[32] = "-";
  if (r.cudaNs >= 0) {
    std::snprintf(cuda, sizeof cuda, "%.3f", r.cudaNs / 1e3);
    std::snprintf(ours, sizeof ours, "%.3f", r.oursNs / 1e3);
    std::snprintf(count, sizeof count, "%.2f", r.callCount);
  }
  std::printf("%-9s %13.3f %13s %13s %12.2f %16s\n", path, r.hostNs / 1e3, cuda, ours, r.allocations, count);
}

void printCalls(const char* path, const PathResult& r) {
  if (r.calls.empty()) return;
  std::printf("CUDA calls per %s call:", path);
  for (const auto& [name, n] : r.calls) std::printf(" %s %.2f;", name.c_str(), n);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string planPath = std::string(MSCCLPP_BENCH_PLAN_DIR) + "/allreduce_ll_n2_oop.json";
  int iters = 20000;
  uint64_t bytes = 1024;
  mscclpp::tools::ArgParser args(
      "bench_gpu_call",
      "usage: bench_gpu_call [--plan FILE] [--bytes N] [--iters N]\n"
      "  --plan: default plans/allreduce_ll_n2_oop.json, its ranks as threads on device 0\n"
      "  --bytes: the message (default 1024); --iters: calls per path, 10 to 1000000 (default 20000)\n");
  args.text("--plan", &planPath).integer("--bytes", &bytes, 4, 1 << 30).integer("--iters", &iters, 10, 1000000);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  if (!deviceVisible()) {
    std::printf("bench_gpu_call: no CUDA device is visible: nothing to measure\n");
    return 77;
  }
  try {
    GPUTEST_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop{};
    GPUTEST_CUDA(cudaGetDeviceProperties(&prop, 0));
    plan::PlanPtr p = plan::loadPlanFile(planPath);
    const int n = static_cast<int>(p->ranks.size());
    GpuRanks w(n, std::max<uint64_t>(bytes, 4096));
    const DoubleTally dbl = DoubleTally::find();
    if (dbl.present()) support::AllocationCounter::excludeWhile(dbl.inside);
    const double leakNs = tallyLeakNs(dbl);

    // Rank 0 counts; every rank calls, so the kernels of a GPU complete.
    std::vector<double> eagerNs(n), captureNs(n);
    PathResult eager, capture;
    ThreadBarrier bar(n);
    std::string err = onRanks(n, [&](int r) {
      cudaStream_t s = w.stream(r);
      exec::RuntimeExecutor& ex = w.executor(r);
      auto call = [&] { ex.execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, s); };
      auto timed = [&](PathResult* out) {
        if (r == 0) {
          *out = measure(dbl, leakNs, iters, call);
          return out->hostNs;
        }
        auto t0 = Clock::now();
        for (int i = 0; i < iters; ++i) call();
        return nsSince(t0) / iters;
      };
      // Steady state: the context built, the call monitor's ring of recent calls turned once.
      for (uint64_t i = 0; i <= exec::CallMonitor::kRecentCalls; ++i) call();
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      bar.arriveAndWait();
      eagerNs[r] = timed(&eager);
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      bar.arriveAndWait();

      // Captured calls: the first one of a capture hands the graph its
      // reference to the context; steady once the monitor's ring of captured
      // calls turned once.
      cudaGraph_t g = nullptr;
      GPUTEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (uint64_t i = 0; i <= exec::CallMonitor::kMaxCaptured; ++i) call();
      captureNs[r] = timed(&capture);
      GPUTEST_CUDA(cudaStreamEndCapture(s, &g));
      GPUTEST_CUDA(cudaGraphDestroy(g));
      bar.arriveAndWait();
    });
    if (!err.empty()) throw std::runtime_error(err);

    std::printf("bench_gpu_call on %s: plan %s, %d ranks as threads, %llu bytes, %d calls per path (rank 0 counts)\n",
                prop.name, p->header.name.c_str(), n, static_cast<unsigned long long>(bytes), iters);
    if (dbl.present()) {
      std::printf(
          "CUDA: the double, its API time measured and subtracted (%.0f ns per call outside its window "
          "charged to it)%s; medians of %d-call batches\n",
          leakNs, std::getenv("CUDA_DOUBLE_NULL_KERNELS") ? "; null kernels" : "", kBatch);
    } else {
      std::printf("CUDA: the real runtime; host us/call is our code and CUDA's together; medians of %d-call batches\n",
                  kBatch);
    }
    std::printf("%-9s %13s %13s %13s %12s %16s\n", "path", "host us/call", "CUDA us/call", "ours us/call",
                "allocs/call", "CUDA calls/call");
    printRow("eager", eager);
    printRow("capture", capture);
    printCalls("eager", eager);
    printCalls("captured", capture);
    std::printf("host us/call per rank: eager");
    for (double v : eagerNs) std::printf(" %.3f", v / 1e3);
    std::printf("; captured");
    for (double v : captureNs) std::printf(" %.3f", v / 1e3);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_call: %s\n", e.what());
    return 1;
  }
  return 0;
}
