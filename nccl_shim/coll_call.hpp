// One NCCL operation as the shim carries it from the
// entry point to a plan or to the real NCCL: the caller's
// arguments, unchanged. Beside it are NCCL's rules about
// such a call: its bytes, in-place and checks.
#ifndef MSCCLPP_NCCL_SHIM_COLL_CALL_HPP_
#define MSCCLPP_NCCL_SHIM_COLL_CALL_HPP_

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "nccl_types.hpp"

namespace mscclpp::shim {

class Comm;

struct CollCall {
  CollKind kind = CollKind::AllReduce;
  const void* sendbuff = nullptr;  // Send: the buffer; Recv: unused
  void* recvbuff = nullptr;        // Recv: the buffer; Send: unused
  size_t count = 0;                // NCCL's count argument, as passed
  int dtype = ncclInt8;            // ncclDataType_t as passed, raw until checked
  int op = ncclSum;                // ncclRedOp_t as passed; ncclSum if none
  int root = 0;                    // root rank, or the peer of a send/recv
  cudaStream_t stream = nullptr;
  Comm* comm = nullptr;
  bool viaBcast = false;  // entered through ncclBcast: forwarded as ncclBcast
};

// Bytes of one rank's contribution: count times the element size.
inline uint64_t elementBytes(const CollCall& c) { return static_cast<uint64_t>(c.count) * dtypeSize(c.dtype); }

// The message size plans are selected on
// (docs/plan-format.md): the output for allgather,
// one rank's part for gather and scatter, else the
// input. nRanks is the communicator's size.
uint64_t planMessageBytes(const CollCall& c, int nRanks);

// Bytes the executor reads from sendbuff
// and writes to recvbuff on this rank.
uint64_t sendBytes(const CollCall& c, int nRanks);
uint64_t recvBytes(const CollCall& c, int nRanks);

// NCCL's in-place rule for the collective. For
// allgather: sendbuff == recvbuff + rank * bytes.
bool isInPlace(const CollCall& c, int rank);

// NCCL's argument checks, in NCCL's order and words:
// root or peer, datatype, reduce op. Then what NCCL
// leaves to a crash: NULL buffers this rank touches,
// and byte counts that overflow. All InvalidArgument.
void checkCallArgs(const CollCall& call, const Comm& comm);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_COLL_CALL_HPP_
