// Finding 2 of docs/cuda-double.md, through the NCCL shim as nccl-tests -g 4
// drives it: ONE thread creates four communicators on four devices with
// ncclCommInitAll and issues an allreduce on each inside one group. Each
// first call builds an execution context collectively, so the group must
// build the four together, never one after another on the calling thread.
// Also ncclMemAlloc's memory, which NVLS must be able to bind.
// Native algorithms serve 3 ranks on the CUDA backend, NVLS on ncclMemAlloc memory.
// meson.build sets MSCCLPP_PLAN_DIR to plans/, no fallback NCCL and a short
// MSCCLPP_TIMEOUT_S.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "cuda_double.h"
#include "mscclpp/algorithm_api.h"

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

namespace {

// Chooses allreduce_nvls, else none (the real NCCL, absent here: the call fails).
int pickNvls(const mscclppAlgorithmInfo* candidates, int n, const mscclppPlanRequest*, void*) {
  for (int i = 0; i < n; ++i)
    if (std::string(candidates[i].name) == "allreduce_nvls") return i;
  return -1;
}

}  // namespace

// The native NVLS allreduce (multicast reduce and store through switch
// channels) on buffers from ncclMemAlloc, which NVLS binds, out of place
// and in place, each call built once and reused.
TEST_CASE("the native NVLS allreduce serves ncclMemAlloc buffers", "[native]") {
  constexpr int kDevices = 3;
  const size_t count = 512 * 1024;  // 2 MiB: NVLS binds whole multicast granules
  int devlist[kDevices] = {0, 1, 2};
  ncclComm_t comms[kDevices] = {};
  REQUIRE(mscclppAlgorithmSetSelector(&pickNvls, nullptr) == mscclppSuccess);
  REQUIRE(ncclCommInitAll(comms, kDevices, devlist) == ncclSuccess);
  std::vector<cudaStream_t> streams(kDevices);
  std::vector<float*> send(kDevices), recv(kDevices);
  auto upload = [&](int i, float* to) {
    std::vector<float> host(count);
    for (size_t k = 0; k < count; ++k) host[k] = static_cast<float>((i + 1) * (k % 13));
    CK(cudaMemcpyAsync(to, host.data(), count * sizeof(float), cudaMemcpyHostToDevice, streams[i]));
    CK(cudaStreamSynchronize(streams[i]));
  };
  for (int i = 0; i < kDevices; ++i) {
    CK(cudaSetDevice(i));
    CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    REQUIRE(ncclMemAlloc(reinterpret_cast<void**>(&send[i]), count * sizeof(float)) == ncclSuccess);
    REQUIRE(ncclMemAlloc(reinterpret_cast<void**>(&recv[i]), count * sizeof(float)) == ncclSuccess);
  }
  for (const bool inPlace : {false, true}) {
    for (int iteration = 0; iteration < 2; ++iteration) {
      for (int i = 0; i < kDevices; ++i) {
        CK(cudaSetDevice(i));
        upload(i, inPlace ? recv[i] : send[i]);
      }
      REQUIRE(ncclGroupStart() == ncclSuccess);
      for (int i = 0; i < kDevices; ++i) {
        CK(cudaSetDevice(i));
        REQUIRE(ncclAllReduce(inPlace ? recv[i] : send[i], recv[i], count, ncclFloat, ncclSum, comms[i], streams[i]) ==
                ncclSuccess);
      }
      const ncclResult_t r = ncclGroupEnd();
      INFO("in place " << inPlace << ", iteration " << iteration << ": " << ncclGetLastError(nullptr));
      REQUIRE(r == ncclSuccess);
      for (int i = 0; i < kDevices; ++i) {
        CK(cudaSetDevice(i));
        CK(cudaStreamSynchronize(streams[i]));
        std::vector<float> host(count);
        CK(cudaMemcpy(host.data(), recv[i], count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < count; ++k) {
          const float expect = static_cast<float>(6 * (k % 13));  // (1 + 2 + 3) * (k % 13)
          if (host[k] != expect) FAIL("device " << i << " element " << k << ": " << host[k]);
        }
      }
    }
  }
  for (int i = 0; i < kDevices; ++i) REQUIRE(ncclCommDestroy(comms[i]) == ncclSuccess);
  REQUIRE(mscclppAlgorithmSetSelector(nullptr, nullptr) == mscclppSuccess);
  for (int i = 0; i < kDevices; ++i) {
    CK(cudaSetDevice(i));
    REQUIRE(ncclMemFree(send[i]) == ncclSuccess);
    REQUIRE(ncclMemFree(recv[i]) == ncclSuccess);
    CK(cudaStreamDestroy(streams[i]));
  }
}

int main(int argc, char** argv) {
  if (!cudadouble::active()) return 1;
  return mscclpp::test::runCatchSession(argc, argv);
}

// ncclMemAlloc on a GPU that offers multicast gives what NCCL gives: memory
// from cuMemCreate with a shareable handle type, at the multicast
// granularity, which NVLS can bind (cudaMalloc memory never can), reachable
// from its device and the devices with peer access to it.
TEST_CASE("ncclMemAlloc memory is multicast-capable", "[memalloc]") {
  auto driver = [](const char* name) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    REQUIRE(cudaGetDriverEntryPointByVersion(name, &p, 12010, cudaEnableDefault, &status) == cudaSuccess);
    REQUIRE(status == cudaDriverEntryPointSuccess);
    return p;
  };
  auto retain = reinterpret_cast<decltype(&cuMemRetainAllocationHandle)>(driver("cuMemRetainAllocationHandle"));
  auto properties = reinterpret_cast<decltype(&cuMemGetAllocationPropertiesFromHandle)>(
      driver("cuMemGetAllocationPropertiesFromHandle"));
  auto release = reinterpret_cast<decltype(&cuMemRelease)>(driver("cuMemRelease"));
  auto range = reinterpret_cast<decltype(&cuMemGetAddressRange)>(driver("cuMemGetAddressRange"));
  const uint64_t live = cudadouble::stats().liveAllocations;
  CK(cudaSetDevice(2));
  void* p = nullptr;
  REQUIRE(ncclMemAlloc(&p, 3 << 20) == ncclSuccess);
  CUmemGenericAllocationHandle h{};
  REQUIRE(retain(&h, p) == CUDA_SUCCESS);
  CUmemAllocationProp prop{};
  REQUIRE(properties(&prop, h) == CUDA_SUCCESS);
  CHECK(prop.location.id == 2);
  CHECK((prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0);
  CHECK(release(h) == CUDA_SUCCESS);
  CUdeviceptr base = 0;
  size_t size = 0;
  REQUIRE(range(&base, &size, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS);
  CHECK(size == (4u << 20));  // 3 MiB rounded to the 2 MiB multicast granularity
  std::vector<char> host(3 << 20, 9), back(3 << 20);
  CK(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice));
  // A pageable upload may still be in flight on device 2's legacy stream,
  // which device 3's legacy stream does not order against.
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(3));  // a peer device reads it too
  CK(cudaMemcpy(back.data(), p, back.size(), cudaMemcpyDeviceToHost));
  const bool same = back == host;  // not CHECK(back == host): Catch would print 6 MiB
  CHECK(same);
  REQUIRE(ncclMemFree(p) == ncclSuccess);
  CHECK(cudadouble::stats().liveAllocations == live);
}

// Three ranks: no plan exists for them, and no NCCL is behind the shim, so
// a native algorithm's kernel serves each call (the CUDA backend's native path).
TEST_CASE("native algorithms serve 3 ranks through the shim", "[native]") {
  constexpr int kDevices = 3;
  int devlist[kDevices] = {0, 1, 2};
  ncclComm_t comms[kDevices] = {};
  REQUIRE(ncclCommInitAll(comms, kDevices, devlist) == ncclSuccess);
  // 1001 floats take the LL-packet allreduce, 100003 (over 256 KiB) the read-reduce one.
  for (const size_t count : {size_t(1001), size_t(100003)}) {
    std::vector<cudaStream_t> streams(kDevices);
    std::vector<float*> send(kDevices), recv(kDevices), gathered(kDevices);
    for (int i = 0; i < kDevices; ++i) {
      CK(cudaSetDevice(i));
      CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
      CK(cudaMalloc(&send[i], count * sizeof(float)));
      CK(cudaMalloc(&recv[i], count * sizeof(float)));
      CK(cudaMalloc(&gathered[i], kDevices * count * sizeof(float)));
      std::vector<float> host(count);
      for (size_t k = 0; k < count; ++k) host[k] = static_cast<float>((i + 1) * (k % 17));
      CK(cudaMemcpyAsync(send[i], host.data(), count * sizeof(float), cudaMemcpyHostToDevice, streams[i]));
      CK(cudaStreamSynchronize(streams[i]));
    }
    for (int iteration = 0; iteration < 2; ++iteration) {  // the first builds, the second reuses
      REQUIRE(ncclGroupStart() == ncclSuccess);
      for (int i = 0; i < kDevices; ++i) {
        CK(cudaSetDevice(i));
        REQUIRE(ncclAllReduce(send[i], recv[i], count, ncclFloat, ncclSum, comms[i], streams[i]) == ncclSuccess);
      }
      ncclResult_t r = ncclGroupEnd();
      INFO("count " << count << " iteration " << iteration << ": " << ncclGetLastError(nullptr));
      REQUIRE(r == ncclSuccess);
      REQUIRE(ncclGroupStart() == ncclSuccess);
      for (int i = 0; i < kDevices; ++i) {
        CK(cudaSetDevice(i));
        REQUIRE(ncclAllGather(send[i], gathered[i], count, ncclFloat, comms[i], streams[i]) == ncclSuccess);
      }
      r = ncclGroupEnd();
      REQUIRE(r == ncclSuccess);
      for (int i = 0; i < kDevices; ++i) {
        CK(cudaSetDevice(i));
        CK(cudaStreamSynchronize(streams[i]));
        std::vector<float> host(count), all(kDevices * count);
        CK(cudaMemcpy(host.data(), recv[i], count * sizeof(float), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(all.data(), gathered[i], all.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < count; ++k) {
          const float expect = static_cast<float>(6 * (k % 17));  // (1 + 2 + 3) * (k % 17)
          if (std::fabs(host[k] - expect) > 1e-3f)
            FAIL("allreduce: device " << i << " element " << k << ": " << host[k]);
        }
        for (size_t k = 0; k < all.size(); ++k) {
          const float expect = static_cast<float>((k / count + 1) * ((k % count) % 17));
          if (all[k] != expect) FAIL("allgather: device " << i << " element " << k << ": " << all[k]);
        }
      }
    }
    for (int i = 0; i < kDevices; ++i) {
      CK(cudaSetDevice(i));
      CK(cudaFree(send[i]));
      CK(cudaFree(recv[i]));
      CK(cudaFree(gathered[i]));
      CK(cudaStreamDestroy(streams[i]));
    }
  }
  for (int i = 0; i < kDevices; ++i) REQUIRE(ncclCommDestroy(comms[i]) == ncclSuccess);
}
