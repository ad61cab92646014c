// The reduce ops a communicator's user created. Each
// exists in both worlds: our scalar for plans, and the
// real NCCL's handle for the fallback, so a call with
// a user op can go either way. Handles are at least
// ncclNumOps and carry a per-communicator salt: as in
// NCCL, another communicator's handle is rejected.
//
// Threads: the communicator's driving thread. Lookups do not allocate.
#ifndef MSCCLPP_NCCL_SHIM_USER_RED_OPS_HPP_
#define MSCCLPP_NCCL_SHIM_USER_RED_OPS_HPP_

#include <nccl.h>

#include <cstdint>
#include <vector>

#include "rank_link.hpp"

namespace mscclpp::shim {

struct UserRedOp {
  ncclDataType_t dtype = ncclFloat32;
  ExecReduceOp exec;             // what a plan applies
  ncclRedOp_t realOp = ncclSum;  // the real NCCL's handle
  bool hasRealOp = false;
  bool inUse = false;
};

class UserRedOps {
 public:
  explicit UserRedOps(uint32_t salt);

  // Adds an op and returns its handle.
  ncclRedOp_t add(const UserRedOp& op);
  // The op behind handle; nullptr unless
  // it is a live op of this communicator.
  const UserRedOp* find(int handle) const;
  // Removes it; false unless it is a live op of this communicator.
  bool remove(int handle, UserRedOp* removed);
  // Every live op.
  std::vector<UserRedOp> live() const;

 private:
  int slotOf(int handle) const;

  uint32_t salt_;
  std::vector<UserRedOp> slots_;
};

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_USER_RED_OPS_HPP_
