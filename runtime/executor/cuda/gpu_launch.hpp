// The GPU launcher of the op interpreter: picks the (dtype, op) instantiation compiled into this
// build (meson option gpu_types) and launches one block per plan threadblock on a stream. It only
// launches: building the device image of a context (device memory, IPC peers, graph capture) is
// the CUDA backend's job (issue 6) and calls this.
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_

#include <cstddef>
#include <cstdint>

#include "executor/exec_layout.hpp"
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

// Launches the kernel (op must be native). Throws Error(NotSupported) when the build has no GPU
// code for dtype, Error(CudaError) when the launch fails.
void launchExecutorKernel(DataType dtype, ReduceOp op, const GpuLaunch& launch);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_LAUNCH_HPP_
