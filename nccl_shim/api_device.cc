// Host functions of NCCL's device API. Device
// communicators, barriers and LL all-to-all resources
// live inside the real NCCL. Those calls go to the
// real communicator, or fail with ncclInvalidUsage
// saying why there is none. The team queries and
// ncclLLA2ACalcSlots are arithmetic on the shape:
// without a real twin the shim answers them itself.
#include "api_common.hpp"
#include "comm.hpp"
#include "core/enforce.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

namespace {

ncclComm_t realTwin(ncclComm_t comm, const char* opName) {
  if (isRealNcclComm(comm)) return comm;
  Comm* c = checkComm(comm, opName);
  c->ensureReady(opName);
  MSCCLPP_ENFORCE(c->fallback().available(), ErrorCode::NotSupported,
                  "%s : the NCCL device API runs on the real NCCL's communicator, which is unavailable: %s", opName,
                  c->fallback().unavailableReason().c_str());
  return c->fallback().real();
}

ncclTeam_t team(int nRanks, int rank, int stride) {
  ncclTeam_t t;
  t.nRanks = nRanks;
  t.rank = rank;
  t.stride = stride;
  return t;
}

// The load/store accessible team: this host's ranks, assumed contiguous.
ncclTeam_t lsaTeam(const Comm& c) {
  int size = c.nRanksPerNode() > 0 ? c.nRanksPerNode() : 1;
  return team(size, c.rank() % size, 1);
}

void requireLoaded(const char* opName) {
  MSCCLPP_ENFORCE(RealNccl::instance().ensureLoaded(), ErrorCode::NotSupported,
                  "%s : the NCCL device API needs the real NCCL, which is unavailable: %s", opName,
                  RealNccl::instance().unavailableReason().c_str());
}

}  // namespace

MSCCLPP_NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
                 ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclDevCommCreate, comm, reqs, outDevComm);
  return guarded([&] {
    ncclResult_t rc = callReal<NcclFn::ncclDevCommCreate>(realTwin(comm, "ncclDevCommCreate"), reqs, outDevComm);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclDevCommCreate");
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, ncclDevComm_t const* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclDevCommDestroy, comm, devComm);
  return guarded([&] {
    ncclResult_t rc = callReal<NcclFn::ncclDevCommDestroy>(realTwin(comm, "ncclDevCommDestroy"), devComm);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclDevCommDestroy");
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
ncclTeam_t pncclTeamWorld(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclTeamWorld, comm);
  return guardedValue<ncclTeam_t>(team(0, 0, 0), [&] {
    if (isRealNcclComm(comm)) return callReal<NcclFn::ncclTeamWorld>(comm);
    Comm* c = checkComm(comm, "ncclTeamWorld");
    if (c->fallback().available()) return callReal<NcclFn::ncclTeamWorld>(c->fallback().real());
    return team(c->nRanks(), c->rank(), 1);
  });
}

MSCCLPP_NCCL_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t pncclTeamLsa(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclTeamLsa, comm);
  return guardedValue<ncclTeam_t>(team(0, 0, 0), [&] {
    if (isRealNcclComm(comm)) return callReal<NcclFn::ncclTeamLsa>(comm);
    Comm* c = checkComm(comm, "ncclTeamLsa");
    if (c->fallback().available()) return callReal<NcclFn::ncclTeamLsa>(c->fallback().real());
    return lsaTeam(*c);
  });
}

MSCCLPP_NCCL_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t pncclTeamRail(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclTeamRail, comm);
  return guardedValue<ncclTeam_t>(team(0, 0, 0), [&] {
    if (isRealNcclComm(comm)) return callReal<NcclFn::ncclTeamRail>(comm);
    Comm* c = checkComm(comm, "ncclTeamRail");
    if (c->fallback().available()) return callReal<NcclFn::ncclTeamRail>(c->fallback().real());
    ncclTeam_t lsa = lsaTeam(*c);
    return team(c->nRanks() / lsa.nRanks, c->rank() / lsa.nRanks, lsa.nRanks);
  });
}

MSCCLPP_NCCL_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t tm, int rank) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclTeamRankToWorld, comm, tm, rank);
  return guardedValue<int>(-1, [&] {
    if (isRealNcclComm(comm)) return callReal<NcclFn::ncclTeamRankToWorld>(comm, tm, rank);
    Comm* c = checkComm(comm, "ncclTeamRankToWorld");
    if (c->fallback().available()) return callReal<NcclFn::ncclTeamRankToWorld>(c->fallback().real(), tm, rank);
    return c->rank() + (rank - tm.rank) * tm.stride;
  });
}

MSCCLPP_NCCL_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t tm, int rank) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclTeamRankToLsa, comm, tm, rank);
  return guardedValue<int>(-1, [&] {
    if (isRealNcclComm(comm)) return callReal<NcclFn::ncclTeamRankToLsa>(comm, tm, rank);
    Comm* c = checkComm(comm, "ncclTeamRankToLsa");
    if (c->fallback().available()) return callReal<NcclFn::ncclTeamRankToLsa>(c->fallback().real(), tm, rank);
    return lsaTeam(*c).rank + (rank - tm.rank) * tm.stride;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
                 ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t tm, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclLsaBarrierCreateRequirement, tm, nBarriers, outHandle, outReq);
  return guarded([&] {
    requireLoaded("ncclLsaBarrierCreateRequirement");
    ncclResult_t rc = callReal<NcclFn::ncclLsaBarrierCreateRequirement>(tm, nBarriers, outHandle, outReq);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclLsaBarrierCreateRequirement");
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
                 ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t tm, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGinBarrierCreateRequirement, comm, tm, nBarriers, outHandle, outReq);
  return guarded([&] {
    ncclResult_t rc = callReal<NcclFn::ncclGinBarrierCreateRequirement>(
        realTwin(comm, "ncclGinBarrierCreateRequirement"), tm, nBarriers, outHandle, outReq);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclGinBarrierCreateRequirement");
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclLLA2ACalcSlots, maxElts, maxEltSize);
  return guardedValue<int>(0, [&] {
    if (RealNccl::instance().ensureLoaded()) return callReal<NcclFn::ncclLLA2ACalcSlots>(maxElts, maxEltSize);
    // NCCL 2.28's formula: one slot unit
    // per started 8 bytes of each element.
    return maxElts * ((maxEltSize + 7) / 8);
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                 ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclLLA2ACreateRequirement, nBlocks, nSlots, outHandle, outReq);
  return guarded([&] {
    requireLoaded("ncclLLA2ACreateRequirement");
    ncclResult_t rc = callReal<NcclFn::ncclLLA2ACreateRequirement>(nBlocks, nSlots, outHandle, outReq);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclLLA2ACreateRequirement");
    return ncclSuccess;
  });
}
