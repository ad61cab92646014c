// The call path of every collective, send and receive. After
// NCCL's checks, a call outside a group runs on its plan or
// on the real NCCL. Inside a group it is queued, and the
// outermost ncclGroupEnd issues the group. Each decision is
// counted and logged at INFO, for instance "NCCL ran because
// no plan for allreduce, 8 ranks, 3 MiB, bf16".
//
// A call outside a group allocates nothing and takes no lock of ours.
#ifndef MSCCLPP_NCCL_SHIM_DISPATCH_HPP_
#define MSCCLPP_NCCL_SHIM_DISPATCH_HPP_

#include <nccl.h>

#include <string>
#include <vector>

#include "coll_call.hpp"

namespace mscclpp::shim {

class Comm;

// The whole body of an operation's entry point, guard included.
ncclResult_t submitCall(CollCall call, ncclComm_t handle) noexcept;

// Issues a group's queued calls in order; throws on the first failure.
void runGroupOps(std::vector<CollCall>& ops);
// ncclGroupSimulateEnd: the real NCCL estimates the
// group's time when every call would go there. A
// call bound for a plan throws Error(InvalidUsage),
// since NCCL cannot estimate plans. Nothing runs.
void simulateGroupOps(std::vector<CollCall>& ops, ncclSimInfo_t* simInfo);

// What a call asks for, for logs and messages:
// "allreduce, 8 ranks, 3 MiB, bf16, sum, in-place".
std::string describeCall(const CollCall& call, int nRanks, int rank);

// Grouped sends and receives a plan can serve: a pattern
// every rank recognises from its own calls alone, so all
// ranks choose alike without talking. The one pattern is
// the two-rank exchange: one send to the peer and one
// recv from it, same count and datatype, on two ranks.
// docs/nccl-shim.md "Groups" says why there is no other.
//
// p2p holds one communicator's grouped calls in issue order. On a match,
// *exchange is the SendRecv call a "sendrecv" plan serves; root is the peer.
bool matchTwoRankExchange(const std::vector<const CollCall*>& p2p, int rank, int nRanks, CollCall* exchange);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_DISPATCH_HPP_
