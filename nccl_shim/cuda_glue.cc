#include "cuda_glue.hpp"

#include "core/enforce.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp::shim {

#if MSCCLPP_HAVE_CUDA

int currentCudaDevice() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

void setCudaDevice(int dev) {
  if (dev < 0) return;
  cudaError_t e = cudaSetDevice(dev);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(e));
}

void* cudaAllocate(size_t bytes) {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "cudaMalloc(%zu bytes): %s", bytes, cudaGetErrorString(e));
  return p;
}

void cudaRelease(void* ptr) {
  cudaError_t e = cudaFree(ptr);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "cudaFree(%p): %s", ptr, cudaGetErrorString(e));
}

bool isCudaPointer(const void* ptr) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type != cudaMemoryTypeUnregistered;
}

std::string cudaUnavailableReason() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaGetErrorString(e);
  }
  return n > 0 ? "" : "no CUDA device is visible";
}

#else

int currentCudaDevice() { return -1; }
void setCudaDevice(int) {}
void* cudaAllocate(size_t bytes) {
  MSCCLPP_THROW(ErrorCode::CudaError, "cannot allocate %zu bytes of device memory: MSCCL++ was built without CUDA",
                bytes);
}
void cudaRelease(void* ptr) {
  MSCCLPP_THROW(ErrorCode::CudaError, "cannot free device memory %p: MSCCL++ was built without CUDA", ptr);
}
bool isCudaPointer(const void*) { return false; }
std::string cudaUnavailableReason() { return "MSCCL++ was built without CUDA"; }

#endif

}  // namespace mscclpp::shim
