// Binding a variable-size plan's segment references to one call's counts
// (plan/variable_sizes.hpp). A context records its segment references once,
// when it is built; each call then writes their offsets and sizes from the
// count matrix, checked against the buffers, with no other work per call.
// The CPU backend and the emulator bind on the host.
// Thread-safety: pure functions over the caller's data.
#ifndef MSCCLPP_EXECUTOR_SEGMENT_BINDING_HPP_
#define MSCCLPP_EXECUTOR_SEGMENT_BINDING_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "executor/exec_layout.hpp"
#include "executor/rank_resources.hpp"
#include "executor/refusal.hpp"
#include "mscclpp/datatype.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// One segment reference of a context: where it lies in the context's
// references and how the counts place it.
struct SegmentRef {
  uint32_t block = 0;  // threadblock index
  uint32_t ref = 0;    // index in the threadblock's references
  uint32_t op = 0;     // op index, for messages
  uint64_t fixedOffset = 0;
  uint64_t limit = 0;   // the buffer's bytes (one half with double scratch)
  uint32_t factor = 1;  // 2 for packets: they take twice the data bytes
  // bytes = counts[sender * n + receiver] * element size;
  // offset = fixedOffset + the sum of `prefix` entries of row or column `line`, when placed.
  uint32_t sender = 0, receiver = 0, line = 0, prefix = 0;
  bool alongRow = true;
  bool placed = false;     // input and output: the counts place it; scratch: at its slot's start
  uint64_t slotBytes = 0;  // scratch: the segment fits one slot; 0 otherwise
};

// The shape of a call on a variable-size plan: the buffers' capacities
// (their bytes as the caller passes them), the slots' scratch.
Refusal tryShapeVariableCall(const plan::Plan& plan, int rank, uint64_t inputBytes, uint64_t outputBytes,
                             DataType dtype, CallShape* shape);

// The buffer capacity of a context that serves these counts: the next power
// of two of the largest input or output any rank needs. Every rank computes
// the same from the same counts, so all build a new context at the same call,
// and calls whose totals vary share one context.
uint64_t variableCapacity(const plan::Plan& plan, const uint64_t* counts, size_t elementBytes);

// Counts this rank's buffers or scratch slots cannot hold, found on the host
// once the call began: the peers run the call and wait for this rank, so the
// backend fails the call on every rank (CallMonitor::failCall) before throwing.
class CountsError : public Error {
 public:
  explicit CountsError(const std::string& message) : Error(ErrorCode::InvalidArgument, message) {}
};

// `why`, then the counts `rank` sends and receives: "...; rank 1 sends 5, 300 and receives 300, 17".
std::string withRankCounts(const std::string& why, int rank, int n, const uint64_t* counts);

// The collective's rule for the count matrix (allgatherv: a rank sends every
// rank the same count; reducescatterv: a rank receives the same count from
// every rank). A pure property of the matrix: every rank that holds it finds
// the same, so it is an argument error of the call, thrown as such, which
// leaves the communicator usable as NCCL's argument errors do. "" or the
// error, naming the plan.
std::string checkCountRule(const plan::Plan& plan, int rank, const uint64_t* counts);

// Checks the counts of one call for `rank`: its own segments within its
// buffers (a CountsError when not). "" or the error, naming the plan.
std::string checkCounts(const plan::Plan& plan, int rank, const uint64_t* counts, size_t elementBytes,
                        uint64_t sendBytes, uint64_t recvBytes);

// Writes offset and bytes of every segment reference into refs
// ([block][ref]) for counts. Returns "" or what does not fit, naming the
// op; then nothing is trusted and the call must not run.
std::string bindSegments(const std::vector<SegmentRef>& segments, int nRanks, const uint64_t* counts,
                         size_t elementBytes, std::vector<std::vector<ResolvedRef>>* refs, const std::string& where);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_SEGMENT_BINDING_HPP_
