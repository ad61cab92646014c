// Variable-size plans: alltoallv, allgatherv and reducescatterv, whose
// segment sizes are known only at call time (docs/plan-format.md, "Variable
// sizes"). A call binds one count matrix S, S[s][d] the elements rank s
// sends to rank d; each rank's send and recv tables follow from it by the
// collective's rule, so any rank can place any rank's segments alone.
// Thread-safety: pure functions.
#ifndef MSCCLPP_PLAN_VARIABLE_SIZES_HPP_
#define MSCCLPP_PLAN_VARIABLE_SIZES_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "plan/plan.hpp"

namespace mscclpp::plan {

bool isVariableCollective(Collective c);
// The collective of equal sizes a variable one generalises: alltoallv -> alltoall.
Collective fixedCollectiveOf(Collective c);
const char* segmentTableName(SegmentTable t);  // "send", "recv"

// Whether a table splits its buffer into one segment per peer, in peer
// order; otherwise every entry is the whole buffer from offset 0 (the
// input of allgatherv, the output of reducescatterv).
bool tablePartitions(Collective c, SegmentTable table);

// Where the owner's segment for peer lies, in the count matrix:
//   bytes  = S[sender][receiver] x element size
//   offset = the sum of `prefix` entries of row or column `line`, x element size
// Send tables read row `owner` (owner sends to peer); recv tables read column
// `owner` (peer sends to owner).
struct SegmentSource {
  uint32_t sender = 0, receiver = 0;
  uint32_t line = 0;
  uint32_t prefix = 0;  // 0 for a table that does not partition
  bool alongRow = true;
};
SegmentSource segmentSource(Collective c, uint32_t owner, SegmentTable table, uint32_t peer);

// Checks a count matrix (n x n, row = sender) against the collective:
// allgatherv sends the same count to every rank, reducescatterv receives the
// same count from every rank. "" when fine, else what is wrong.
std::string checkCountMatrix(Collective c, int n, const uint64_t* counts);

// A rank's input and output bytes under a count matrix: the end of its
// last send and recv segment. False when a sum overflows 64 bits.
bool variableCallBytes(Collective c, int n, const uint64_t* counts, size_t elementBytes, int rank, uint64_t* inputBytes,
                       uint64_t* outputBytes);

// The message size a variable call is selected by: its largest segment in
// bytes. False when it overflows 64 bits.
bool variableMessageBytes(int n, const uint64_t* counts, size_t elementBytes, uint64_t* bytes);

// Whether a loaded plan serves a variable call whose largest segment is
// messageBytes: every segment fits a scratch slot when the plan has slots.
// "" when it does, else why not.
std::string variableSizingRefusal(const PlanHeader& header, uint32_t scratchChunks, uint64_t messageBytes);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_VARIABLE_SIZES_HPP_
