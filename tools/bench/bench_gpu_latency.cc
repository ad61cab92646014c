// Latency of an 8-rank LL allreduce on ONE GPU, ranks as
// threads each on its own stream, at 1 KiB to 256 KiB.
// The target is no higher than the real NCCL's 1-rank
// allreduce on the same GPU. Also the host cost of a call
// on the plan path, and per call of a CUDA graph replay.
//
//   bench_gpu_latency [--nccl /path/libnccl.so.2] [--plan FILE] [--iters N]
// Without --nccl, the NCCL column reads "-". Exits 0, 1 on an error,
// or 77 without a device.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_harness.hpp"
#include "plan/plan_loader.hpp"
#include "support/args.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The few NCCL entry points the comparison needs, with NCCL's
// ABI in plain C types: ncclUniqueId is 128 bytes, ncclComm_t
// a pointer, ncclFloat32 is 7, ncclSum and ncclSuccess are 0.
struct NcclUniqueId {
  char internal[128];
};
struct Nccl {
  void* lib = nullptr;
  int (*getUniqueId)(NcclUniqueId*) = nullptr;
  int (*commInitRank)(void**, int, NcclUniqueId, int) = nullptr;
  int (*allReduce)(const void*, void*, size_t, int, int, void*, cudaStream_t) = nullptr;
  int (*commDestroy)(void*) = nullptr;
  bool load(const std::string& path, std::string* why) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *why = dlerror();
      return false;
    }
    getUniqueId = reinterpret_cast<decltype(getUniqueId)>(dlsym(lib, "ncclGetUniqueId"));
    commInitRank = reinterpret_cast<decltype(commInitRank)>(dlsym(lib, "ncclCommInitRank"));
    allReduce = reinterpret_cast<decltype(allReduce)>(dlsym(lib, "ncclAllReduce"));
    commDestroy = reinterpret_cast<decltype(commDestroy)>(dlsym(lib, "ncclCommDestroy"));
    if (!getUniqueId || !commInitRank || !allReduce || !commDestroy) {
      *why = "missing NCCL symbols";
      return false;
    }
    return true;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Sample {
  double streamUs = 0;     // per call, back-to-back on each rank's stream (slowest rank)
  double graphUs = 0;      // per call, replayed from a graph
  double hostUs = 0;       // host time inside execute(), per call (median rank)
  double graphHostUs = 0;  // host time of cudaGraphLaunch per call
};

Sample measure(GpuRanks& w, const plan::PlanPtr& p, uint64_t bytes, int iters, int perGraph) {
  const int n = w.size();
  Sample out;
  std::vector<double> stream(n), graph(n), host(n), graphHost(n);
  ThreadBarrier bar(n);
  std::string err = onRanks(n, [&](int r) {
    cudaStream_t s = w.stream(r);
    exec::RuntimeExecutor& ex = w.executor(r);
    auto call = [&] { ex.execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, s); };
    for (int i = 0; i < 10; ++i) call();  // warm-up: context build, first launches
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    bar.arriveAndWait();
    double inside = 0;
    auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
      auto c0 = Clock::now();
      call();
      inside += since(c0);
    }
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    stream[r] = since(t0) / iters * 1e6;
    host[r] = inside / iters * 1e6;
    bar.arriveAndWait();

    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    GPUTEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < perGraph; ++i) call();
    GPUTEST_CUDA(cudaStreamEndCapture(s, &g));
    GPUTEST_CUDA(cudaGraphInstantiate(&ge, g, 0));
    GPUTEST_CUDA(cudaGraphLaunch(ge, s));  // warm-up replay
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    bar.arriveAndWait();
    const int replays = std::max(1, iters / perGraph);
    double launchHost = 0;
    t0 = Clock::now();
    for (int i = 0; i < replays; ++i) {
      auto c0 = Clock::now();
      GPUTEST_CUDA(cudaGraphLaunch(ge, s));
      launchHost += since(c0);
    }
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    graph[r] = since(t0) / (replays * perGraph) * 1e6;
    graphHost[r] = launchHost / (replays * perGraph) * 1e6;
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    bar.arriveAndWait();
  });
  if (!err.empty()) throw std::runtime_error(err);
  out.streamUs = *std::max_element(stream.begin(), stream.end());
  out.graphUs = *std::max_element(graph.begin(), graph.end());
  out.hostUs = median(host);
  out.graphHostUs = median(graphHost);
  return out;
}

double ncclLatencyUs(Nccl& nccl, void* comm, char* send, char* recv, uint64_t bytes, cudaStream_t s, int iters) {
  for (int i = 0; i < 10; ++i) nccl.allReduce(send, recv, bytes / 4, 7, 0, comm, s);
  GPUTEST_CUDA(cudaStreamSynchronize(s));
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) {
    if (nccl.allReduce(send, recv, bytes / 4, 7, 0, comm, s) != 0) throw std::runtime_error("ncclAllReduce failed");
  }
  GPUTEST_CUDA(cudaStreamSynchronize(s));
  return since(t0) / iters * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ncclPath, planPath = std::string(MSCCLPP_BENCH_PLAN_DIR) + "/allreduce_ll_n8_oop.json";
  int iters = 500;
  mscclpp::tools::ArgParser args(
      "bench_gpu_latency",
      "usage: bench_gpu_latency [--nccl /path/libnccl.so.2] [--plan FILE] [--iters N]\n"
      "  --nccl: the real NCCL to compare with (without it that column reads \"-\")\n"
      "  --plan: default plans/allreduce_ll_n8_oop.json; --iters: 1 to 1000000 (default 500)\n");
  args.text("--nccl", &ncclPath).text("--plan", &planPath).integer("--iters", &iters, 1, 1000000);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  if (!deviceVisible()) {
    std::printf("bench_gpu_latency: no CUDA device is visible: nothing to measure\n");
    return 77;
  }
  try {
    GPUTEST_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop{};
    GPUTEST_CUDA(cudaGetDeviceProperties(&prop, 0));
    plan::PlanPtr p = plan::loadPlanFile(planPath);
    const int n = static_cast<int>(p->ranks.size());
    GpuRanks w(n, 256 * 1024);

    Nccl nccl;
    void* comm = nullptr;
    std::string why = "no --nccl given";
    bool haveNccl = !ncclPath.empty() && nccl.load(ncclPath, &why);
    if (haveNccl) {
      NcclUniqueId id{};
      if (nccl.getUniqueId(&id) != 0 || nccl.commInitRank(&comm, 1, id, 0) != 0) {
        haveNccl = false;
        why = "ncclCommInitRank(1 rank) failed";
      }
    }
    std::printf("bench_gpu_latency on %s: plan %s, %d ranks as threads on one GPU; NCCL: %s\n", prop.name,
                p->header.name.c_str(), n, haveNccl ? ncclPath.c_str() : why.c_str());
    std::printf("%9s %12s %12s %12s %14s %16s\n", "bytes", "plan us", "graph us", "nccl-1r us", "host us/call",
                "graph host us/c");
    for (uint64_t bytes = 1024; bytes <= 256 * 1024; bytes *= 2) {
      if (bytes < p->header.minMessageSize || bytes > p->header.maxMessageSize) continue;
      Sample s = measure(w, p, bytes, iters, 20);
      char ncclCol[32] = "-";
      if (haveNccl)
        std::snprintf(ncclCol, sizeof ncclCol, "%.2f",
                      ncclLatencyUs(nccl, comm, w.send(0), w.recv(0), bytes, w.stream(0), iters));
      std::printf("%9llu %12.2f %12.2f %12s %14.2f %16.2f\n", static_cast<unsigned long long>(bytes), s.streamUs,
                  s.graphUs, ncclCol, s.hostUs, s.graphHostUs);
    }
    if (haveNccl) nccl.commDestroy(comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_latency: %s\n", e.what());
    return 1;
  }
  return 0;
}
