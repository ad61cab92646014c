// Name tables of the plan model's enums; op names come from op_table.def.
#include <cstring>
#include <string>

#include "plan/plan.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp::plan {
namespace {

struct OpName {
  const char* json;
  bool isPacket;
};
constexpr OpName kOpNames[] = {
#define MSCCLPP_OP(name, json, isPacket) {json, isPacket},
#include "plan/op_table.def"
#undef MSCCLPP_OP
};
constexpr size_t kNumOps = sizeof(kOpNames) / sizeof(kOpNames[0]);

constexpr const char* kCollectiveNames[] = {"allreduce", "allgather", "reducescatter", "alltoall",      "sendrecv",
                                            "broadcast", "reduce",    "gather",        "scatter",       "custom",
                                            "test",      "alltoallv", "allgatherv",    "reducescatterv"};
constexpr size_t kNumCollectives = sizeof(kCollectiveNames) / sizeof(kCollectiveNames[0]);
static_assert(kNumCollectives == static_cast<size_t>(Collective::ReduceScatterV) + 1, "one name per Collective");

bool equals(std::string_view a, const char* b) { return a.size() == std::strlen(b) && a.compare(b) == 0; }

}  // namespace

size_t numOpTypes() { return kNumOps; }

const char* opTypeName(OpType type) {
  const size_t i = static_cast<size_t>(type);
  return i < kNumOps ? kOpNames[i].json : "?";
}

bool opTypeFromName(std::string_view name, OpType* type) {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (equals(name, kOpNames[i].json)) {
      *type = static_cast<OpType>(i);
      return true;
    }
  }
  return false;
}

bool opTypeFromName(const std::string& name, OpType* type) { return opTypeFromName(std::string_view(name), type); }

bool isPacketOp(OpType type) {
  const size_t i = static_cast<size_t>(type);
  return i < kNumOps && kOpNames[i].isPacket;
}

const char* collectiveName(Collective c) {
  const size_t i = static_cast<size_t>(c);
  return i < kNumCollectives ? kCollectiveNames[i] : "?";
}

bool collectiveFromName(std::string_view name, Collective* c) {
  for (size_t i = 0; i < kNumCollectives; ++i) {
    if (equals(name, kCollectiveNames[i])) {
      *c = static_cast<Collective>(i);
      return true;
    }
  }
  return false;
}

const char* collectiveNameList() {
  // Built once from the table, so messages cannot miss a name;
  // static init is thread-safe.
  static const std::string list = [] {
    std::string s;
    for (size_t i = 0; i < kNumCollectives; ++i) s += std::string(i == 0 ? "" : ", ") + kCollectiveNames[i];
    return s;
  }();
  return list.c_str();
}

bool isRootedCollective(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather || c == Collective::Scatter;
}

bool collectiveFromName(const std::string& name, Collective* c) {
  return collectiveFromName(std::string_view(name), c);
}

const char* channelTypeName(ChannelType t) {
  switch (t) {
    case ChannelType::None:
      return "none";
    case ChannelType::Memory:
      return "memory";
    case ChannelType::Port:
      return "port";
    case ChannelType::Switch:
      return "switch";
  }
  return "?";
}

bool channelTypeFromName(std::string_view name, ChannelType* t) {
  for (ChannelType c : {ChannelType::None, ChannelType::Memory, ChannelType::Port, ChannelType::Switch}) {
    if (equals(name, channelTypeName(c))) {
      *t = c;
      return true;
    }
  }
  return false;
}

const char* bufferTypeName(BufferType t) {
  switch (t) {
    case BufferType::Input:
      return "i";
    case BufferType::Output:
      return "o";
    case BufferType::Scratch:
      return "s";
  }
  return "?";
}

const char* bufferTypeLongName(BufferType t) {
  switch (t) {
    case BufferType::Input:
      return "input";
    case BufferType::Output:
      return "output";
    case BufferType::Scratch:
      return "scratch";
  }
  return "?";
}

bool bufferTypeFromName(std::string_view name, BufferType* t) {
  for (BufferType b : {BufferType::Input, BufferType::Output, BufferType::Scratch}) {
    if (equals(name, bufferTypeName(b))) {
      *t = b;
      return true;
    }
  }
  return false;
}

const char* planReduceOpName(PlanReduceOp op) {
  switch (op) {
    case PlanReduceOp::None:
      return "none";
    case PlanReduceOp::Sum:
      return "sum";
    case PlanReduceOp::Prod:
      return "prod";
    case PlanReduceOp::Min:
      return "min";
    case PlanReduceOp::Max:
      return "max";
  }
  return "?";
}

bool planReduceOpFromName(std::string_view name, PlanReduceOp* op) {
  for (PlanReduceOp r : {PlanReduceOp::Sum, PlanReduceOp::Prod, PlanReduceOp::Min, PlanReduceOp::Max}) {
    if (equals(name, planReduceOpName(r))) {
      *op = r;
      return true;
    }
  }
  return false;
}

const char* protocolName(Protocol p) { return p == Protocol::LL ? "LL" : "Simple"; }

}  // namespace mscclpp::plan
