#include "transport/device_memory.hpp"

#include "core/enforce.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp::transport {

#if MSCCLPP_HAVE_CUDA

bool isDevicePointer(const void* ptr) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice;
}

void copyHostToDevice(void* dst, const void* src, size_t bytes, const char* what) {
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: cudaMemcpy host->device of %zu bytes: %s", what, bytes,
                  cudaGetErrorString(e));
}

void copyDeviceToHost(void* dst, const void* src, size_t bytes, const char* what) {
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: cudaMemcpy device->host of %zu bytes: %s", what, bytes,
                  cudaGetErrorString(e));
}

int cudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int currentCudaDevice() {
  int d = -1;
  if (cudaDeviceCount() == 0 || cudaGetDevice(&d) != cudaSuccess) return -1;
  return d;
}

#else

bool isDevicePointer(const void*) { return false; }

void copyHostToDevice(void*, const void*, size_t, const char* what) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s: device memory needs a CUDA build of MSCCL++", what);
}

void copyDeviceToHost(void*, const void*, size_t, const char* what) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s: device memory needs a CUDA build of MSCCL++", what);
}

int cudaDeviceCount() { return 0; }
int currentCudaDevice() { return -1; }

#endif

}  // namespace mscclpp::transport
