// The GPU launcher of the op interpreter: picks the (dtype, op) instantiation compiled into this
// build (meson option gpu_types) and launches one block per plan threadblock on a stream. It only
// launches: building the device image of a context (device memory, IPC peers, graph capture) is
// the CUDA backend's job (issue 6) and calls this.
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
  LaunchArgs args{};
  void* stream = nullptr;  // cudaStream_t
};

// True when this build has the GPU backend and the CUDA runtime sees a device (errors such as "no
// driver" count as no device).
bool cudaDeviceVisible();

// Whether this build has GPU code for dtype (false in CPU-only builds and for types left out by
// -Dgpu_types).
bool gpuHasDtype(DataType dtype);
// Why the GPU backend cannot run dtype (no GPU code for it in this build), or nullopt: the kernel entry points below
// throw it as Error(NotSupported).
Refusal gpuDtypeRefusal(DataType dtype);

// Launches the kernel (op must be native). Throws Error(NotSupported) when the build has no GPU
// code for dtype, Error(CudaError) when the launch fails. Raises the instantiation's dynamic shared
// memory limit first when the launch asks for more than 48 KiB (once per size and device: function
// attributes are per device).
void launchExecutorKernel(DataType dtype, ReduceOp op, const GpuLaunch& launch);

// What one dtype x op instantiation of the kernel allows on the current device.
struct GpuKernelQuery {
  int maxThreadsPerBlock = 0;      // cudaFuncGetAttributes (register-limited)
  uint64_t staticSharedBytes = 0;  // the kernel's own __shared__ variables
  int blocksPerSm = 0;             // cudaOccupancyMaxActiveBlocksPerMultiprocessor(threads, sharedBytes)
};
// Throws like launchExecutorKernel. Host-only CUDA calls (allowed while a stream is captured).
GpuKernelQuery queryExecutorKernel(DataType dtype, ReduceOp op, int threadsPerBlock, uint32_t sharedBytes);

// Elementwise steps around a plan, enqueued on `stream` (graph-capturable). scalar: one element of
// dtype in host memory, passed to the kernel by value. Throw Error(CudaError) when the launch fails.
void launchPreMultiply(DataType dtype, void* dst, const void* src, uint64_t bytes, const void* scalar, void* stream);
void launchDivide(DataType dtype, void* data, uint64_t bytes, uint32_t n, void* stream);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_
