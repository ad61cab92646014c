#include "executor/cuda/gpu_launch.hpp"

#include <cuda_runtime.h>

#include "core/enforce.hpp"
#include "executor/dtypes.hpp"
#include "executor/executor_gpu_types.h"  // generated: MSCCLPP_GPU_TYPE_<short> = 0/1 per type

namespace mscclpp::exec {

#define MSCCLPP_X(E, T, S) void launchExecutorKernel_##S(ReduceOp op, const GpuLaunch& l);
MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X

namespace {

using LaunchFn = void (*)(ReduceOp, const GpuLaunch&);

LaunchFn launcherOf(DataType dtype) {
  switch (dtype) {
#define MSCCLPP_X(E, T, S) \
  case DataType::E: return MSCCLPP_GPU_TYPE_##S ? &launchExecutorKernel_##S : nullptr;
    MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
  }
  return nullptr;
}

}  // namespace

bool cudaDeviceVisible() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

bool gpuHasDtype(DataType dtype) { return launcherOf(dtype) != nullptr; }

void launchExecutorKernel(DataType dtype, ReduceOp op, const GpuLaunch& launch) {
  LaunchFn fn = launcherOf(dtype);
  MSCCLPP_ENFORCE(fn != nullptr, ErrorCode::NotSupported,
                  "this build has no GPU code for %s (meson option gpu_types)", dataTypeName(dtype) ? dataTypeName(dtype) : "?");
  fn(op, launch);
}

}  // namespace mscclpp::exec
