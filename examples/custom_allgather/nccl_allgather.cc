// nccl_allgather: an ordinary NCCL program, nothing of MSCCL++ in it.
// Ranks are threads; each all-gathers count floats (ncclAllGather, out of
// place, then in place), checks the result and prints "rank R: correct".
//
//   nccl_allgather [ranks] [count] [cpu|gpu]      (default: 3 1001 cpu)
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if EXAMPLE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

float valueOf(int rank, size_t i) { return static_cast<float>(rank * 1000 + static_cast<int>(i % 997)); }

int runRank(ncclUniqueId id, int rank, int nRanks, size_t count, bool gpu) {
  ncclComm_t comm;
  if (ncclCommInitRank(&comm, nRanks, id, rank) != ncclSuccess) {
    std::printf("rank %d: ncclCommInitRank failed: %s\n", rank, ncclGetLastError(nullptr));
    return 1;
  }
  std::vector<float> send(count), out(count * nRanks);
  for (size_t i = 0; i < count; ++i) send[i] = valueOf(rank, i);
  float *s = send.data(), *r = out.data();
#if EXAMPLE_HAVE_CUDA
  const size_t bytes = count * sizeof(float);
#endif
  cudaStream_t stream = nullptr;  // nccl.h declares it
#if EXAMPLE_HAVE_CUDA
  if (gpu) {
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMalloc(&s, bytes);
    cudaMalloc(&r, bytes * nRanks);
    cudaMemcpy(s, send.data(), bytes, cudaMemcpyHostToDevice);
  }
#endif
  int wrong = 0;
  for (int inPlace = 0; inPlace < 2; ++inPlace) {
    float* from = inPlace ? r + rank * count : s;
#if EXAMPLE_HAVE_CUDA
    if (gpu && inPlace) cudaMemcpy(from, send.data(), bytes, cudaMemcpyHostToDevice);
#endif
    if (!gpu && inPlace) std::copy(send.begin(), send.end(), from);
    if (ncclAllGather(from, r, count, ncclFloat32, comm, stream) != ncclSuccess) {
      std::printf("rank %d: ncclAllGather failed: %s\n", rank, ncclGetLastError(comm));
      return 1;
    }
#if EXAMPLE_HAVE_CUDA
    if (gpu) {
      cudaStreamSynchronize(stream);
      cudaMemcpy(out.data(), r, bytes * nRanks, cudaMemcpyDeviceToHost);
    }
#endif
    for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != valueOf(static_cast<int>(i / count), i % count);
  }
  std::printf("rank %d: %s\n", rank, wrong == 0 ? "correct" : "WRONG");
  ncclCommDestroy(comm);
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int nRanks = argc > 1 ? std::atoi(argv[1]) : 3;
  const size_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1001;
  const bool gpu = argc > 3 && std::string(argv[3]) == "gpu";
  if (nRanks < 1 || count < 1) {
    std::fprintf(stderr, "usage: nccl_allgather [ranks] [count] [cpu|gpu]\n");
    return 2;
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return 1;
  std::vector<int> status(nRanks, 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < nRanks; ++r) threads.emplace_back([&, r] { status[r] = runRank(id, r, nRanks, count, gpu); });
  for (auto& t : threads) t.join();
  for (int s : status)
    if (s != 0) return 1;
  return 0;
}
