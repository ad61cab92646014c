// CPU-only builds (gpu disabled): the launcher exists and says there is no GPU code.
#include "core/enforce.hpp"
#include "executor/cuda/gpu_launch.hpp"

namespace mscclpp::exec {

bool cudaDeviceVisible() { return false; }

bool gpuHasDtype(DataType) { return false; }

Refusal gpuDtypeRefusal(DataType) { return std::string("this build has no GPU backend (meson -Dgpu=disabled)"); }

void launchExecutorKernel(DataType, ReduceOp, const GpuLaunch&) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this build has no GPU backend (meson -Dgpu=disabled)");
}

GpuKernelQuery queryExecutorKernel(DataType, ReduceOp, int, uint32_t) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this build has no GPU backend (meson -Dgpu=disabled)");
}

void launchPreMultiply(DataType, void*, const void*, uint64_t, const void*, void*) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this build has no GPU backend (meson -Dgpu=disabled)");
}

void launchDivide(DataType, void*, uint64_t, uint32_t, void*) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this build has no GPU backend (meson -Dgpu=disabled)");
}

void launchStoreCounts(const uint64_t*, uint32_t, uint64_t*, void*) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this build has no GPU backend (meson -Dgpu=disabled)");
}

}  // namespace mscclpp::exec
