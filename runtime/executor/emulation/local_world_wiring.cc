#include "executor/emulation/local_world_wiring.hpp"

#include "core/enforce.hpp"
#include "executor/emulation/local_world.hpp"

namespace mscclpp::exec {

// Ranks as threads of one test or emulation share one world per plan and
// sizes. Their calls are not compared: the emulator drives all alike.
RankResources LocalWorldWiring::connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                                        const CallDescriptor&) {
  MSCCLPP_ENFORCE(static_cast<int>(plan->ranks.size()) == nRanks_, ErrorCode::InvalidArgument,
                  "plan %s has %zu ranks; this world has %d", plan->header.name.c_str(), plan->ranks.size(), nRanks_);
  std::shared_ptr<LocalWorld> world;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto key =
        std::make_tuple(plan.get(), shape.inputBytes, shape.outputBytes, shape.geometry.partBytes, shape.elementBytes);
    Entry& e = pending_[key];
    // Element checks already passed in the caller's shapeCall: size the world bytewise.
    if (!e.world) e.world = std::make_shared<LocalWorld>(plan, shape.inputBytes, shape.outputBytes, DataType::Uint8);
    world = e.world;
    if (++e.connected == nRanks_) pending_.erase(key);
  }
  // The ranks share the world's abort flag: one rank's timeout stops them all promptly.
  RankResources res = world->resources(rank);
  res.keepAlive = world;
  return res;
}

}  // namespace mscclpp::exec
