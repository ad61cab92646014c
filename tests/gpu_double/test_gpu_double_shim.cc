// Finding 2 of docs/cuda-double.md, through the NCCL shim as nccl-tests -g 4
// drives it: ONE thread creates four communicators on four devices with
// ncclCommInitAll and issues an allreduce on each inside one group. Each
// first call builds an execution context collectively, so the group must
// build the four together, never one after another on the calling thread.
// meson.build sets MSCCLPP_PLAN_DIR to plans/, no fallback NCCL and a short
// MSCCLPP_TIMEOUT_S.
#include <cuda_runtime.h>
#include <nccl.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <cmath>
#include <vector>

#include "cuda_double.h"

namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) FAIL(what << ": " << cudaGetErrorString(e));
}
#define CK(call) ck((call), #call)

}  // namespace

TEST_CASE("finding 2: one thread drives four communicators in a group", "[finding2]") {
  constexpr int kDevices = 4;
  const size_t count = 64 * 1024;  // floats per rank
  int devlist[kDevices] = {0, 1, 2, 3};
  ncclComm_t comms[kDevices] = {};
  REQUIRE(ncclCommInitAll(comms, kDevices, devlist) == ncclSuccess);
  std::vector<cudaStream_t> streams(kDevices);
  std::vector<float*> send(kDevices), recv(kDevices);
  for (int i = 0; i < kDevices; ++i) {
    CK(cudaSetDevice(i));
    CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    CK(cudaMalloc(&send[i], count * sizeof(float)));
    CK(cudaMalloc(&recv[i], count * sizeof(float)));
    std::vector<float> host(count);
    for (size_t k = 0; k < count; ++k) host[k] = static_cast<float>((i + 1) * (k % 17));
    CK(cudaMemcpyAsync(send[i], host.data(), count * sizeof(float), cudaMemcpyHostToDevice, streams[i]));
    CK(cudaStreamSynchronize(streams[i]));  // cudaMemcpy would land on the legacy stream, unordered with ours
  }
  for (int iteration = 0; iteration < 3; ++iteration) {  // the first builds, the others reuse
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (int i = 0; i < kDevices; ++i) {
      CK(cudaSetDevice(i));
      REQUIRE(ncclAllReduce(send[i], recv[i], count, ncclFloat, ncclSum, comms[i], streams[i]) == ncclSuccess);
    }
    const ncclResult_t r = ncclGroupEnd();
    INFO("iteration " << iteration << ": " << ncclGetLastError(nullptr));
    REQUIRE(r == ncclSuccess);
    for (int i = 0; i < kDevices; ++i) {
      CK(cudaSetDevice(i));
      CK(cudaStreamSynchronize(streams[i]));
      std::vector<float> host(count);
      CK(cudaMemcpy(host.data(), recv[i], count * sizeof(float), cudaMemcpyDeviceToHost));
      for (size_t k = 0; k < count; ++k) {
        const float expect = static_cast<float>(10 * (k % 17));  // (1 + 2 + 3 + 4) * (k % 17)
        if (std::fabs(host[k] - expect) > 1e-3f) FAIL("device " << i << " element " << k << ": " << host[k]);
      }
    }
  }
  for (int i = 0; i < kDevices; ++i) {
    REQUIRE(ncclCommDestroy(comms[i]) == ncclSuccess);
    CK(cudaSetDevice(i));
    CK(cudaFree(send[i]));
    CK(cudaFree(recv[i]));
    CK(cudaStreamDestroy(streams[i]));
  }
}

int main(int argc, char** argv) {
  if (!cudadouble::active()) return 1;
  return mscclpp::test::runCatchSession(argc, argv);
}
