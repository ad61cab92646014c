// How a CPU context gets its cross-rank resources (rank_resources.hpp):
//  * CommunicatorWiring: the communicator's ranks; each allocates shared host
//    memory, registers it and exchanges it over the bootstrap;
//  * LocalWorldWiring, in the emulator library: ranks are threads sharing one
//    LocalWorld mapping.
// connect() is collective: every rank calls it for the same plan and sizes in
// the same order. Thread-safety: CommunicatorWiring by its rank's thread only.
#ifndef MSCCLPP_EXECUTOR_CPU_CONTEXT_WIRING_HPP_
#define MSCCLPP_EXECUTOR_CPU_CONTEXT_WIRING_HPP_

#include <memory>

#include "executor/call_descriptor.hpp"
#include "executor/rank_resources.hpp"
#include "executor/refusal.hpp"
#include "mscclpp/memory.hpp"
#include "plan/plan.hpp"

namespace mscclpp {
class Bootstrap;
class Communicator;
}  // namespace mscclpp

namespace mscclpp::exec {

class ContextWiring {
 public:
  virtual ~ContextWiring() = default;
  // Ranks in this wiring's world.
  virtual int worldSize() const = 0;
  // `call` is the call building the context. Wirings that exchange check
  // that every rank builds for the same call, else Error(InvalidUsage).
  virtual RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                                const CallDescriptor& call) = 0;
  // Why this wiring cannot connect the plan's ranks, from facts all ranks
  // share. Asked before connect(), which throws it as Error(NotSupported).
  virtual Refusal refusal(const plan::Plan&) const { return std::nullopt; }
  // The communicator behind this wiring, or null.
  virtual std::shared_ptr<Communicator> communicator() const { return nullptr; }
};

class CommunicatorWiring : public ContextWiring {
 public:
  explicit CommunicatorWiring(std::shared_ptr<Communicator> comm);
  int worldSize() const override;
  RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                        const CallDescriptor& call) override;
  // Load/store access between ranks on different hosts, in every rank's
  // declarations: memory and switch channels, remote buffers.
  Refusal refusal(const plan::Plan& plan) const override;
  std::shared_ptr<Communicator> communicator() const override { return comm_; }

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Bootstrap> bootstrap_;  // the executor's exchanges; aborted when the communicator fails
  std::shared_ptr<void> failureHook_;
  uint64_t sequence_ = 0;  // contexts built so far: the tag of the next exchange
  // This rank's HCA port for port channels across hosts (Unknown: none, or
  // MSCCLPP_IB_DISABLE); both ends of such a channel must have one.
  Transport nearestIb();
  bool ibKnown_ = false;
  Transport ib_ = Transport::Unknown;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_CONTEXT_WIRING_HPP_
