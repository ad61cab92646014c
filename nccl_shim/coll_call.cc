#include "coll_call.hpp"

#include "comm.hpp"
#include "core/enforce.hpp"

namespace mscclpp::shim {

namespace {
const char* at(const void* base, uint64_t offset) { return static_cast<const char*>(base) + offset; }

// Which buffers this rank touches. As in NCCL,
// broadcast and scatter read sendbuff only at the
// root; reduce and gather write recvbuff only there.
bool needsSend(const CollCall& c, int rank) {
  switch (c.kind) {
    case CollKind::Broadcast:
    case CollKind::Scatter:
      return rank == c.root;
    case CollKind::Recv:
      return false;
    default:
      return true;
  }
}

bool needsRecv(const CollCall& c, int rank) {
  switch (c.kind) {
    case CollKind::Reduce:
    case CollKind::Gather:
      return rank == c.root;
    case CollKind::Send:
      return false;
    default:
      return true;
  }
}
}  // namespace

uint64_t planMessageBytes(const CollCall& c, int nRanks) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::AllGather:      // output size
    case CollKind::ReduceScatter:  // input size
    case CollKind::AllToAll:
      return b * static_cast<uint64_t>(nRanks);
    default:
      return b;
  }
}

uint64_t sendBytes(const CollCall& c, int nRanks) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::ReduceScatter:
    case CollKind::AllToAll:
    case CollKind::Scatter:
      return b * static_cast<uint64_t>(nRanks);
    case CollKind::Recv:
      return 0;
    default:
      return b;
  }
}

uint64_t recvBytes(const CollCall& c, int nRanks) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::AllGather:
    case CollKind::AllToAll:
    case CollKind::Gather:
      return b * static_cast<uint64_t>(nRanks);
    case CollKind::Send:
      return 0;
    default:
      return b;
  }
}

bool isInPlace(const CollCall& c, int rank) {
  uint64_t b = elementBytes(c);
  switch (c.kind) {
    case CollKind::AllGather:
      return c.sendbuff == at(c.recvbuff, b * static_cast<uint64_t>(rank));
    case CollKind::ReduceScatter:
      return c.recvbuff == at(c.sendbuff, b * static_cast<uint64_t>(rank));
    case CollKind::Gather:
      return c.sendbuff == at(c.recvbuff, b * static_cast<uint64_t>(c.root));
    case CollKind::Scatter:
      return c.recvbuff == at(c.sendbuff, b * static_cast<uint64_t>(c.root));
    case CollKind::Send:
    case CollKind::Recv:
      return false;
    default:
      return c.sendbuff == c.recvbuff;
  }
}

void checkCallArgs(const CollCall& c, const Comm& comm) {
  const char* op = collApiName(c.kind);
  const int nRanks = comm.nRanks();
  if (isP2p(c.kind)) {
    MSCCLPP_ENFORCE(c.root >= 0 && c.root < nRanks, ErrorCode::InvalidArgument,
                    "%s : invalid peer %d (peer should be in the 0..%d range)", op, c.root, nRanks - 1);
  } else if (hasRoot(c.kind)) {
    MSCCLPP_ENFORCE(c.root >= 0 && c.root < nRanks, ErrorCode::InvalidArgument,
                    "%s : invalid root %d (root should be in the 0..%d range)", op, c.root, nRanks - 1);
  }
  size_t elem = dtypeSize(c.dtype);
  MSCCLPP_ENFORCE(elem != 0, ErrorCode::InvalidArgument, "%s : invalid type %d", op, c.dtype);

  if (isReduction(c.kind)) {
    MSCCLPP_ENFORCE(c.op >= 0, ErrorCode::InvalidArgument, "%s : invalid reduction operation %d", op, c.op);
    if (c.op >= static_cast<int>(ncclNumOps)) {
      const UserRedOp* user = comm.redOps().find(c.op);
      MSCCLPP_ENFORCE(user != nullptr, ErrorCode::InvalidArgument,
                      "%s : reduction operation %d unknown to this communicator", op, c.op);
      MSCCLPP_ENFORCE(user->dtype == c.dtype, ErrorCode::InvalidArgument,
                      "%s : reduction operation %d was created for datatype %s but the call's datatype is %s "
                      "(NCCL: Data type supplied to user-created ncclRedOp_t does not match type given to reduction "
                      "operation)",
                      op, c.op, dtypeName(user->dtype), dtypeName(c.dtype));
    }
  }

  // The bytes this rank moves must fit in 64 bits.
  // The gathering collectives count per rank.
  uint64_t bytes = 0, total = 0;
  bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(c.count), static_cast<uint64_t>(elem), &bytes) ||
                  __builtin_mul_overflow(bytes, static_cast<uint64_t>(nRanks), &total);
  MSCCLPP_ENFORCE(!overflow, ErrorCode::InvalidArgument, "%s : count %zu of %s on %d ranks overflows the byte count",
                  op, c.count, dtypeName(c.dtype), nRanks);

  if (c.count > 0) {
    const int rank = comm.rank();
    if (needsSend(c, rank)) {
      MSCCLPP_ENFORCE(c.sendbuff != nullptr, ErrorCode::InvalidArgument, "%s : %s argument is NULL", op,
                      isP2p(c.kind) ? "buff" : "sendbuff");
    }
    if (needsRecv(c, rank)) {
      MSCCLPP_ENFORCE(c.recvbuff != nullptr, ErrorCode::InvalidArgument, "%s : %s argument is NULL", op,
                      isP2p(c.kind) ? "buff" : "recvbuff");
    }
  }
}

}  // namespace mscclpp::shim
