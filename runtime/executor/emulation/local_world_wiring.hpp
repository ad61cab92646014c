// LocalWorldWiring: the emulator's ContextWiring. Ranks are threads of this
// process; their memory lives in one LocalWorld per plan and sizes.
// Part of the emulator library (tools and tests), not of libmscclpp.so.
// Thread-safety: connect() may be called from all rank threads at once.
#ifndef MSCCLPP_EXECUTOR_EMULATION_LOCAL_WORLD_WIRING_HPP_
#define MSCCLPP_EXECUTOR_EMULATION_LOCAL_WORLD_WIRING_HPP_

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "executor/cpu/context_wiring.hpp"

namespace mscclpp::exec {

class LocalWorld;

class LocalWorldWiring : public ContextWiring {
 public:
  explicit LocalWorldWiring(int nRanks) : nRanks_(nRanks) {}
  int worldSize() const override { return nRanks_; }
  RankResources connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                        const CallDescriptor& call) override;

 private:
  struct Entry {
    std::shared_ptr<LocalWorld> world;
    int connected = 0;
  };
  int nRanks_;
  std::mutex mutex_;
  // One world per context key, until every rank connected to it. The part
  // bytes tell apart padded calls that share the plan's sizes; the element
  // size matches the executor's one context per element size.
  std::map<std::tuple<const plan::Plan*, uint64_t, uint64_t, uint64_t, size_t>, Entry> pending_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EMULATION_LOCAL_WORLD_WIRING_HPP_
