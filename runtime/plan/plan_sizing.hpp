// The one rule for whether a plan serves a call's byte sizes, and with which chunk.
// Selection and the executor's buffers both use it; nothing else derives chunk sizes.
// The rule and why in-place plans need no special case: docs/plan-core.md, "Sizing".
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
  uint64_t scratchBytes = 0;  // this rank's scratch for the call, when ok
  std::string reason;         // why not; empty when ok
};

// Exact sizes only; sizeCall adds the padded geometry.
// elementBytes matters only when the plan reduces; 0 skips that check.
SizingResult sizePlan(const PlanHeader& header, const RankPlan& rank, uint64_t inputBytes, uint64_t outputBytes,
                      size_t elementBytes);
// The same from the chunk counts, all the registry knows before a load.
// Every rank has the same input and output chunks.
SizingResult sizePlan(const PlanHeader& header, uint32_t inputChunks, uint32_t outputChunks, uint32_t scratchChunks,
                      uint64_t inputBytes, uint64_t outputBytes, size_t elementBytes);

// How many rank-major parts of equal size a call's buffers hold: 1,
// or nRanks for allgather and gather output,
// reducescatter and scatter input, and alltoall.
void bufferParts(Collective collective, int nRanks, uint32_t* inputParts, uint32_t* outputParts);

// A call's geometry on a plan: exact, or
// padded (docs/plan-core.md, "Sizing").
// Padded stores each part of partBytes at paddedPartBytes,
// the smallest size at least partBytes that sizePlan accepts.
// The plan then runs on buffers of
// inputParts and outputParts padded parts.
struct CallGeometry {
  bool padded = false;
  uint32_t inputParts = 1, outputParts = 1;
  uint64_t partBytes = 0;                    // the call's bytes per part, when padded
  uint64_t paddedPartBytes = 0;              // the plan's bytes per part, when padded
  uint64_t inputBytes = 0, outputBytes = 0;  // the plan's buffers; the call's when exact
};

// sizePlan,
// then the padded geometry when sizePlan refuses the exact sizes.
// Every rank gets the same answer,
// as chunk counts are equal on every rank.
// Plans of collective test or custom are never padded.
SizingResult sizeCall(const PlanHeader& header, uint32_t inputChunks, uint32_t outputChunks, uint32_t scratchChunks,
                      int nRanks, uint64_t inputBytes, uint64_t outputBytes, size_t elementBytes,
                      CallGeometry* geometry);

// The input and output bytes of an NCCL
// call of count elements on nRanks ranks:
//   allreduce, broadcast, reduce, sendrecv, custom, test: in = out = count * elem
//   allgather, gather: in = count * elem, out = nRanks * in
//   reducescatter, scatter: out = count * elem, in = nRanks * out
//   alltoall: in = out = nRanks * count * elem; count is per peer
// Gather and scatter give every rank the root's sizes.
// Returns false when a product overflows 64 bits.
bool callBytes(Collective collective, uint64_t count, size_t elementBytes, int nRanks, uint64_t* inputBytes,
               uint64_t* outputBytes);

// The input and output bytes of a call from its message size,
// as plans state it: the output for allgather,
// the per-rank part for gather and scatter, else the input.
// Returns false with a reason when the size does not split
// into nRanks parts where the collective needs that.
bool callBytesFromMessage(Collective collective, uint64_t messageBytes, int nRanks, uint64_t* inputBytes,
                          uint64_t* outputBytes, std::string* reason);

// Bytes per element of an ncclDataType_t value; 0 when unknown.
size_t ncclDataTypeBytes(int dtype);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_SIZING_HPP_
