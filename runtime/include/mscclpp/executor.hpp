// The executor: runs an execution plan for one rank, as MSCCL++'s does: `Executor(communicator)`,
// then `execute(rank, send, recv, sendBytes, recvBytes, dtype, plan, stream)`. The backend is
// the CUDA one (a kernel enqueued on `stream`) or the CPU one (host threads; execute() returns
// when done), chosen by MSCCLPP_BACKEND. The first call of a shape builds its execution context:
// a collective step, so every rank makes the same calls in the same order, as NCCL requires.
// docs/cpp-api.md says what a caller must know; docs/executor.md how it works.
//
// Thread-safety: one Executor per rank; its calls are serialised internally. An ExecutionPlan is
// immutable and cheap to copy, and one plan may serve many executors.
#ifndef MSCCLPP_EXECUTOR_HPP_
#define MSCCLPP_EXECUTOR_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "mscclpp/datatype.hpp"
#include "mscclpp/export.h"

namespace mscclpp {

class Communicator;

enum class Backend { Auto, Cuda, Cpu };

// An execution plan loaded from a JSON file (docs/plan-format.md). Throws Error(InvalidPlan)
// naming the file and the problem.
class MSCCLPP_API ExecutionPlan {
 public:
  explicit ExecutionPlan(const std::string& planPath);

  std::string name() const;
  // The plan's "collective": "allreduce", "allgather", ...
  std::string collective() const;
  // The message sizes the plan serves, in bytes: output bytes for allgather, else input bytes.
  size_t minMessageSize() const;
  size_t maxMessageSize() const;
  bool isInPlace() const;

 private:
  friend class Executor;
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// MSCCLPP_BACKEND resolved to Cuda or Cpu; auto logs its choice once at INFO.
MSCCLPP_API Backend resolveBackend();
MSCCLPP_API const char* backendName(Backend b);  // "auto", "cuda", "cpu"

// The counts of a call on a variable-size plan (collective alltoallv, allgatherv or reducescatterv):
// counts[s * nRanks + d] elements go from rank s to rank d, and every rank passes the same matrix
// (docs/plan-format.md, "Variable sizes"). allgatherv sends the same count to every rank,
// reducescatterv receives the same count from every rank. On the CUDA backend the matrix may be device
// memory (onDevice): the kernel reads it when it runs, so a captured call replays with the counts
// written there since. The CPU backend reads host memory.
struct SplitSizes {
  const uint64_t* counts = nullptr;
  bool onDevice = false;
};

class MSCCLPP_API Executor {
 public:
  // Ranks are the communicator's; buffers and semaphores are exchanged through it. The CPU
  // backend uses host shared memory, so every rank must be on this host.
  explicit Executor(std::shared_ptr<Communicator> comm);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // stream: a cudaStream_t for the CUDA backend, unused by the CPU one. As in NCCL, recvBuff may
  // be null on non-root ranks of a reduce or gather, and sendBuff on non-root ranks of a scatter.
  // scalar: premulsum's factor, one element of dtype in host memory. Throws Error: Timeout,
  // Aborted, NotSupported when the plan cannot serve the call, or InvalidArgument; docs/cpp-api.md,
  // "Running a plan", says when.
  void execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes, DataType dtype,
               const ExecutionPlan& plan, void* stream = nullptr, PacketType packetType = PacketType::LL16,
               ReduceOp op = ReduceOp::Sum, const void* scalar = nullptr);

  // A call on a variable-size plan: sendBytes and recvBytes are the buffers' sizes, which the
  // counts' segments must fit; the plan's references take their places and sizes from the counts.
  // In place (sendBuff == recvBuff) is allowed: the input is staged. scalar: premulsum's factor, as
  // above. Throws as execute() above, and InvalidArgument when the counts do not fit the buffers or
  // the plan's scratch slots.
  void execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes, DataType dtype,
               const ExecutionPlan& plan, const SplitSizes& splits, void* stream = nullptr,
               PacketType packetType = PacketType::LL16, ReduceOp op = ReduceOp::Sum, const void* scalar = nullptr);

  Backend backend() const;
  // Execution contexts cached now: MSCCLPP_EXEC_CONTEXT_CACHE at most.
  size_t contextCount() const;
  // Stops this executor for good, from any thread, as ncclCommAbort: the CPU launch in flight
  // stops soon and throws Error(Aborted), as does every later execute(). Enqueued CUDA launches are not
  // recalled: they end when their waits complete or pass MSCCLPP_TIMEOUT_S.
  void abort();
  bool aborted() const;
  // Whether a CPU launch of this executor is running now, for diagnostics.
  bool launchInFlight() const;
  // CUDA backend: whether an earlier launch failed on the device and no call reported it yet.
  // Reads host-mapped memory without synchronising; on a failure it drops that context and
  // puts the diagnosis in *message. The CPU backend reports failures from execute(): false.
  bool pollAsyncError(std::string* message);

 protected:
  // For the runtime's own executor type (runtime/executor/executor_internal.hpp), which adds
  // calls that take the runtime's plan objects. A template, so that only the file where Impl is
  // complete instantiates it.
  struct Impl;
  template <class ImplT>
  explicit Executor(std::unique_ptr<ImplT> impl) : impl_(std::move(impl)) {}
  std::unique_ptr<Impl> impl_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_EXECUTOR_HPP_
