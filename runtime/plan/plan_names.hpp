// Name <-> enum conversions of the plan model beyond the ones plan.hpp declares. All names are the JSON
// spellings (plan-format.md). Lookups never allocate, so they may run on the selection path.
#ifndef MSCCLPP_PLAN_PLAN_NAMES_HPP_
#define MSCCLPP_PLAN_PLAN_NAMES_HPP_

#include <cstddef>
#include <string_view>

#include "plan/plan.hpp"

namespace mscclpp::plan {

size_t numOpTypes();
bool opTypeFromName(std::string_view name, OpType* type);
bool collectiveFromName(std::string_view name, Collective* c);
// "allreduce, allgather, ..., test": every collective name in enum order, for error messages (built once
// from the name table; the pointer stays valid for the life of the process).
const char* collectiveNameList();
// Broadcast, reduce, gather, scatter: the plan's "root" matters and selection matches it.
bool isRootedCollective(Collective c);
bool channelTypeFromName(std::string_view name, ChannelType* t);  // "none", "memory", "port", "switch"
bool bufferTypeFromName(std::string_view name, BufferType* t);    // "i", "o", "s"
const char* bufferTypeLongName(BufferType t);                     // "input", "output", "scratch"
const char* planReduceOpName(PlanReduceOp op);                    // "sum", "prod", "min", "max" ("none")
bool planReduceOpFromName(std::string_view name, PlanReduceOp* op);
const char* protocolName(Protocol p);  // "Simple", "LL"

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_NAMES_HPP_
