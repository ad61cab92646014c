// The GPU launcher of the op interpreter: picks the kernel this build
// compiled for the datatype and op, and launches one block per plan
// threadblock on a stream. Contexts and their memory are the backend's job.
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_

#include <cstddef>
#include <cstdint>

#include "executor/exec_layout.hpp"
#include "executor/refusal.hpp"
#include "mscclpp/datatype.hpp"

namespace mscclpp::exec {

struct GpuLaunch {
  const ExecContextDevice* deviceContext = nullptr;  // in device memory, as are all its arrays
  uint32_t nBlocks = 0;
  uint32_t threadsPerBlock = 1024;
  uint32_t sharedBytes = 0;  // dynamic shared memory for the largest block's ops/refs/ids (0: global)
  bool cooperative = false;  // cudaLaunchCooperativeKernel: every block resident at once
  LaunchArgs args{};
  void* stream = nullptr;  // cudaStream_t
};

// True when this build has the GPU backend and CUDA sees a device.
// Errors such as "no driver" count as no device.
bool cudaDeviceVisible();

// Whether this build has GPU code for dtype: not in CPU-only builds nor
// for types -Dgpu_types left out.
bool gpuHasDtype(DataType dtype);
// Why the GPU backend cannot run dtype, or nullopt. The entry points below
// throw it as Error(NotSupported).
Refusal gpuDtypeRefusal(DataType dtype);

// Launches the kernel for a native op. Throws Error(NotSupported) without
// GPU code for dtype, Error(CudaError) when the launch fails. Above 48 KiB
// of dynamic shared memory it first raises the kernel's limit, once per
// size and device: function attributes are per device.
void launchExecutorKernel(DataType dtype, ReduceOp op, const GpuLaunch& launch);

// What one dtype x op instantiation of the kernel allows on the current device.
struct GpuKernelQuery {
  int maxThreadsPerBlock = 0;      // cudaFuncGetAttributes (register-limited)
  uint64_t staticSharedBytes = 0;  // the kernel's own __shared__ variables
  int blocksPerSm = 0;             // cudaOccupancyMaxActiveBlocksPerMultiprocessor(threads, sharedBytes)
};
// Throws like launchExecutorKernel. Host-only CUDA calls (allowed while a stream is captured).
GpuKernelQuery queryExecutorKernel(DataType dtype, ReduceOp op, int threadsPerBlock, uint32_t sharedBytes);

// Loads every kernel the backend launches (the executor kernel of every
// compiled datatype and native op, the premulsum and avg steps) on the
// current device. With lazy loading, CUDA's default since 12.2, a kernel's
// first launch may synchronise the context, which never returns while a
// running kernel waits for work issued after that launch. Called before a
// rank's first collective, so that no launch of a call loads a kernel.
// Throws Error(CudaError).
void loadGpuKernels();

// Elementwise steps around a plan, enqueued on `stream`, graph-capturable.
// scalar: one host element of dtype, passed by value. Throw
// Error(CudaError) when the launch fails.
void launchPreMultiply(DataType dtype, void* dst, const void* src, uint64_t bytes, const void* scalar, void* stream);
void launchDivide(DataType dtype, void* data, uint64_t bytes, uint32_t n, void* stream);

// A variable-size call's count matrix from host memory, passed to a kernel
// by value that stores it at dst (device memory): stream-ordered, with no
// host buffer to keep and no synchronisation, and captured by value.
constexpr uint32_t kInlineCounts = 256;  // 16 ranks
struct InlineCounts {
  uint64_t values[kInlineCounts];
};
void launchStoreCounts(const uint64_t* counts, uint32_t n, uint64_t* dst, void* stream);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_
