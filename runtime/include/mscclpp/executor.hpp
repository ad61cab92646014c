// The executor: runs an execution plan for one rank on the chosen backend (seed 004:
// `Executor(communicator)` then `execute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype,
// plan, stream)`).
//
// Backends (MSCCLPP_BACKEND=auto|cuda|cpu; auto: cuda when a CUDA device is visible, else cpu
// with one INFO line):
//  * cpu: the op interpreter on host threads (one per plan threadblock, a persistent pool per
//    execution context). User buffers are ordinary host memory; the executor stages them through
//    shared memory (copy in, run, copy out), so execute() has completed when it returns and the
//    stream argument is not used. Ranks may be threads of one process or processes on one host.
//  * cuda: the same interpreter as a CUDA kernel, one launch per call (one block per plan
//    threadblock) enqueued on `stream` with no host synchronisation: user buffers are device
//    memory, used in place where the plan allows (peers reach them through CUDA IPC, or directly
//    for ranks that are threads of this process). Calls may be captured into CUDA graphs once their
//    context exists (run each call once before capturing). Ranks may share one GPU (threads of one
//    process, or processes). A launch that fails on the device (a wait passed MSCCLPP_TIMEOUT_S) is
//    reported by the next call on its context, or by pollAsyncError(). docs/cuda-backend.md.
//
// Contexts: CPU: one per (plan, rank, send/recv sizes); CUDA: one per (plan, rank, send/recv
// buffers and sizes). Built on first use (a collective step: every rank must make the same calls in
// the same order, as NCCL requires, and on CUDA change its buffers when the others do) and cached
// (MSCCLPP_EXEC_CONTEXT_CACHE entries per executor, least recently used dropped beyond it).
//
// Reduce ops: sum, prod, max, min natively; avg = sum, then the output divided by the number of
// ranks; premulsum = each input multiplied by `scalar` (one element of dtype in host memory)
// before the plan runs. A plan whose only reduce op is sum serves every op; a plan written with
// another op serves only that op (docs/executor.md).
//
// In-place plans serve out-of-place calls: the send buffer is copied to where the plan expects
// its input (allgather: recv + rank * sendBytes; others: recv).
//
// Plans: ExecutionPlan(path) loads and validates one plan file (MSCCL++'s name; throws
// Error(InvalidPlan) naming the file and the problem); plans may also come from the registry
// (plan_api.h). An ExecutionPlan is immutable and cheap to copy; one plan may serve many executors.
//
// Thread-safety: one Executor per rank; its execute() calls are serialised internally. Errors are
// mscclpp::Error: Timeout (a wait passed MSCCLPP_TIMEOUT_S; the message names rank, threadblock,
// op and what it waited for), Aborted (another rank failed), NotSupported (this plan cannot serve
// the call: refused before this rank exchanged anything, from facts every rank shares; tryExecute
// returns the same reason as a value), InvalidArgument (bad arguments).
#ifndef MSCCLPP_EXECUTOR_HPP_
#define MSCCLPP_EXECUTOR_HPP_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "mscclpp/datatype.hpp"
#include "mscclpp/export.h"

namespace mscclpp {

class Communicator;
namespace plan {
struct Plan;
}
namespace exec {
class ContextWiring;
}

enum class Backend { Auto, Cuda, Cpu };

// An execution plan loaded from a JSON file (docs/plan-core.md, plan-format.md).
class MSCCLPP_API ExecutionPlan {
 public:
  explicit ExecutionPlan(const std::string& planPath);

  std::string name() const;
  // "allreduce", "allgather", ... (the plan's "collective").
  std::string collective() const;
  // The message sizes the plan serves, in bytes (allgather: output bytes; others: input bytes).
  size_t minMessageSize() const;
  size_t maxMessageSize() const;
  bool isInPlace() const;

 private:
  friend class Executor;
  std::shared_ptr<const plan::Plan> plan_;
};

// MSCCLPP_BACKEND resolved: Cuda or Cpu (auto logs its choice once at INFO).
MSCCLPP_API Backend resolveBackend();
MSCCLPP_API const char* backendName(Backend b);  // "auto", "cuda", "cpu"

class MSCCLPP_API Executor {
 public:
  // Ranks are the communicator's; buffers and semaphores are exchanged through it (CPU backend:
  // host shared memory, so every rank must be on this host).
  explicit Executor(std::shared_ptr<Communicator> comm);
  // Ranks wired by `wiring` (the emulator's shared-memory world; tests). Not exported.
  MSCCLPP_INTERNAL Executor(std::shared_ptr<exec::ContextWiring> wiring, Backend backend = Backend::Auto);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // stream: a cudaStream_t for the cuda backend (ignored by cpu). recvBuff may be null on
  // non-root ranks of a reduce or gather, sendBuff on non-root ranks of a scatter (NCCL's rules).
  void execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes, DataType dtype,
               const ExecutionPlan& plan, void* stream = nullptr, PacketType packetType = PacketType::LL16,
               ReduceOp op = ReduceOp::Sum, const void* scalar = nullptr);
  // The same with a plan of the runtime's own (the registry, the NCCL shim). Not exported.
  MSCCLPP_INTERNAL void execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                                DataType dtype, const std::shared_ptr<const plan::Plan>& plan, void* stream = nullptr,
                                PacketType packetType = PacketType::LL16, ReduceOp op = ReduceOp::Sum,
                                const void* scalar = nullptr);
  // execute() for callers that decide on a refusal (the NCCL shim falls back to the real NCCL): the reason the
  // plan cannot serve the call (the message execute() throws as Error(NotSupported)) is returned, nullopt when the
  // call ran. A refusal comes before this rank exchanged or enqueued anything for the call, from facts every rank
  // shares (plan, sizes, datatype, op, hosts, the backend's availability), so every rank refuses alike; every
  // other failure is thrown as execute() throws it. One pass: execute() is this call plus the throw. Not exported.
  MSCCLPP_INTERNAL std::optional<std::string> tryExecute(int rank, const void* sendBuff, void* recvBuff,
                                                         size_t sendBytes, size_t recvBytes, DataType dtype,
                                                         const std::shared_ptr<const plan::Plan>& plan,
                                                         void* stream = nullptr,
                                                         PacketType packetType = PacketType::LL16,
                                                         ReduceOp op = ReduceOp::Sum, const void* scalar = nullptr);

  // For callers that agree with their peers on the plan of a call before executing it (the NCCL shim does, at
  // the first call of each shape): the call monitor counts the agreement as the start of that call, so a peer that
  // already runs it while this rank agrees is told apart from a late peer. collective: plan::Collective; op and
  // root: -1 when the collective has none. The next execute() goes on with the same call; endAgreement() ends it
  // when no plan runs it (the real NCCL does). Both do nothing on the CUDA backend.
  void beginAgreement(int collective, size_t sendBytes, size_t recvBytes, DataType dtype, int op, int root);
  void endAgreement();

  Backend backend() const;
  // Execution contexts currently cached.
  size_t contextCount() const;
  // Whether execute() with these arguments would first build its execution context: a collective
  // step, which returns only once every rank of the plan reached it. A thread that drives several
  // ranks (one thread, several communicators in a group) must then make their calls from threads of
  // their own. A cache lookup: no allocation, no message, no CUDA call. Takes the runtime's own
  // plan (the NCCL shim asks): not exported.
  MSCCLPP_INTERNAL bool wouldBuildContext(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                                          size_t recvBytes, DataType dtype,
                                          const std::shared_ptr<const plan::Plan>& plan,
                                          ReduceOp op = ReduceOp::Sum) const;
  // Stops this executor for good (any thread, any time; for ncclCommAbort/Revoke): the CPU launch
  // in flight stops within a backoff period and its execute() throws Error(Aborted); every later
  // execute() throws Error(Aborted) at once. CUDA launches already enqueued are not recalled: they
  // end when their waits complete or pass MSCCLPP_TIMEOUT_S.
  void abort();
  bool aborted() const;
  // Whether a CPU launch of this executor is running now (diagnostics; abort() reaches it).
  bool launchInFlight() const;
  // CUDA backend: whether an earlier launch failed on the device without a call having reported it
  // yet. Checks without synchronising (a read of host-mapped memory per context); on a failure it
  // drops that context and returns true with its diagnosis in *message (which synchronises with the
  // failed launch's stream). The CPU backend reports every failure from execute(): always false.
  bool pollAsyncError(std::string* message);

 private:
  struct MSCCLPP_INTERNAL Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_EXECUTOR_HPP_
