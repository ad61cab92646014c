// Builds without CUDA: there is no GPU backend to create.
#include "core/enforce.hpp"
#include "executor/cuda/gpu_backend.hpp"

namespace mscclpp::exec {

std::unique_ptr<GpuBackend> GpuBackend::create(std::shared_ptr<Communicator>, CallMonitor*) {
  MSCCLPP_THROW(
      ErrorCode::NotSupported,
      "the CUDA backend is not in this build of MSCCL++ (meson -Dgpu=disabled): run with MSCCLPP_BACKEND=cpu");
}

}  // namespace mscclpp::exec
