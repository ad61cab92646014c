#include "executor/cuda/gpu_memory.hpp"

#include <cstring>

#include "core/logger.hpp"
#include "executor/cuda/cuda_check.hpp"

namespace mscclpp::exec {

void* resolveStreamWriteValue64(int device) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion("cuStreamWriteValue64", &fn, 12000, cudaEnableDefault, &status);
#else
  cudaError_t e = cudaGetDriverEntryPoint("cuStreamWriteValue64", &fn, cudaEnableDefault, &status);
#endif
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  int supported = 0;
  if (cudaDeviceGetAttribute(&supported, static_cast<cudaDeviceAttr>(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS),
                             device) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return supported ? fn : nullptr;
}

DeviceAllocation::DeviceAllocation(size_t bytes, const std::string& what) : bytes_(bytes) {
  void* p = nullptr;
  MSCCLPP_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "%s: allocating %zu bytes of device memory", what.c_str(),
                     bytes);
  ptr_ = static_cast<char*>(p);
  cudaError_t e = cudaMemset(p, 0, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) {
    cudaFree(p);
    ptr_ = nullptr;
    MSCCLPP_CUDA_CHECK(e, "%s: zeroing %zu bytes of device memory", what.c_str(), bytes);
  }
}

DeviceAllocation::~DeviceAllocation() {
  if (ptr_ == nullptr) return;
  cudaError_t e = cudaFree(ptr_);
  if (e != cudaSuccess) MSCCLPP_WARN(LogExec, "cudaFree(%p) of an execution context: %s", ptr_, cudaGetErrorString(e));
}

PinnedAllocation::PinnedAllocation(size_t bytes, const std::string& what) {
  MSCCLPP_CUDA_CHECK(cudaHostAlloc(&host_, bytes == 0 ? 1 : bytes, cudaHostAllocMapped),
                     "%s: allocating %zu bytes of mapped host memory", what.c_str(), bytes);
  std::memset(host_, 0, bytes == 0 ? 1 : bytes);
  cudaError_t e = cudaHostGetDevicePointer(&device_, host_, 0);
  if (e != cudaSuccess) {
    cudaFreeHost(host_);
    host_ = nullptr;
    MSCCLPP_CUDA_CHECK(e, "%s: mapping host memory for the device", what.c_str());
  }
}

PinnedAllocation::~PinnedAllocation() {
  if (host_ == nullptr) return;
  cudaError_t e = cudaFreeHost(host_);
  if (e != cudaSuccess)
    MSCCLPP_WARN(LogExec, "cudaFreeHost(%p) of an execution context: %s", host_, cudaGetErrorString(e));
}

OwnedStream::OwnedStream(const std::string& what) {
  MSCCLPP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "%s: creating a stream", what.c_str());
}

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

DeviceGuard::DeviceGuard(int device) {
  MSCCLPP_CUDA_CHECK(cudaGetDevice(&previous_), "selecting CUDA device %d", device);
  if (previous_ != device) {
    MSCCLPP_CUDA_CHECK(cudaSetDevice(device), "selecting CUDA device %d", device);
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace mscclpp::exec
