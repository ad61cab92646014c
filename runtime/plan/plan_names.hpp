// Names of the plan model's enums beyond those plan.hpp declares, as JSON spells them.
// Lookups never allocate, so selection may use them.
#ifndef MSCCLPP_PLAN_PLAN_NAMES_HPP_
#define MSCCLPP_PLAN_PLAN_NAMES_HPP_

#include <cstddef>
#include <string_view>

#include "plan/plan.hpp"

namespace mscclpp::plan {

size_t numOpTypes();
bool opTypeFromName(std::string_view name, OpType* type);
bool collectiveFromName(std::string_view name, Collective* c);
// "allreduce, allgather, ..., test", for error messages; built once,
// valid for the process.
const char* collectiveNameList();
// Broadcast, reduce, gather, scatter: selection matches the plan's root.
bool isRootedCollective(Collective c);
bool channelTypeFromName(std::string_view name, ChannelType* t);  // "none", "memory", "port", "switch"
bool bufferTypeFromName(std::string_view name, BufferType* t);    // "i", "o", "s"
const char* bufferTypeLongName(BufferType t);                     // "input", "output", "scratch"
const char* planReduceOpName(PlanReduceOp op);                    // "sum", "prod", "min", "max", "none"
bool planReduceOpFromName(std::string_view name, PlanReduceOp* op);
const char* protocolName(Protocol p);  // "Simple", "LL"

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_NAMES_HPP_
