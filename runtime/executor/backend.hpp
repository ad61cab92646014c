// The Executor's backends as peers behind one interface: CpuBackend runs the
// op interpreter on host threads, GpuBackend launches one kernel per call.
// The Executor checks a call's arguments, then hands it to its backend. Each
// backend keeps its contexts in a ContextCache (context_cache.hpp).
// Thread-safety: one thread at a time (the Executor serialises execute()).
#ifndef MSCCLPP_EXECUTOR_BACKEND_HPP_
#define MSCCLPP_EXECUTOR_BACKEND_HPP_

#include <cstddef>
#include <memory>
#include <string>

#include "executor/native_program.hpp"
#include "executor/refusal.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// One Executor::execute call, its arguments checked.
struct ExecCall {
  int rank = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t sendBytes = 0, recvBytes = 0;
  DataType dtype = DataType::Float32;
  std::shared_ptr<const plan::Plan> plan;
  void* stream = nullptr;  // cudaStream_t (the CPU backend does not use it)
  PacketType packet = PacketType::LL16;
  ReduceOp op = ReduceOp::Sum;
  const void* scalar = nullptr;
  // A native algorithm: its kernel runs instead of the interpreter; plan is
  // native->plan. Null for a plan.
  NativeProgramPtr native;
  // Variable-size plans: the count matrix (host or device memory).
  const uint64_t* counts = nullptr;
  bool countsOnDevice = false;
};

class ExecutionBackend {
 public:
  virtual ~ExecutionBackend() = default;
  // Runs the call, or returns why it refuses it (before anything of the call is exchanged or enqueued).
  virtual Refusal execute(const ExecCall& call) = 0;
  // Whether the call's context exists; else execute() builds it with the
  // plan's other ranks. No CUDA call, no communication.
  virtual bool hasContext(const ExecCall& call) = 0;
  // Execution contexts cached now.
  virtual size_t contextCount() const = 0;
  // Looks, without synchronising, for a context whose failed launch no call
  // reported yet. If one did, drops it and returns true with its diagnosis.
  // Always false on the CPU, where execute() reports every failure.
  virtual bool pollError(std::string* message) = 0;
};

// Whether the collective writes a result into this rank's output (reduce and gather: the root only).
inline bool writesOutput(plan::Collective c, int rank, int root) {
  return (c != plan::Collective::Reduce && c != plan::Collective::Gather) || rank == root;
}
// Whether the collective reads this rank's input (scatter: the root only; NCCL passes NULL elsewhere).
inline bool readsInput(plan::Collective c, int rank, int root) {
  return c != plan::Collective::Scatter || rank == root;
}

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_BACKEND_HPP_
