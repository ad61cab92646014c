// The CUDA backend as the Executor sees it: one per Executor (one rank), holding that rank's GPU
// execution contexts (an LRU cache of MSCCLPP_EXEC_CONTEXT_CACHE entries keyed by plan, rank and
// the call's buffers) and running calls on them. CUDA builds implement it (gpu_backend.cc); other
// builds have a stub whose create() says there is no GPU backend.
//
// A call whose context exists is enqueued on the caller's stream with no host synchronisation and
// no allocation, also while the stream is captured into a CUDA graph. A call that needs a new
// context builds it collectively (every rank of the plan makes the same calls in the same order);
// that cannot happen during capture: such a call is refused with Error(NotSupported) telling the
// user to run it once before capturing.
//
// Thread-safety: one thread at a time (the Executor serialises execute()).
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_

#include <cstddef>
#include <memory>
#include <string>

#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp {
class Communicator;
}

namespace mscclpp::exec {

struct GpuCall {
  int rank = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t sendBytes = 0, recvBytes = 0;
  DataType dtype = DataType::Float32;
  std::shared_ptr<const plan::Plan> plan;
  void* stream = nullptr;  // cudaStream_t
  PacketType packet = PacketType::LL16;
  ReduceOp op = ReduceOp::Sum;
  const void* scalar = nullptr;
};

class GpuBackend {
 public:
  // Throws Error(NotSupported) in builds without CUDA and when the communicator has no device.
  static std::unique_ptr<GpuBackend> create(std::shared_ptr<Communicator> comm);
  virtual ~GpuBackend() = default;

  virtual void execute(const GpuCall& call) = 0;
  // Whether the call's context exists (else execute() builds it, collectively). No CUDA call.
  virtual bool hasContext(const GpuCall& call) = 0;
  virtual size_t contextCount() const = 0;
  // Looks (without synchronising) for a context whose launch failed; if one did, drops it and
  // returns true with its diagnosis (this synchronises with the failed launch's stream).
  virtual bool pollError(std::string* message) = 0;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_BACKEND_HPP_
