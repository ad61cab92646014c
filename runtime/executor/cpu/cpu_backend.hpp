// The CPU backend (backend.hpp): one Executor's CPU execution contexts (cpu_context.hpp), one per
// (plan, rank, send/recv sizes), built through the executor's wiring (context_wiring.hpp) on first
// use and kept in a ContextCache. A call stages the user's send buffer into the context's shared
// memory (pre-scaled for premulsum), launches the plan's threadblocks on host threads, divides for
// avg, and stages the output back: execute() has completed when it returns.
//
// Thread-safety: one thread at a time (the Executor serialises execute()); abort through the
// executor's LaunchAbort from any thread.
#ifndef MSCCLPP_EXECUTOR_CPU_CPU_BACKEND_HPP_
#define MSCCLPP_EXECUTOR_CPU_CPU_BACKEND_HPP_

#include <memory>

#include "executor/backend.hpp"
#include "executor/context_cache.hpp"
#include "executor/cpu/context_wiring.hpp"
#include "executor/cpu/cpu_context.hpp"
#include "executor/launch_abort.hpp"

namespace mscclpp::exec {

class CpuBackend final : public ExecutionBackend {
 public:
  // `abort` belongs to the executor and outlives this backend.
  CpuBackend(std::shared_ptr<ContextWiring> wiring, LaunchAbort& abort);

  void execute(const ExecCall& call) override;
  size_t contextCount() const override { return cache_.size(); }
  bool pollError(std::string*) override { return false; }  // execute() reports every failure

 private:
  struct Key {
    plan::PlanPtr plan;  // keeps the plan (compared by address) alive while its context lives
    int rank;
    uint64_t inputBytes, outputBytes;
    bool operator==(const Key& o) const {
      return plan.get() == o.plan.get() && rank == o.rank && inputBytes == o.inputBytes && outputBytes == o.outputBytes;
    }
  };
  CpuContext& context(const ExecCall& call);

  std::shared_ptr<ContextWiring> wiring_;
  LaunchAbort& abort_;
  ContextCache<Key, CpuContext> cache_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_CPU_BACKEND_HPP_
