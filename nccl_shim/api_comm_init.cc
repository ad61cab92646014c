// Entry points that create communicators: ncclGetUniqueId, ncclCommInitRank, ncclCommInitRankConfig,
// ncclCommInitRankScalable, ncclCommInitAll (the work is in comm_init.cc).
#include "api_common.hpp"
#include "comm_init.hpp"
#include "group.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

MSCCLPP_NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGetUniqueId, uniqueId);
  return guarded([&] {
    getUniqueId(uniqueId);
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommInitRank, comm, nranks, commId, rank);
  return latchInGroup(guarded([&] { return initRank(comm, nranks, &commId, 1, rank, nullptr, "CommInitRank"); }));
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                 ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommInitRankConfig, comm, nranks, commId, rank, config);
  return latchInGroup(guarded([&] { return initRank(comm, nranks, &commId, 1, rank, config, "CommInitRankConfig"); }));
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
                 ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommInitRankScalable, newcomm, nranks, myrank, nId, commIds, config);
  return latchInGroup(
      guarded([&] { return initRank(newcomm, nranks, commIds, nId, myrank, config, "CommInitRankScalable"); }));
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommInitAll, comms, ndev, devlist);
  return guarded([&] {
    initAll(comms, ndev, devlist);
    return ncclSuccess;
  });
}
