// The few CUDA runtime calls the shim makes itself (device bookkeeping, ncclMemAlloc). Built against the CUDA
// runtime when the GPU backend is built; without it every function reports "no device".
#ifndef MSCCLPP_NCCL_SHIM_CUDA_GLUE_HPP_
#define MSCCLPP_NCCL_SHIM_CUDA_GLUE_HPP_

#include <cstddef>
#include <string>

namespace mscclpp::shim {

// The calling thread's current device, or -1 when there is no CUDA runtime or no device.
int currentCudaDevice();
// Makes dev current on the calling thread (no-op for dev < 0); throws Error(CudaError) on failure.
void setCudaDevice(int dev);
// cudaMalloc / cudaFree; throw Error(CudaError) with CUDA's message (or "built without CUDA").
void* cudaAllocate(size_t bytes);
void cudaRelease(void* ptr);
// True when ptr is memory cudaMalloc (or cudaMallocHost/Managed) returned.
bool isCudaPointer(const void* ptr);
// Why there is no usable device ("" when there is one).
std::string cudaUnavailableReason();

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_CUDA_GLUE_HPP_
