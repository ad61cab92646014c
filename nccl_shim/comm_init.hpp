// Communicator creation: ncclGetUniqueId, ncclCommInitRank(Config), ncclCommInitRankScalable, ncclCommInitAll.
//
// One unique id serves both worlds: it is our bootstrap's id (the root's address and a secret); the real NCCL's
// id is made by rank 0 after our rendezvous and broadcast over our bootstrap (FallbackComm).
//
// Blocking init outside a group completes before returning; inside a group it is deferred to the outermost
// ncclGroupEnd, where every deferred init of the thread runs concurrently (so one thread can create several
// ranks); a nonblocking init (config->blocking = 0) outside a group runs on a background thread and returns
// ncclInProgress: the handle is valid at once and ncclCommGetAsyncError reports ncclInProgress until it is
// done.
#ifndef MSCCLPP_NCCL_SHIM_COMM_INIT_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_INIT_HPP_

#include <nccl.h>

namespace mscclpp::shim {

void getUniqueId(ncclUniqueId* out);

// The body of ncclCommInitRank / ncclCommInitRankConfig / ncclCommInitRankScalable (ids[0..nIds) are the ids
// every rank passes; we use the first: one root serves any number of ranks). Returns ncclSuccess or, for a
// nonblocking init, ncclInProgress; throws on a failure.
ncclResult_t initRank(ncclComm_t* newcomm, int nRanks, const ncclUniqueId* ids, int nIds, int rank,
                      const ncclConfig_t* config, const char* opName);

// ncclCommInitAll: ndev ranks in this process, created together.
void initAll(ncclComm_t* comms, int ndev, const int* devlist);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_COMM_INIT_HPP_
