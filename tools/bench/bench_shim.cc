// bench_shim: the host cost the shim adds to a call that goes
// to the real NCCL, against calling that library directly.
// The test double stands in for NCCL: its calls cost a few
// nanoseconds, so the difference is the shim's own work.
//
//   bench_shim <path to libnccl_double.so> [iterations]
//
// Times ncclAllReduce of one float, through the
// double's own entry point and through the shim's, on
// a one-rank communicator and on a two-rank one whose
// agreed choice is no plan. Prints ns per call.
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nccl_double.h"
#include "support/args.hpp"

namespace {

using AllReduceFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);

template <class F>
double nsPerCall(long iterations, F&& call) {
  // The best of several rounds: what the code
  // costs, not what the machine's neighbours cost.
  double best = 1e30;
  for (int round = 0; round < 7; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iterations; ++i) call();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  }
  return best;
}

[[noreturn]] void die(const char* what, ncclResult_t r) {
  std::fprintf(stderr, "bench_shim: %s failed (%d): %s\n", what, static_cast<int>(r), ncclGetLastError(nullptr));
  std::exit(1);
}

// The double's communicator behind ours. The first call
// of a shape is collective, since the ranks agree on
// its plan, so every peer rank makes it too, on threads
// here. Later calls of the shape decide from the agreed
// choice alone, which is what the rounds time.
ncclComm_t realTwin(void* dbl, ncclComm_t ours, const std::vector<ncclComm_t>& peers, float* x) {
  auto reset = reinterpret_cast<ncclDoubleResetFn>(dlsym(dbl, "ncclDoubleReset"));
  auto count = reinterpret_cast<ncclDoubleRecordCountFn>(dlsym(dbl, "ncclDoubleRecordCount"));
  auto comm = reinterpret_cast<ncclDoubleRecordCommFn>(dlsym(dbl, "ncclDoubleRecordComm"));
  std::vector<float> peerBuf(2 * peers.size(), 1.0f);
  std::vector<ncclResult_t> peerResults(peers.size(), ncclSuccess);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < peers.size(); ++i) {
    threads.emplace_back([&, i] {
      peerResults[i] = ncclAllReduce(&peerBuf[2 * i], &peerBuf[2 * i + 1], 1, ncclFloat32, ncclSum, peers[i], nullptr);
    });
  }
  ncclResult_t r = ncclAllReduce(x, x + 1, 1, ncclFloat32, ncclSum, ours, nullptr);
  for (auto& t : threads) t.join();
  if (r != ncclSuccess) die("ncclAllReduce through the shim", r);
  for (ncclResult_t pr : peerResults) {
    if (pr != ncclSuccess) die("ncclAllReduce through the shim (peer rank)", pr);
  }
  reset();  // the agreed shape's next call is ours alone
  if ((r = ncclAllReduce(x, x + 1, 1, ncclFloat32, ncclSum, ours, nullptr)) != ncclSuccess) {
    die("ncclAllReduce through the shim", r);
  }
  return reinterpret_cast<ncclComm_t>(comm(count() - 1));
}

void measure(const char* label, void* dbl, ncclComm_t ours, const std::vector<ncclComm_t>& peers, long iterations) {
  std::vector<float> buf(2, 1.0f);
  float* x = buf.data();
  ncclComm_t real = realTwin(dbl, ours, peers, x);
  auto direct = reinterpret_cast<AllReduceFn>(dlsym(dbl, "ncclAllReduce"));
  auto setRecording = reinterpret_cast<ncclDoubleSetRecordingFn>(dlsym(dbl, "ncclDoubleSetRecording"));
  setRecording(0);
  double d = nsPerCall(iterations, [&] { direct(x, x + 1, 1, ncclFloat32, ncclSum, real, nullptr); });
  double s = nsPerCall(iterations, [&] { ncclAllReduce(x, x + 1, 1, ncclFloat32, ncclSum, ours, nullptr); });
  setRecording(1);
  std::printf("%-44s direct %7.1f ns/call   via shim %7.1f ns/call   shim overhead %6.1f ns/call\n", label, d, s,
              s - d);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  mscclpp::tools::ArgParser args("bench_shim",
                                 "usage: bench_shim LIBNCCL_DOUBLE [ITERATIONS]\n"
                                 "  LIBNCCL_DOUBLE: the test-double libnccl (build/tests/unit/shim/libnccl_double.so)\n"
                                 "  ITERATIONS: calls per round, 1 to 1000000000 (default 2000000)\n");
  args.positional(&positional, 1, 2, "arguments (LIBNCCL_DOUBLE [ITERATIONS])");
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  long iterations = 2000000;
  if (positional.size() == 2) {
    int64_t n = 0;
    std::string error;
    if (!mscclpp::tools::parseInteger(positional[1], 1, 1000000000, &n, &error)) {
      return args.usageError("ITERATIONS '" + positional[1] + "': " + error);
    }
    iterations = static_cast<long>(n);
  }
  const char* doublePath = positional[0].c_str();
  // This process's configuration: the double is the
  // real NCCL, and no plan directory is scanned.
  setenv("MSCCLPP_NCCL_LIB_PATH", doublePath, 1);
  setenv("MSCCLPP_BACKEND", "cpu", 1);
  setenv("MSCCLPP_SOCKET_IFNAME", "lo", 1);

  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) die("ncclGetUniqueId", r);
  ncclComm_t solo;
  if ((r = ncclCommInitRank(&solo, 1, id, 0)) != ncclSuccess) die("ncclCommInitRank(1 rank)", r);
  void* dbl = dlopen(doublePath, RTLD_LAZY | RTLD_NOLOAD);
  if (dbl == nullptr) {
    std::fprintf(stderr, "bench_shim: the shim did not load %s as its NCCL\n", doublePath);
    return 1;
  }

  ncclComm_t pair[2];
  if ((r = ncclGetUniqueId(&id)) != ncclSuccess) die("ncclGetUniqueId", r);
  ncclGroupStart();
  for (int i = 0; i < 2; ++i) ncclCommInitRank(&pair[i], 2, id, i);
  if ((r = ncclGroupEnd()) != ncclSuccess) die("ncclCommInitRank(2 ranks)", r);

  std::printf("ncclAllReduce(1 float) to the NCCL fallback, %ld calls per round, best of 7 rounds\n", iterations);
  measure("1-rank communicator (no plan lookup):", dbl, solo, {}, iterations);
  measure("2-rank communicator (registry finds no plan):", dbl, pair[0], {pair[1]}, iterations);

  ncclCommDestroy(solo);
  ncclCommDestroy(pair[0]);
  ncclCommDestroy(pair[1]);
  return 0;
}
