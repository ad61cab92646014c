// A communicator's life: creation (unique id, init, split, shrink), then finalize, revoke, destroy, abort.
// Each follows NCCL 2.28's argument checks and results and carries the real NCCL's twin along.
//
// Blocking init outside a group completes before returning. Inside a group it is deferred to the outermost
// ncclGroupEnd, where every deferred init of the thread runs concurrently (one thread may create several
// ranks). A nonblocking init outside a group runs on a background thread and returns ncclInProgress.
#ifndef MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_

#include <nccl.h>

namespace mscclpp::shim {

class Comm;

void getUniqueId(ncclUniqueId* out);

// The body of ncclCommInitRank / ncclCommInitRankConfig / ncclCommInitRankScalable (ids[0..nIds) are the ids
// every rank passes; we use the first: one root serves any number of ranks). Returns ncclSuccess or, for a
// nonblocking init, ncclInProgress; throws on a failure.
ncclResult_t initRank(ncclComm_t* newcomm, int nRanks, const ncclUniqueId* ids, int nIds, int rank,
                      const ncclConfig_t* config, const char* opName);

// ncclCommInitAll: ndev ranks in this process, created together.
void initAll(ncclComm_t* comms, int ndev, const int* devlist);

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
