// The CUDA backend (backend.hpp), a peer of the CPU backend: one per Executor (one rank), holding that rank's GPU
// execution contexts (an LRU cache of MSCCLPP_EXEC_CONTEXT_CACHE entries keyed by plan, rank and
// the call's buffers) and running calls on them. CUDA builds implement it (gpu_backend.cc); other
// builds have a stub whose create() says there is no GPU backend.
//
// A call whose context exists is enqueued on the caller's stream with no host synchronisation and
// no allocation, also while the stream is captured into a CUDA graph. A call that needs a new
// context builds it collectively (every rank of the plan makes the same calls in the same order);
// that cannot happen during capture: such a call is refused (backend.hpp: Refusal) telling the user to
// run it once before capturing.
//
// With a call monitor (an Executor on a Communicator), every call gets its number and descriptor at
// enqueue (CallMonitor::begin: a few stores) and, when it enqueued work, a completion mark on its
// stream after that work (call_completion.hpp); the monitor then counts the call in progress until
// the stream passes the mark, and compares it with the peers' calls of the same number when it is
// stuck (mismatched calls fail the communicator, which raises the abort flags the kernels poll).
//
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
  // Why there is no GPU backend for `comm` (a build without CUDA, no visible device, a communicator built without
  // one), or nullopt. A null `comm` checks the build and the devices only.
  static Refusal unavailable(const Communicator* comm);
  // Throws unavailable()'s refusal as Error(NotSupported). `monitor` (null: none) belongs to the executor and
  // outlives the backend.
  static std::unique_ptr<GpuBackend> create(std::shared_ptr<Communicator> comm, CallMonitor* monitor = nullptr);
  // pollError synchronises with the failed launch's stream when it finds one.
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_
