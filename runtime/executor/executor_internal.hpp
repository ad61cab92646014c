// The Executor of the runtime's own code (the NCCL shim, the C API, tools and tests): the public
// one plus the calls that take the runtime's types, which the public header does not name.
// Thread-safety as Executor's.
#ifndef MSCCLPP_EXECUTOR_EXECUTOR_INTERNAL_HPP_
#define MSCCLPP_EXECUTOR_EXECUTOR_INTERNAL_HPP_

#include <memory>
#include <optional>
#include <string>

#include "core/visibility.hpp"
#include "executor/native_program.hpp"
#include "mscclpp/executor.hpp"
#include "plan/plan.hpp"

namespace mscclpp {

struct MSCCLPP_INTERNAL ExecutionPlan::Impl {
  plan::PlanPtr plan;
};

}  // namespace mscclpp

namespace mscclpp::exec {

class ContextWiring;

class RuntimeExecutor : public Executor {
 public:
  explicit RuntimeExecutor(std::shared_ptr<Communicator> comm) : Executor(std::move(comm)) {}
  // Ranks wired by `wiring`: the emulator's shared-memory world, tests.
  explicit RuntimeExecutor(std::shared_ptr<ContextWiring> wiring, Backend backend = Backend::Auto);

  using Executor::execute;
  // execute() with a plan of the runtime's own: the registry's, the C API's.
  void execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes, DataType dtype,
               const plan::PlanPtr& plan, void* stream = nullptr, PacketType packetType = PacketType::LL16,
               ReduceOp op = ReduceOp::Sum, const void* scalar = nullptr);
  // execute() for callers that decide on a refusal (the NCCL shim falls back to the real NCCL):
  // the reason the plan cannot serve the call, nullopt when the call ran. A refusal comes before
  // this rank exchanged or enqueued anything, from facts every rank shares, so every rank refuses
  // alike. Other failures are thrown; execute() is this call plus the throw.
  std::optional<std::string> tryExecute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                                        size_t recvBytes, DataType dtype, const plan::PlanPtr& plan,
                                        void* stream = nullptr, PacketType packetType = PacketType::LL16,
                                        ReduceOp op = ReduceOp::Sum, const void* scalar = nullptr);
  // tryExecute with a native algorithm's program: its kernel runs on the
  // context its plan declares, exactly as a plan's interpreter would.
  std::optional<std::string> tryExecute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                                        size_t recvBytes, DataType dtype, const NativeProgramPtr& native,
                                        void* stream = nullptr, ReduceOp op = ReduceOp::Sum,
                                        const void* scalar = nullptr);
  // tryExecute() on a variable-size plan with the call's counts (SplitSizes).
  std::optional<std::string> tryExecuteVariable(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                                                size_t recvBytes, DataType dtype, const plan::PlanPtr& plan,
                                                const SplitSizes& splits, void* stream = nullptr,
                                                PacketType packetType = PacketType::LL16, ReduceOp op = ReduceOp::Sum,
                                                const void* scalar = nullptr);
  // Whether execute() with these arguments would first build its context: a collective step that
  // returns once every rank reached it. A thread that drives several ranks must then make their
  // calls from threads of their own. A cache lookup: no allocation, message or CUDA call.
  bool wouldBuildContext(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                         DataType dtype, const plan::PlanPtr& plan, ReduceOp op = ReduceOp::Sum) const;
  bool wouldBuildContext(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                         DataType dtype, const NativeProgramPtr& native, ReduceOp op = ReduceOp::Sum) const;

  // For callers that agree with their peers on a call's plan before running it, as the NCCL shim
  // does at the first call of each shape. The call monitor counts the agreement as the start of
  // the call, so a peer already running it is told apart from a late one. collective is a
  // plan::Collective; op and root are -1 when the collective has none. The next execute() goes on
  // with the same call; endAgreement() ends it when no plan runs it. No-ops on the CUDA backend.
  void beginAgreement(int collective, size_t sendBytes, size_t recvBytes, DataType dtype, int op, int root);
  void endAgreement();

 private:
  static std::unique_ptr<Impl> wiredImpl(std::shared_ptr<ContextWiring> wiring, Backend backend);
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EXECUTOR_INTERNAL_HPP_
