// Entry points of communicators: creation, split and shrink,
// teardown, and the queries. The work itself is in comm_lifecycle.cc.
#include "api_common.hpp"
#include "comm.hpp"
#include "comm_lifecycle.hpp"
#include "core/enforce.hpp"
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

MSCCLPP_NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                 ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommSplit, comm, color, key, newcomm, config);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommSplit>(comm, color, key, newcomm, config);
  return latchInGroup(guarded([&] {
    splitComm(checkComm(comm, "CommSplit"), color, key, newcomm, config);
    return ncclSuccess;
  }));
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                 ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommShrink, comm, excludeRanksList, excludeRanksCount, newcomm, config,
                                      shrinkFlags);
  if (isRealNcclComm(comm)) {
    return passThrough<NcclFn::ncclCommShrink>(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  }
  return latchInGroup(guarded([&] {
    shrinkComm(checkComm(comm, "CommShrink"), excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
    return ncclSuccess;
  }));
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommFinalize, comm);
  if (comm == nullptr) return ncclSuccess;  // NCCL: finalizing NULL is a no-op
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommFinalize>(comm);
  return guarded([&] {
    Comm* c = checkComm(comm, "CommFinalize");
    MSCCLPP_ENFORCE(!c->finalized(), ErrorCode::InvalidArgument,
                    "CommFinalize : communicator rank %d of %d was already finalized", c->rank(), c->nRanks());
    finalizeComm(c);
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommRevoke, comm, revokeFlags);
  if (comm == nullptr) return ncclSuccess;  // NCCL: revoking NULL is a no-op
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommRevoke>(comm, revokeFlags);
  return guarded([&] {
    revokeComm(checkComm(comm, "CommRevoke"), revokeFlags);
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommDestroy, comm);
  if (comm == nullptr) return ncclSuccess;
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommDestroy>(comm);
  return guarded([&] {
    destroyComm(checkComm(comm, "CommDestroy"));
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommAbort, comm);
  if (comm == nullptr) return ncclSuccess;
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommAbort>(comm);
  return guarded([&] {
    abortComm(checkComm(comm, "CommAbort"));
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommGetAsyncError, comm, asyncError);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommGetAsyncError>(comm, asyncError);
  // Watchdog threads call this at any time: two atomic loads,
  // then the real twin's own query, which is as cheap.
  return guarded([&] {
    Comm* c = checkComm(comm, "ncclGetAsyncError");
    MSCCLPP_ENFORCE(asyncError != nullptr, ErrorCode::InvalidArgument,
                    "ncclGetAsyncError : asyncError argument is NULL");
    *asyncError = c->asyncError();
    return ncclSuccess;
  });
}

namespace {
template <class Get>
ncclResult_t queryComm(ncclComm_t comm, int* out, const char* opName, const char* outName, Get get) {
  return guarded([&] {
    Comm* c = checkComm(comm, opName);
    MSCCLPP_ENFORCE(out != nullptr, ErrorCode::InvalidArgument, "%s : %s argument is NULL", opName, outName);
    c->ensureReady(opName, /*allowRevoked=*/true);
    *out = get(*c);
    return ncclSuccess;
  });
}
}  // namespace

MSCCLPP_NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommCount, comm, count);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommCount>(comm, count);
  return queryComm(comm, count, "CommCount", "count", [](const Comm& c) { return c.nRanks(); });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommCuDevice, comm, device);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommCuDevice>(comm, device);
  return queryComm(comm, device, "CommCuDevice", "device", [](const Comm& c) { return c.cudaDev(); });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommUserRank, comm, rank);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommUserRank>(comm, rank);
  return queryComm(comm, rank, "CommUserRank", "rank", [](const Comm& c) { return c.rank(); });
}
