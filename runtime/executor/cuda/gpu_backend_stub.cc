// Builds without CUDA: there is no GPU backend to create.
#include "core/enforce.hpp"
#include "executor/cuda/gpu_backend.hpp"

namespace mscclpp::exec {

Refusal GpuBackend::unavailable(const Communicator*) {
  return std::string(
      "the CUDA backend is not in this build of MSCCL++ (meson -Dgpu=disabled): run with MSCCLPP_BACKEND=cpu");
}

std::unique_ptr<GpuBackend> GpuBackend::create(std::shared_ptr<Communicator> comm, CallMonitor*) {
  throw Error(ErrorCode::NotSupported, *unavailable(comm.get()));
}

}  // namespace mscclpp::exec
