// The rest of a communicator's life after init: split and shrink (children), finalize, revoke, destroy, abort.
// Each follows NCCL 2.28's argument checks and results; the real NCCL's twin is carried along (split and shrink
// create the real child too, teardown ends the real communicator).
#ifndef MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_

#include <nccl.h>

namespace mscclpp::shim {

class Comm;

// All parent ranks call it; ranks with NCCL_SPLIT_NOCOLOR get NULL; new ranks ordered by key, then parent rank.
// Deferred to the group end inside a group.
void splitComm(Comm* parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config);
// Called by every rank not in excludeRanks (those may be gone); new ranks keep the parents' order.
void shrinkComm(Comm* parent, const int* excludeRanks, int excludeCount, ncclComm_t* newcomm,
                const ncclConfig_t* config, int shrinkFlags);

void finalizeComm(Comm* comm);
void revokeComm(Comm* comm, int revokeFlags);
// Frees the communicator (logs its per-collective summary at INFO). destroy finishes quietly; abort stops
// in-flight work first and returns promptly even when peers are gone.
void destroyComm(Comm* comm);
void abortComm(Comm* comm);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_
