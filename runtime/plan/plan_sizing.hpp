// The one rule deciding whether a plan can serve a call of given byte sizes and with which chunk size.
// The registry uses it to select plans, the executor to size buffers; nothing else derives chunk sizes.
//
// Rule (docs/plan-core.md, "Sizing"):
//   chunk = input bytes / input_chunks, or output bytes / output_chunks when input_chunks is 0;
//   the division is exact and chunk is a multiple of buffer_alignment, and of the element size when the
//   plan reduces; when both chunk counts are nonzero the other buffer is exactly its chunks * chunk;
//   scratch = chunk * scratch_chunks (x2 for LL, x2 again for double scratch) fits in 64 bits.
// MSCCL++ plans of in-place allgather (input 1 chunk per instance, output n) and in-place reducescatter
// (input n, output 1) satisfy the same rule with NCCL's sizes (allgather out = n * in, reducescatter
// in = n * out): no special case is needed; an output_chunks of 0 (in-place allreduce written by older
// MSCCL++ versions) means "the plan does not reference the output buffer" and is not checked.
//
// Thread-safety: pure functions.
#ifndef MSCCLPP_PLAN_PLAN_SIZING_HPP_
#define MSCCLPP_PLAN_PLAN_SIZING_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "plan/plan.hpp"

namespace mscclpp::plan {

struct SizingResult {
  bool ok = false;
  uint64_t chunkBytes = 0;
  uint64_t scratchBytes = 0;  // this rank's scratch for the call (ok only)
  std::string reason;         // why not (empty when ok)
};

// elementBytes: the datatype size; used only when the plan reduces (header.reduceOps != 0), 0 to skip.
// (Exact sizes only: sizeCall below adds the padded geometry for the sizes this refuses.)
SizingResult sizePlan(const PlanHeader& header, const RankPlan& rank, uint64_t inputBytes, uint64_t outputBytes,
                      size_t elementBytes);
// The same from the chunk counts alone (what the registry knows before a plan is loaded; every rank has
// the same input and output chunks).
SizingResult sizePlan(const PlanHeader& header, uint32_t inputChunks, uint32_t outputChunks, uint32_t scratchChunks,
                      uint64_t inputBytes, uint64_t outputBytes, size_t elementBytes);

// How a call's buffers split into rank-major parts of equal size (parts: 1, or nRanks for allgather
// and gather output, reducescatter and scatter input, both alltoall buffers).
void bufferParts(Collective collective, int nRanks, uint32_t* inputParts, uint32_t* outputParts);

// A call's geometry on a plan: exact (the call's buffers are the plan's) or padded (docs/plan-core.md,
// "Sizing"): each part of partBytes is stored at paddedPartBytes, the smallest size >= partBytes
// that sizePlan accepts (a multiple of chunks-per-part x buffer_alignment, and of the element size),
// and the plan runs on buffers of inputParts and outputParts padded parts.
struct CallGeometry {
  bool padded = false;
  uint32_t inputParts = 1, outputParts = 1;
  uint64_t partBytes = 0;                    // the call's bytes per part (padded only)
  uint64_t paddedPartBytes = 0;              // the plan's bytes per part (padded only)
  uint64_t inputBytes = 0, outputBytes = 0;  // the plan's buffers (the call's when exact)
};

// sizePlan, and when it refuses the exact sizes, the same on the padded geometry. Every rank of a
// plan gets the same answer for the same call (chunk counts are equal on every rank). Unit plans
// (collective test or custom) are never padded.
SizingResult sizeCall(const PlanHeader& header, uint32_t inputChunks, uint32_t outputChunks, uint32_t scratchChunks,
                      int nRanks, uint64_t inputBytes, uint64_t outputBytes, size_t elementBytes,
                      CallGeometry* geometry);

// The input and output bytes of an NCCL call of count elements of elementBytes each on nRanks ranks:
//   allreduce, broadcast, reduce, sendrecv, custom, test: in = out = count * elem
//   allgather: in = count * elem, out = nRanks * in      reducescatter: out = count * elem, in = nRanks * out
//   alltoall: in = out = nRanks * count * elem (count is per peer)
//   gather: in = count * elem, out = nRanks * in (every rank's buffers are the root's sizes)
//   scatter: out = count * elem, in = nRanks * out
// Returns false when a product overflows 64 bits.
bool callBytes(Collective collective, uint64_t count, size_t elementBytes, int nRanks, uint64_t* inputBytes,
               uint64_t* outputBytes);

// The input and output bytes of a call from its message size as plans state it (min/max_message_size:
// the output size for allgather, the per-rank part for gather and scatter,
// the input size otherwise). Returns false (with a reason) when the
// message size does not split into nRanks equal parts where the collective needs it.
bool callBytesFromMessage(Collective collective, uint64_t messageBytes, int nRanks, uint64_t* inputBytes,
                          uint64_t* outputBytes, std::string* reason);

// Bytes per element of an NCCL datatype (ncclDataType_t numbering); 0 for an unknown value.
size_t ncclDataTypeBytes(int dtype);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_SIZING_HPP_
