// The CPU backend (backend.hpp): one Executor's CPU contexts, one per plan,
// rank and call sizes, built through the executor's wiring on first use.
// A call copies the send buffer into the context's shared memory, runs the
// plan's threadblocks on host threads and copies the output back, scaling
// for premulsum and avg. execute() has completed when it returns.
// Thread-safety: one thread at a time (the Executor serialises execute());
// abort through the executor's LaunchAbort from any thread.
#ifndef MSCCLPP_EXECUTOR_CPU_CPU_BACKEND_HPP_
#define MSCCLPP_EXECUTOR_CPU_CPU_BACKEND_HPP_

#include <map>
#include <memory>
#include <string>

#include "executor/backend.hpp"
#include "executor/call_descriptor.hpp"
#include "executor/context_cache.hpp"
#include "executor/cpu/context_wiring.hpp"
#include "executor/cpu/cpu_context.hpp"
#include "executor/launch_abort.hpp"
#include "executor/segment_binding.hpp"

namespace mscclpp {
class Communicator;
}

namespace mscclpp::exec {

class CallMonitor;

class CpuBackend final : public ExecutionBackend {
 public:
  // `abort` and `monitor` belong to the executor and outlive this backend.
  // monitor: null unless the executor is on a communicator.
  CpuBackend(std::shared_ptr<ContextWiring> wiring, LaunchAbort& abort, CallMonitor* monitor);

  Refusal execute(const ExecCall& call) override;
  bool hasContext(const ExecCall& call) override { return cache_.find(keyOf(call)) != nullptr; }
  size_t contextCount() const override { return cache_.size(); }
  bool pollError(std::string*) override { return false; }  // execute() reports every failure

 private:
  // The datatype and op are part of the key. Ranks calling with different
  // ones use different contexts, which never complete each other's calls,
  // so the call monitor finds the mismatch instead of the data mixing.
  // The element size also shapes the geometry of the same bytes.
  struct Key {
    plan::PlanPtr plan;  // keeps the plan (compared by address) alive while its context lives
    int rank;
    uint64_t inputBytes, outputBytes;
    DataType dtype;
    ReduceOp op;
    bool operator==(const Key& o) const {
      return plan.get() == o.plan.get() && rank == o.rank && inputBytes == o.inputBytes &&
             outputBytes == o.outputBytes && dtype == o.dtype && op == o.op;
    }
  };
  // A variable-size plan's context serves every call up to its capacity,
  // which the counts decide alike on every rank (host counts: the CPU
  // backend refuses others before it looks).
  static Key keyOf(const ExecCall& c) {
    if (c.plan->header.variableSizes && c.counts != nullptr && !c.countsOnDevice) {
      const uint64_t capacity = variableCapacity(*c.plan, c.counts, dataTypeSize(c.dtype));
      return Key{c.plan, c.rank, capacity, capacity, c.dtype, c.op};
    }
    return Key{c.plan, c.rank, c.sendBytes, c.recvBytes, c.dtype, c.op};
  }
  // Variable-size plans: binds the call's counts and returns the bytes to
  // copy in and out. Throws InvalidArgument when they do not fit.
  void bindCounts(const ExecCall& call, CpuContext& ctx, uint64_t* inBytes, uint64_t* outBytes);
  // Builds the call's context (collective: every rank of the plan) and caches it.
  CpuContext& build(const ExecCall& call, const CallShape& shape, const CallDescriptor& descriptor);
  void run(const ExecCall& call, CpuContext& ctx);
  void launch(const ExecCall& call, CpuContext& ctx);

  std::shared_ptr<ContextWiring> wiring_;
  std::shared_ptr<Communicator> comm_;  // null for wirings without one (the emulator's threads)
  LaunchAbort& abort_;
  CallMonitor* monitor_;
  ContextCache<Key, CpuContext> cache_;
  PlanFingerprints fingerprints_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_CPU_BACKEND_HPP_
