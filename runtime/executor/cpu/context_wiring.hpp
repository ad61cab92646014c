// How a CPU execution context gets its cross-rank resources (rank_resources.hpp). Two wirings:
//  * CommunicatorWiring (here): ranks are the communicator's (processes of one host, or hosts
//    joined by port channels): each rank allocates shared host memory, registers it
//    (Transport::HostShm) and exchanges it and a directory of offsets with every other rank over
//    the bootstrap.
//  * LocalWorldWiring (the emulator library, emulation/local_world_wiring.hpp): ranks are threads of
//    this process; every rank's memory lives in one shared-memory LocalWorld (no sockets).
//
// connect() is collective: every rank of the plan calls it for the same (plan, sizes) in the same
// order. Thread-safety: CommunicatorWiring by its rank's thread only.
#ifndef MSCCLPP_EXECUTOR_CPU_CONTEXT_WIRING_HPP_
#define MSCCLPP_EXECUTOR_CPU_CONTEXT_WIRING_HPP_

#include <memory>

#include "executor/call_descriptor.hpp"
#include "executor/rank_resources.hpp"
#include "executor/refusal.hpp"
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
  // `call` is the call building the context: wirings that exchange with peers check that every rank
  // builds it for the same call (Error(InvalidUsage) naming both ranks' calls otherwise).
  virtual RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                                const CallDescriptor& call) = 0;
  // Why this wiring cannot connect the plan's ranks (asked before connect(), which throws it as
  // Error(NotSupported)); from the plan and facts every rank shares, so all ranks refuse alike.
  virtual Refusal refusal(const plan::Plan&) const { return std::nullopt; }
  // The communicator behind this wiring (the CUDA backend exchanges device memory through it);
  // null for wirings without one.
  virtual std::shared_ptr<Communicator> communicator() const { return nullptr; }
};

class CommunicatorWiring : public ContextWiring {
 public:
  explicit CommunicatorWiring(std::shared_ptr<Communicator> comm);
  int worldSize() const override;
  RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                        const CallDescriptor& call) override;
  // Load/store access (memory channels, switch channels, memory-channel remote buffers) between ranks on
  // different hosts, checked for every rank's declarations.
  Refusal refusal(const plan::Plan& plan) const override;
  std::shared_ptr<Communicator> communicator() const override { return comm_; }

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Bootstrap> bootstrap_;  // the executor's exchanges; aborted when the communicator fails
  std::shared_ptr<void> failureHook_;
  uint64_t sequence_ = 0;  // contexts built so far: the tag of the next exchange
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_CONTEXT_WIRING_HPP_
