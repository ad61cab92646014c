#include "plan/op_rules.hpp"

#include "plan/plan_names.hpp"

namespace mscclpp::plan {
namespace {

constexpr uint8_t kNone = 1u << static_cast<unsigned>(ChannelType::None);
constexpr uint8_t kMemory = 1u << static_cast<unsigned>(ChannelType::Memory);
constexpr uint8_t kPort = 1u << static_cast<unsigned>(ChannelType::Port);
constexpr uint8_t kSwitch = 1u << static_cast<unsigned>(ChannelType::Switch);

using S = RefSlot;
constexpr RefRule kNoRefs{{S::Local, S::Local}, 0, S::Local, 0, 0};
constexpr RefRule one(S slot) { return RefRule{{slot, slot}, 0, slot, 1, 1}; }
constexpr RefRule atLeast(uint16_t n, S slot) { return RefRule{{slot, slot}, 0, slot, n, kUnboundedRefs}; }
// Position 0 is slot first, every other one rest, at least n in all.
constexpr RefRule headThen(S first, S rest, uint16_t n) { return RefRule{{first, rest}, 1, rest, n, kUnboundedRefs}; }

constexpr RefRule kReduceSrcPackets = headThen(S::Local, S::LocalPackets, 2);

struct Row {
  OpType type;
  OpRule rule;
};

// One row per op in op_table.def order, checked below.
constexpr Row kRows[] = {
    // type, {channelTypes, channelIds, src, dst, pairing, reduces,
    //        barrier, semaphores, pipeline, portSrcIsPackets, portIdsPerDst}
    {OpType::Nop,
     {kNone, ChannelIdsUse::Unused, kNoRefs, kNoRefs, RefPairing::None, false, false, false, false, false, false}},
    {OpType::Barrier,
     {kNone, ChannelIdsUse::Unused, kNoRefs, kNoRefs, RefPairing::None, false, true, false, false, false, false}},
    {OpType::Signal,
     {kMemory | kPort, ChannelIdsUse::Required, kNoRefs, kNoRefs, RefPairing::None, false, false, false, false, false,
      false}},
    {OpType::Wait,
     {kMemory | kPort, ChannelIdsUse::Required, kNoRefs, kNoRefs, RefPairing::None, false, false, false, false, false,
      false}},
    {OpType::RelaxedSignal,
     {kMemory, ChannelIdsUse::Required, kNoRefs, kNoRefs, RefPairing::None, false, false, false, false, false, false}},
    {OpType::RelaxedWait,
     {kMemory, ChannelIdsUse::Required, kNoRefs, kNoRefs, RefPairing::None, false, false, false, false, false, false}},
    {OpType::Flush,
     {kPort, ChannelIdsUse::Required, kNoRefs, kNoRefs, RefPairing::None, false, false, false, false, false, false}},
    {OpType::Put,
     {kMemory | kPort, ChannelIdsUse::Optional, atLeast(1, S::Local), atLeast(1, S::Remote), RefPairing::EqualOrOneSrc,
      false, false, false, false, false, true}},
    {OpType::PutWithSignal,
     {kPort, ChannelIdsUse::Required, atLeast(1, S::Local), atLeast(1, S::Remote), RefPairing::EqualOrOneSrc, false,
      false, false, false, false, true}},
    {OpType::PutWithSignalAndFlush,
     {kPort, ChannelIdsUse::Required, atLeast(1, S::Local), atLeast(1, S::Remote), RefPairing::EqualOrOneSrc, false,
      false, false, false, false, true}},
    {OpType::Get,
     {kMemory, ChannelIdsUse::Optional, atLeast(1, S::Remote), atLeast(1, S::Local), RefPairing::Equal, false, false,
      false, false, false, false}},
    {OpType::Copy,
     {kNone, ChannelIdsUse::Unused, one(S::Local), one(S::Local), RefPairing::None, false, false, false, false, false,
      false}},
    {OpType::Reduce,
     {kNone, ChannelIdsUse::Unused, atLeast(2, S::Local), one(S::Local), RefPairing::None, true, false, false, false,
      false, false}},
    {OpType::ReduceSend,
     {kMemory, ChannelIdsUse::Optional, atLeast(2, S::Local), headThen(S::Local, S::Remote, 2), RefPairing::None, true,
      false, false, false, false, false}},
    {OpType::ReadReduce,
     {kMemory, ChannelIdsUse::Optional, headThen(S::Local, S::Remote, 2), one(S::Local), RefPairing::None, true, false,
      false, false, false, false}},
    {OpType::ReadReduceSend,
     {kMemory, ChannelIdsUse::Optional, headThen(S::Local, S::Remote, 2), headThen(S::Local, S::Remote, 2),
      RefPairing::None, true, false, false, false, false, false}},
    {OpType::PutPackets,
     {kMemory | kPort, ChannelIdsUse::Optional, atLeast(1, S::Local), atLeast(1, S::RemotePackets),
      RefPairing::EqualOrOneSrc, false, false, false, false, true, true}},
    {OpType::ReadPutPackets,
     {kMemory | kPort, ChannelIdsUse::Optional, atLeast(1, S::LocalPackets), atLeast(1, S::RemotePackets),
      RefPairing::EqualOrOneSrc, false, false, false, false, false, true}},
    {OpType::CopyPackets,
     {kNone, ChannelIdsUse::Unused, one(S::Local), one(S::LocalPackets), RefPairing::None, false, false, false, false,
      false, false}},
    {OpType::UnpackPackets,
     {kNone, ChannelIdsUse::Unused, one(S::LocalPackets), one(S::Local), RefPairing::None, false, false, false, false,
      false, false}},
    {OpType::ReducePackets,
     {kNone, ChannelIdsUse::Unused, kReduceSrcPackets, one(S::Local), RefPairing::None, true, false, false, false,
      false, false}},
    {OpType::ReduceSendPackets,
     {kMemory, ChannelIdsUse::Optional, kReduceSrcPackets, headThen(S::Local, S::RemotePackets, 2), RefPairing::None,
      true, false, false, false, false, false}},
    {OpType::ReduceCopyPackets,
     {kNone, ChannelIdsUse::Unused, kReduceSrcPackets, RefRule{{S::Local, S::LocalPackets}, 2, S::LocalPackets, 2, 2},
      RefPairing::None, true, false, false, false, false, false}},
    {OpType::ReduceCopySendPackets,
     {kMemory, ChannelIdsUse::Optional, kReduceSrcPackets,
      RefRule{{S::Local, S::LocalPackets}, 2, S::RemotePackets, 3, kUnboundedRefs}, RefPairing::None, true, false,
      false, false, false, false}},
    {OpType::GroupLoadReduce,
     {kSwitch, ChannelIdsUse::Optional, one(S::Multicast), one(S::Local), RefPairing::None, true, false, false, false,
      false, false}},
    {OpType::GroupLoadReduceStore,
     {kSwitch, ChannelIdsUse::Optional, one(S::Multicast), one(S::Multicast), RefPairing::None, true, false, false,
      false, false, false}},
    {OpType::GroupStore,
     {kSwitch, ChannelIdsUse::Optional, one(S::Local), one(S::Multicast), RefPairing::None, false, false, false, false,
      false, false}},
    {OpType::GroupStorePackets,
     {kSwitch, ChannelIdsUse::Optional, one(S::LocalPackets), one(S::MulticastPackets), RefPairing::None, false, false,
      false, false, false, false}},
    {OpType::SemAcquire,
     {kNone, ChannelIdsUse::Unused, kNoRefs, kNoRefs, RefPairing::None, false, false, true, false, false, false}},
    {OpType::SemRelease,
     {kNone, ChannelIdsUse::Unused, kNoRefs, kNoRefs, RefPairing::None, false, false, true, false, false, false}},
    {OpType::Pipeline,
     {kNone, ChannelIdsUse::Unused, kNoRefs, kNoRefs, RefPairing::None, false, false, false, true, false, false}},
};

constexpr bool rowsInTableOrder() {
  for (size_t i = 0; i < sizeof(kRows) / sizeof(kRows[0]); ++i) {
    if (static_cast<size_t>(kRows[i].type) != i) return false;
  }
  return true;
}
static_assert(rowsInTableOrder(), "kRows must follow op_table.def order");

constexpr size_t kTableOps = 0
#define MSCCLPP_OP(name, json, isPacket) +1
#include "plan/op_table.def"
#undef MSCCLPP_OP
    ;
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kTableOps, "one rule per op of op_table.def");

}  // namespace

const OpRule& opRule(OpType type) { return kRows[static_cast<size_t>(type)].rule; }

const char* refSlotDescription(RefSlot slot) {
  switch (slot) {
    case RefSlot::Local:
      return "a local reference ({type,index,size})";
    case RefSlot::LocalPackets:
      return "a local scratch reference holding packets ({type:\"s\",index,size})";
    case RefSlot::Remote:
      return "a remote reference ({buffer_id,index,size})";
    case RefSlot::RemotePackets:
      return "a remote scratch reference receiving packets ({buffer_id,index,size})";
    case RefSlot::Multicast:
      return "a multicast reference ({switch_channel_id,index,size})";
    case RefSlot::MulticastPackets:
      return "a multicast reference to scratch carrying packets ({switch_channel_id,index,size})";
  }
  return "?";
}

}  // namespace mscclpp::plan
