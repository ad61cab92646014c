// Entry points for user reduce ops: ncclRedOpCreatePreMulSum, ncclRedOpDestroy. An op is created in both worlds
// (our scalar for plans, the real NCCL's handle for the fallback) and calls carry our handle, translated to the
// real one when they go to the real NCCL.
#include <cstring>

#include "api_common.hpp"
#include "comm.hpp"
#include "core/enforce.hpp"
#include "nccl_types.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

MSCCLPP_NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                 ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclRedOpCreatePreMulSum>(op, scalar, datatype, residence, comm);
  return guarded([&] {
    const char* name = "ncclRedOpCreatePreMulSum";
    Comm* c = checkComm(comm, name);
    c->ensureReady(name);
    MSCCLPP_ENFORCE(op != nullptr, ErrorCode::InvalidArgument, "%s : op argument is NULL", name);
    MSCCLPP_ENFORCE(scalar != nullptr, ErrorCode::InvalidArgument, "%s : scalar argument is NULL", name);
    const int dtype = rawEnum(datatype);
    const int where = rawEnum(residence);
    size_t size = dtypeSize(dtype);
    MSCCLPP_ENFORCE(size != 0, ErrorCode::InvalidArgument, "%s : invalid type %d", name, dtype);
    MSCCLPP_ENFORCE(where == ncclScalarDevice || where == ncclScalarHostImmediate, ErrorCode::InvalidArgument,
                    "%s : invalid scalar residence %d", name, where);
    UserRedOp user;
    user.dtype = datatype;
    user.exec.builtin = ncclSum;
    user.exec.preMul = true;
    if (where == ncclScalarHostImmediate) {
      std::memcpy(user.exec.scalarBytes, scalar, size);  // read now: the caller may reuse its memory
    } else {
      user.exec.scalarIsPtr = true;
      user.exec.scalarPtr = scalar;  // read when the collective runs
    }
    if (c->fallback().available()) {
      user.realOp = c->fallback().createPreMulSum(scalar, datatype, residence);
      user.hasRealOp = true;
    }
    *op = c->redOps().add(user);
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclRedOpDestroy, op, comm);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclRedOpDestroy>(op, comm);
  return guarded([&] {
    // NCCL's checks, in its order and words.
    const int handle = rawEnum(op);
    MSCCLPP_ENFORCE(!(0 <= handle && handle < static_cast<int>(ncclNumOps)), ErrorCode::InvalidArgument,
                    "ncclRedOpDestroy : operator is a NCCL builtin.");
    MSCCLPP_ENFORCE(handle >= 0, ErrorCode::InvalidArgument, "ncclRedOpDestroy :  operator is garbage.");
    MSCCLPP_ENFORCE(comm != nullptr, ErrorCode::InvalidArgument, "ncclRedOpDestroy : invalid communicator passed.");
    Comm* c = checkComm(comm, "ncclRedOpDestroy");
    UserRedOp removed;
    MSCCLPP_ENFORCE(c->redOps().remove(handle, &removed), ErrorCode::InvalidArgument,
                    "ncclRedOpDestroy : operator unknown to this communicator.");
    if (removed.hasRealOp && c->fallback().available()) c->fallback().destroyRedOp(removed.realOp);
    return ncclSuccess;
  });
}
