// Mutations of a loaded plan, to test the plan verifier. Each mutant
// still loads, but breaks synchronisation or data flow as a bug would.
//   drop-wait      a wait, rlxwait or sem_acquire removed, one channel at a time
//   drop-signal    a signal, rlxsignal or sem_release removed, likewise
//   early-op       the first data op after a wait moved before that wait
//   shift-chunk    one buffer reference of a data op moved to the next chunk
//   drop-nop       a block-wide barrier removed
//   drop-pair      a wait and the signal it consumes removed: the counts
//                  balance, so only the data's ordering shows the damage
#ifndef MSCCLPP_TOOLS_PLAN_PLAN_MUTATIONS_HPP_
#define MSCCLPP_TOOLS_PLAN_PLAN_MUTATIONS_HPP_

#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::plan::mutate {

enum class Kind { DropWait, DropSignal, DropPair, EarlyOp, ShiftChunk, DropNop };
constexpr Kind kAllKinds[] = {Kind::DropWait, Kind::DropSignal, Kind::DropPair,
                              Kind::EarlyOp,  Kind::ShiftChunk, Kind::DropNop};
const char* kindName(Kind kind);

struct Mutation {
  Kind kind = Kind::DropWait;
  int rank = 0, tb = 0;
  uint32_t op = 0;      // the op mutated (index in the threadblock's flat op list)
  int slot = -1;        // the channel or reference changed; -1: the whole op
  uint32_t target = 0;  // early-op: the wait the op moves before
  // drop-pair: the signal removed with the wait; slot -1 for the whole op
  int pairRank = -1, pairTb = -1, pairSlot = -1;
  uint32_t pairOp = 0;
  std::string text;  // "rank 1 tb 0 op 3 (wait): drop channel 2"
};

std::vector<Mutation> list(const Plan& plan, Kind kind);
// A copy of plan with the mutation applied.
Plan apply(const Plan& plan, const Mutation& m);

// Why a drop-nop mutant changes nothing a GPU could observe,
// or "". The block's start or end, or a neighbouring
// barrier, may synchronise the block already; or the ops on
// both sides run on one thread and touch no data.
std::string harmlessNop(const Plan& plan, const Mutation& m);

}  // namespace mscclpp::plan::mutate

#endif  // MSCCLPP_TOOLS_PLAN_PLAN_MUTATIONS_HPP_
