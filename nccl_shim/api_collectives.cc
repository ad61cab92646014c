// Entry points of the operations: collectives, sends
// and receives, groups and user reduce ops. Each call
// becomes a CollCall for submitCall, which checks it,
// then queues or runs it, inside the guard.
#include <algorithm>
#include <cstring>
#include <vector>

#include "api_common.hpp"
#include "comm.hpp"
#include "core/enforce.hpp"
#include "dispatch.hpp"
#include "group.hpp"
#include "nccl_types.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

namespace {
// dtype and op stay the caller's raw values until checkCallArgs passed.
CollCall makeCall(CollKind kind, const void* sendbuff, void* recvbuff, size_t count, int dtype, int op, int root,
                  cudaStream_t stream) {
  CollCall c;
  c.kind = kind;
  c.sendbuff = sendbuff;
  c.recvbuff = recvbuff;
  c.count = count;
  c.dtype = dtype;
  c.op = op;
  c.root = root;
  c.stream = stream;
  return c;
}
}  // namespace

MSCCLPP_NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
                 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
  return submitCall(makeCall(CollKind::AllReduce, sendbuff, recvbuff, count, rawEnum(datatype), rawEnum(op), 0, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
  return submitCall(makeCall(CollKind::AllGather, sendbuff, recvbuff, sendcount, rawEnum(datatype), ncclSum, 0, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
                 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  return submitCall(
      makeCall(CollKind::ReduceScatter, sendbuff, recvbuff, recvcount, rawEnum(datatype), rawEnum(op), 0, stream),
      comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
                 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return submitCall(makeCall(CollKind::Broadcast, sendbuff, recvbuff, count, rawEnum(datatype), ncclSum, root, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                 cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclBcast, buff, count, datatype, root, comm, stream);
  // In-place broadcast. The real library still sees an ncclBcast call.
  CollCall c = makeCall(CollKind::Broadcast, buff, buff, count, rawEnum(datatype), ncclSum, root, stream);
  c.viaBcast = true;
  return submitCall(c, comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  return submitCall(makeCall(CollKind::Reduce, sendbuff, recvbuff, count, rawEnum(datatype), rawEnum(op), root, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
  return submitCall(makeCall(CollKind::AllToAll, sendbuff, recvbuff, count, rawEnum(datatype), ncclSum, 0, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGather, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return submitCall(makeCall(CollKind::Gather, sendbuff, recvbuff, count, rawEnum(datatype), ncclSum, root, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                 int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclScatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
  return submitCall(makeCall(CollKind::Scatter, sendbuff, recvbuff, count, rawEnum(datatype), ncclSum, root, stream),
                    comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                 ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclSend, sendbuff, count, datatype, peer, comm, stream);
  return submitCall(makeCall(CollKind::Send, sendbuff, nullptr, count, rawEnum(datatype), ncclSum, peer, stream), comm);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                 ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclRecv, recvbuff, count, datatype, peer, comm, stream);
  return submitCall(makeCall(CollKind::Recv, nullptr, recvbuff, count, rawEnum(datatype), ncclSum, peer, stream), comm);
}

namespace {

constexpr unsigned kSimInfoMagic = 0x74685283;  // NCCL_SIM_INFO_INITIALIZER

ncclResult_t endGroup(ncclSimInfo_t* simInfo) {
  GroupState& group = threadGroup();
  return guarded([&] {
    if (simInfo != nullptr) {
      // Read by the caller's size, as NCCL does: older structs are shorter.
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      info.magic = 0;
      size_t size = 0;
      std::memcpy(&size, simInfo, sizeof(size));
      std::memcpy(&info, simInfo, std::min(size, sizeof(info)));
      MSCCLPP_ENFORCE(info.magic == kSimInfoMagic, ErrorCode::InvalidArgument,
                      "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER (magic 0x%x)", info.magic);
    }
    if (!group.end()) return ncclSuccess;
    // Take everything out first: a failure below leaves the thread clean.
    std::vector<std::function<void()>> jobs = group.takeJobs();
    thread_local std::vector<CollCall> ops;
    group.takeOps(&ops);
    ncclResult_t latched = group.takeLatched();
    struct ClearOps {
      std::vector<CollCall>& v;
      ~ClearOps() { v.clear(); }
    } clearOps{ops};
    // Deferred inits and splits: this thread's ranks rendezvous together.
    runConcurrently(jobs);
    // The failing call already recorded its message.
    if (latched != ncclSuccess) return latched;
    if (simInfo != nullptr) {
      simulateGroupOps(ops, simInfo);
    } else {
      runGroupOps(ops);
    }
    return ncclSuccess;
  });
}

}  // namespace

MSCCLPP_NCCL_API(ncclResult_t, ncclGroupStart);
ncclResult_t pncclGroupStart() {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGroupStart);
  threadGroup().start();
  return ncclSuccess;
}

MSCCLPP_NCCL_API(ncclResult_t, ncclGroupEnd);
ncclResult_t pncclGroupEnd() {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGroupEnd);
  return endGroup(nullptr);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGroupSimulateEnd, simInfo);
  return endGroup(simInfo);
}

// A user op lives in both worlds: our scalar for plans, and the
// real NCCL's handle for the fallback. Calls carry our handle.
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
      std::memcpy(user.exec.scalarBytes, scalar, size);  // the caller may reuse it
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
    // NCCL's checks, in NCCL's order and words.
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
