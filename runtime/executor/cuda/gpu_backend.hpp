// The CUDA backend (backend.hpp): one per Executor, holding that rank's GPU
// contexts in an LRU cache keyed by plan, rank and the call's buffers.
// A call on a cached context is enqueued on the caller's stream with no host
// synchronisation or allocation, also during graph capture. A call that needs
// a new context builds it collectively, so it is refused during capture.
// With a call monitor, each call also gets a completion mark on its stream.
// Builds without CUDA link a stub whose create() refuses.
// Thread-safety: one thread at a time (the Executor serialises execute()).
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_

#include <cstddef>
#include <memory>
#include <string>

#include "executor/backend.hpp"

namespace mscclpp {
class Communicator;
}

namespace mscclpp::exec {

class CallMonitor;

using GpuCall = ExecCall;

class GpuBackend : public ExecutionBackend {
 public:
  // Why there is no GPU backend for `comm`, or nullopt. A null `comm`
  // checks the build and the devices only.
  static Refusal unavailable(const Communicator* comm);
  // Throws unavailable()'s refusal as Error(NotSupported). `monitor`, if
  // any, belongs to the executor and outlives the backend.
  static std::unique_ptr<GpuBackend> create(std::shared_ptr<Communicator> comm, CallMonitor* monitor = nullptr);
  // pollError synchronises with the failed launch's stream when it finds one.
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_
