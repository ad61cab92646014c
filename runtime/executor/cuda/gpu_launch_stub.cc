// CPU-only builds (gpu disabled): the launcher exists and says there is no GPU code.
#include "core/enforce.hpp"
#include "executor/cuda/gpu_launch.hpp"

namespace mscclpp::exec {

bool cudaDeviceVisible() { return false; }

bool gpuHasDtype(DataType) { return false; }

void launchExecutorKernel(DataType, ReduceOp, const GpuLaunch&) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this build has no GPU backend (meson -Dgpu=disabled)");
}

}  // namespace mscclpp::exec
