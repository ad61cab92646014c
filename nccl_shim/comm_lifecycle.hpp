// A communicator's life: init, split or shrink, then finalize,
// revoke, destroy or abort, each with NCCL 2.28's checks and
// results, and the same done to the real NCCL's twin.
//
// Inside a group, init waits for the outermost ncclGroupEnd,
// where the thread's deferred inits run together: one thread
// may create several ranks. Outside one, a nonblocking init
// runs on a background thread and returns ncclInProgress.
#ifndef MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_

#include <nccl.h>

namespace mscclpp::shim {

class Comm;

// Our bootstrap's id. The real NCCL's own id travels over our bootstrap.
void getUniqueId(ncclUniqueId* out);

// The body of ncclCommInitRank and its variants. Of the
// ids every rank passes, the first serves: one root
// serves any number of ranks. Returns ncclSuccess, or
// ncclInProgress when nonblocking; throws on failure.
ncclResult_t initRank(ncclComm_t* newcomm, int nRanks, const ncclUniqueId* ids, int nIds, int rank,
                      const ncclConfig_t* config, const char* opName);

// ncclCommInitAll: ndev ranks of this process, created together.
void initAll(ncclComm_t* comms, int ndev, const int* devlist);

// Every parent rank calls it; NCCL_SPLIT_NOCOLOR
// ranks get NULL. New ranks are ordered by key,
// then parent rank. Deferred inside a group.
void splitComm(Comm* parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config);
// Called by every rank not excluded; those may
// be gone. New ranks keep the parents' order.
void shrinkComm(Comm* parent, const int* excludeRanks, int excludeCount, ncclComm_t* newcomm,
                const ncclConfig_t* config, int shrinkFlags);

void finalizeComm(Comm* comm);
void revokeComm(Comm* comm, int revokeFlags);
// Both free the communicator and log its summary
// at INFO. Abort stops work in flight first, and
// returns promptly even when peers are gone.
void destroyComm(Comm* comm);
void abortComm(Comm* comm);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_COMM_LIFECYCLE_HPP_
