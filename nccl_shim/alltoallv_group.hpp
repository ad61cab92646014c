// A communicator's grouped ncclSend/ncclRecv that form an all-to-all(v),
// run on an alltoallv plan (docs/nccl-shim.md, "All-to-all-v from grouped
// sends and receives"). A rank alone cannot tell: a peer whose counts are
// zero may skip its calls, so its group looks like any send/recv. The ranks
// decide together, talking only to the peers of their own calls, so no rank
// ever waits for one that is not in the group: each tells those peers its
// counts; a rank with calls to every peer then knows the whole count matrix,
// and the lowest such rank tells every rank what all do.
// Threads: the communicator's driving thread.
#ifndef MSCCLPP_NCCL_SHIM_ALLTOALLV_GROUP_HPP_
#define MSCCLPP_NCCL_SHIM_ALLTOALLV_GROUP_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "coll_call.hpp"
#include "rank_link.hpp"

namespace mscclpp::shim {

// This rank's grouped sends and receives on one communicator, read as an all-to-all(v).
struct AllToAllVGroup {
  bool candidate = false;   // one datatype, stream and layout: contiguous segments in peer order
  std::string why;          // why not a candidate
  bool talksToAll = false;  // a call with every other rank
  int dtype = -1;
  cudaStream_t stream = nullptr;
  const char* sendBase = nullptr;
  char* recvBase = nullptr;
  std::vector<uint64_t> sendCounts, recvCounts;  // per peer; 0 without a call
  std::vector<int> peers;                        // the other ranks this rank has calls with
};

AllToAllVGroup readAllToAllVGroup(const std::vector<const CollCall*>& p2p, int rank, int nRanks);

// What every rank does with its group.
struct AllToAllVDecision {
  bool onPlan = false;
  PlanChoice plan;
  std::vector<uint64_t> counts;  // n x n, row = sender, when onPlan
  std::string why;               // why NCCL runs it, when not onPlan
};

// Collective among the ranks of the group: every rank that reaches it with
// matched calls decides alike. A receive count that differs from what the
// peer sends throws InvalidUsage naming both ranks and counts, on every rank
// when one rank has calls with every peer, else on the two ranks involved.
AllToAllVDecision decideAllToAllV(RankLink& link, const AllToAllVGroup& mine);

// Whether the registry holds an alltoallv plan for nRanks ranks: only then do
// grouped sends and receives take part in the decision. Cached per registry generation.
bool allToAllVPlansRegistered(int nRanks);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_ALLTOALLV_GROUP_HPP_
