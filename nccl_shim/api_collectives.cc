// Entry points of the collectives and point-to-point calls. Each packs its arguments into a CollCall and hands it
// to submitCall (dispatch.cc), which checks, queues or runs it (plan or real NCCL) and is the guard.
#include "api_common.hpp"
#include "dispatch.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

namespace {
// dtype and op arrive as the caller's raw values (rawEnum): they are checked before anything uses them.
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
  // The in-place broadcast; forwarded as ncclBcast so the real library sees the call the application made.
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
