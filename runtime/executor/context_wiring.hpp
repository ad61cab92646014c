// How an execution context gets its cross-rank resources (rank_resources.hpp). Two wirings:
//  * LocalWorldWiring: ranks are threads of this process; every rank's memory lives in one
//    shared-memory LocalWorld per (plan, sizes) (the emulator and unit tests; no sockets).
//  * CommunicatorWiring: ranks are the communicator's (processes of one host for the CPU
//    backend): each rank allocates shared host memory, registers it (Transport::HostShm) and
//    exchanges it and a directory of offsets with every other rank over the bootstrap.
//
// connect() is collective: every rank of the plan calls it for the same (plan, sizes) in the same
// order. Thread-safety: LocalWorldWiring may be called from all rank threads at once;
// CommunicatorWiring by its rank's thread only.
#ifndef MSCCLPP_EXECUTOR_CONTEXT_WIRING_HPP_
#define MSCCLPP_EXECUTOR_CONTEXT_WIRING_HPP_

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "executor/rank_resources.hpp"
#include "plan/plan.hpp"

namespace mscclpp {
class Communicator;
}

namespace mscclpp::exec {

class LocalWorld;

class ContextWiring {
 public:
  virtual ~ContextWiring() = default;
  // Ranks in this wiring's world.
  virtual int worldSize() const = 0;
  virtual RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape) = 0;
  // The communicator behind this wiring (the CUDA backend exchanges device memory through it);
  // null for wirings without one.
  virtual std::shared_ptr<Communicator> communicator() const { return nullptr; }
};

class LocalWorldWiring : public ContextWiring {
 public:
  explicit LocalWorldWiring(int nRanks) : nRanks_(nRanks) {}
  int worldSize() const override { return nRanks_; }
  RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape) override;

 private:
  struct Entry {
    std::shared_ptr<LocalWorld> world;
    int connected = 0;
  };
  int nRanks_;
  std::mutex mutex_;
  // One world per context key (plan, the plan's input and output bytes, the call's part bytes, the element
  // size), until every rank connected to it: padded calls of different counts share the plan's sizes (the part
  // tells them apart), and the executor keeps one context per element size (each rank connects once per key).
  std::map<std::tuple<const plan::Plan*, uint64_t, uint64_t, uint64_t, size_t>, Entry> pending_;
};

class CommunicatorWiring : public ContextWiring {
 public:
  explicit CommunicatorWiring(std::shared_ptr<Communicator> comm);
  int worldSize() const override;
  RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape) override;
  std::shared_ptr<Communicator> communicator() const override { return comm_; }

 private:
  std::shared_ptr<Communicator> comm_;
  uint64_t sequence_ = 0;  // contexts built so far: the tag of the next exchange
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CONTEXT_WIRING_HPP_
