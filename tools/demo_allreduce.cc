// demo_allreduce: an ordinary NCCL program, nothing of
// MSCCL++ in it, that runs an allreduce on N ranks,
// checks the result and times it. tools/demo preloads
// the shim so that a DSL-compiled plan serves it.
//
//   demo_allreduce --ranks N [--bytes B] [--iters K] [--warmup W] [--device cpu|gpu] [--timeout S]
//
// It forks N ranks; rank 0's unique id reaches the others through
// pipes. Each rank checks its result against the closed-form sum and
// prints "rank R: correct|WRONG (max error E) avg_us T". Exits 0 when
// every rank is correct.
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/args.hpp"

#if DEMO_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

struct Options {
  int ranks = 4;
  uint64_t bytes = 1 << 20;
  int iters = 20;
  int warmup = 5;
  bool gpu = false;
  double timeout = 300;
};

const char kUsage[] =
    "usage: demo_allreduce [--ranks N] [--bytes B] [--iters K] [--warmup W] [--device cpu|gpu] [--timeout S]\n"
    "  --ranks: 1 to 256 (default 4); --bytes: at least 4, e.g. 1M (default); --iters: at least 1 (default 20);\n"
    "  --warmup: default 5; --device: cpu (host buffers, default) or gpu; --timeout: seconds (default 300)\n";

#define CHECK_NCCL(call)                                                                                            \
  do {                                                                                                              \
    ncclResult_t r_ = (call);                                                                                       \
    if (r_ != ncclSuccess) {                                                                                        \
      std::printf("rank %d: %s failed: %s (%s)\n", rank, #call, ncclGetErrorString(r_), ncclGetLastError(nullptr)); \
      std::fflush(stdout);                                                                                          \
      _exit(1);                                                                                                     \
    }                                                                                                               \
  } while (0)

// The value rank r puts at element i. The sum over ranks
// has a closed form, and every step is exact in float.
float inputValue(int r, size_t i) { return static_cast<float>(r + 1) + static_cast<float>(i % 13) * 0.25f; }
float expectedSum(int n, size_t i) {
  return static_cast<float>(n * (n + 1) / 2) + n * static_cast<float>(i % 13) * 0.25f;
}

int runRank(const Options& o, int rank, int idIn, const std::vector<int>& idOut) {
  ncclUniqueId id;
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      std::printf("rank 0: ncclGetUniqueId failed: %s\n", ncclGetLastError(nullptr));
      return 1;
    }
    for (int fd : idOut) {
      if (write(fd, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
    }
  } else if (read(idIn, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) {
    std::printf("rank %d: no unique id from rank 0\n", rank);
    return 1;
  }
  const size_t count = o.bytes / sizeof(float);
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = inputValue(rank, i);

  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, o.ranks, id, rank));
  void* send = nullptr;
  void* recv = nullptr;
  cudaStream_t stream = nullptr;
#if DEMO_HAVE_CUDA
  if (o.gpu) {
    cudaStreamCreate(&stream);
    cudaMalloc(&send, o.bytes);
    cudaMalloc(&recv, o.bytes);
    cudaMemcpy(send, host.data(), o.bytes, cudaMemcpyHostToDevice);
  }
#endif
  if (!o.gpu) {
    send = std::malloc(o.bytes);
    recv = std::malloc(o.bytes);
    std::memcpy(send, host.data(), o.bytes);
  }
  auto sync = [&] {
#if DEMO_HAVE_CUDA
    if (o.gpu) cudaStreamSynchronize(stream);
#endif
  };
  for (int i = 0; i < o.warmup; ++i) CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
  sync();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
  sync();
  double avgUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;

  std::vector<float> out(count);
#if DEMO_HAVE_CUDA
  if (o.gpu) cudaMemcpy(out.data(), recv, o.bytes, cudaMemcpyDeviceToHost);
#endif
  if (!o.gpu) std::memcpy(out.data(), recv, o.bytes);
  double maxErr = 0;
  for (size_t i = 0; i < count; ++i) maxErr = std::max(maxErr, std::fabs(double(out[i]) - expectedSum(o.ranks, i)));
  std::printf("rank %d: %s (max error %g) avg_us %.1f\n", rank, maxErr == 0 ? "correct" : "WRONG", maxErr, avgUs);
  std::fflush(stdout);
  CHECK_NCCL(ncclCommDestroy(comm));
  if (!o.gpu) {
    std::free(send);
    std::free(recv);
  }
  return maxErr == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  mscclpp::tools::ArgParser args("demo_allreduce", kUsage);
  args.integer("--ranks", &o.ranks, 1, 256)
      .size("--bytes", &o.bytes, sizeof(float))
      .integer("--iters", &o.iters, 1, 100000000)
      .integer("--warmup", &o.warmup, 0, 100000000)
      .custom("--device",
              [&](const std::string& v, std::string* error) {
                *error = "expected cpu or gpu";
                o.gpu = v == "gpu";
                return v == "gpu" || v == "cpu";
              })
      .real("--timeout", &o.timeout, 1e-3, 1e9);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
#if !DEMO_HAVE_CUDA
  if (o.gpu) {
    std::fprintf(stderr, "demo_allreduce: built without CUDA; use --device cpu\n");
    return 2;
  }
#endif
  std::vector<int> readEnds(o.ranks, -1), writeEnds;
  for (int r = 1; r < o.ranks; ++r) {
    int p[2];
    if (pipe(p) != 0) return 1;
    readEnds[r] = p[0];
    writeEnds.push_back(p[1]);
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      // Keep only this rank's end of the pipes. A rank waiting for the
      // id must see end-of-file when rank 0 fails before sending it,
      // not wait for a writer its own process or a sibling still holds.
      for (int other = 1; other < o.ranks; ++other) {
        if (other != r) close(readEnds[other]);
      }
      if (r != 0) {
        for (int fd : writeEnds) close(fd);
      }
      const int status = runRank(o, r, readEnds[r], r == 0 ? writeEnds : std::vector<int>{});
      // _exit does not flush: a failing rank's message must reach stdout.
      std::fflush(nullptr);
      _exit(status);
    }
    pids.push_back(pid);
  }
  for (int fd : writeEnds) close(fd);
  for (int fd : readEnds) {
    if (fd >= 0) close(fd);
  }
  int failed = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout);
  for (pid_t pid : pids) {
    int status = 0;
    for (;;) {
      pid_t p = waitpid(pid, &status, WNOHANG);
      if (p == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        std::printf("demo_allreduce: a rank did not finish within %.0f s; stopping it\n", o.timeout);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      usleep(10000);  // polls a child's exit status; no synchronisation
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed == 0 ? 0 : 1;
}
