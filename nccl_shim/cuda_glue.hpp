// The few CUDA runtime calls the shim makes itself:
// the current device, and memory for ncclMemAlloc.
// Without the GPU backend in the build, every
// function reports that there is no device.
#ifndef MSCCLPP_NCCL_SHIM_CUDA_GLUE_HPP_
#define MSCCLPP_NCCL_SHIM_CUDA_GLUE_HPP_

#include <cstddef>
#include <string>

namespace mscclpp::shim {

// The calling thread's current device, or -1 when there is none.
int currentCudaDevice();
// Makes dev current on the calling thread; a negative
// dev does nothing. Throws Error(CudaError) on failure.
void setCudaDevice(int dev);
// cudaMalloc and cudaFree. Both throw
// Error(CudaError) with CUDA's message.
void* cudaAllocate(size_t bytes);
void cudaRelease(void* ptr);
// True when ptr is memory CUDA allocated, device, host or managed.
bool isCudaPointer(const void* ptr);
// Why there is no usable device; empty when there is one.
std::string cudaUnavailableReason();

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_CUDA_GLUE_HPP_
