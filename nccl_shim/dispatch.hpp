// The call path of every collective and point-to-point call: NCCL's checks, then (outside a group) "which plan?"
// and the plan or the real NCCL; inside a group the call is queued and the whole group is issued at the
// outermost ncclGroupEnd. Every decision is logged at INFO ("plan allreduce_pkt_8 ran: ...", "NCCL ran because no plan
// for allreduce, 8 ranks, 3 MiB, bf16") and counted in the communicator's stats.
//
// The hot path (outside a group, plan or fallback) allocates nothing and takes no lock of ours.
#ifndef MSCCLPP_NCCL_SHIM_DISPATCH_HPP_
#define MSCCLPP_NCCL_SHIM_DISPATCH_HPP_

#include <nccl.h>

#include <string>
#include <vector>

#include "coll_call.hpp"

namespace mscclpp::shim {

class Comm;

// The whole entry-point body for a collective/p2p call (the guard included): never throws.
ncclResult_t submitCall(CollCall call, ncclComm_t handle) noexcept;

// Issues a group's queued calls, in order (the outermost ncclGroupEnd). Throws on the first failure.
void runGroupOps(std::vector<CollCall>& ops);
// ncclGroupSimulateEnd: estimates the group's time with the real NCCL when every call would go there; throws
// Error(InvalidUsage) when some call would run on a plan (NCCL cannot estimate those). Nothing is launched.
void simulateGroupOps(std::vector<CollCall>& ops, ncclSimInfo_t* simInfo);

// "allreduce, 8 ranks, 3 MiB, bf16, sum, in-place": what a call asks for, for logs and messages.
std::string describeCall(const CollCall& call, int nRanks, int rank);

// Grouped send/recv calls form a pattern a plan can serve only when every rank recognises it from its own
// calls alone: then all ranks make the same plan-or-NCCL choice without talking. The one pattern is the
// two-rank exchange: on a 2-rank communicator, one send to the peer and one recv from it, same count and
// datatype ("sendrecv" plans).
// p2p: one communicator's grouped Send/Recv calls in issue order. On a match, *exchange is a SendRecv call
// (sendbuff from the send, recvbuff from the recv, the common count/datatype/stream; root = the peer).
bool matchTwoRankExchange(const std::vector<const CollCall*>& p2p, int rank, int nRanks, CollCall* exchange);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_DISPATCH_HPP_
