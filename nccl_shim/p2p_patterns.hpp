// Grouped send/recv calls that together form an operation a plan can serve. Only patterns every rank recognises
// from its own calls alone are accepted, so all ranks of an exchange make the same plan-or-NCCL choice without
// talking to each other:
//   - a two-rank exchange: on a 2-rank communicator, one send to the peer and one recv from it, same count and
//     datatype ("sendrecv" plans). The peer's group then holds the mirror pair, provided both ranks put the
//     calls of one exchange in one group each (every NCCL program we know does; a rank that spreads the
//     matching calls over differently shaped groups gets an error at the deadline, never a wrong result).
// An all-to-all written as sends/recvs is deliberately not recognised (one rank seeing the full pattern does not
// mean every rank does; a mixed choice would deadlock): ncclAlltoAll itself reaches alltoall plans.
#ifndef MSCCLPP_NCCL_SHIM_P2P_PATTERNS_HPP_
#define MSCCLPP_NCCL_SHIM_P2P_PATTERNS_HPP_

#include <vector>

#include "coll_call.hpp"

namespace mscclpp::shim {

// p2p: one communicator's grouped Send/Recv calls in issue order. On a match, *exchange is a SendRecv call
// (sendbuff from the send, recvbuff from the recv, the common count/datatype/stream; root = the peer).
bool matchTwoRankExchange(const std::vector<const CollCall*>& p2p, int rank, int nRanks, CollCall* exchange);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_P2P_PATTERNS_HPP_
