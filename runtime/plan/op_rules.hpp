// The one table of op shapes the loader validates against: channel types and ids,
// the references of each kind, the side holding LL packets, the extra fields.
// It follows the op semantics of docs/plan-format.md and what MSCCL++'s compiler emits.
// docs/plan-core.md prints it as a table.
#ifndef MSCCLPP_PLAN_OP_RULES_HPP_
#define MSCCLPP_PLAN_OP_RULES_HPP_

#include <cstdint>

#include "plan/plan.hpp"

namespace mscclpp::plan {

// What one position of src_buff/dst_buff must be.
enum class RefSlot : uint8_t {
  Local,             // {type,index,size}: this rank's input, output or scratch
  LocalPackets,      // this rank's scratch holding LL packets
  Remote,            // {buffer_id,index,size}: a peer's buffer, through the op's channel type
  RemotePackets,     // a peer's scratch receiving LL packets
  Multicast,         // {switch_channel_id,index,size}: a switch channel's binding
  MulticastPackets,  // a binding of scratch carrying LL packets
};
const char* refSlotDescription(RefSlot slot);  // "a local reference ({type,index,size})", ...

constexpr uint16_t kUnboundedRefs = 0xFFFF;

struct RefRule {
  RefSlot fixed[2];  // slots of positions 0 and 1 when nFixed covers them
  uint8_t nFixed;    // leading positions with their own slot
  RefSlot rest;      // slot of every position >= nFixed
  uint16_t min;      // fewest references
  uint16_t max;      // most references; kUnboundedRefs is the model's 65535
  RefSlot slot(size_t position) const { return position < nFixed ? fixed[position] : rest; }
};

enum class ChannelIdsUse : uint8_t {
  Unused,    // the op has no channel_ids; a present key is ignored
  Required,  // at least one id
  Optional,  // ids may be given; they are checked and kept
};

enum class RefPairing : uint8_t {
  None,
  Equal,          // as many src_buff as dst_buff references; k pairs with k
  EqualOrOneSrc,  // equal counts, or one src_buff sent to every dst_buff
};

struct OpRule {
  uint8_t channelTypes;  // bit 1 << ChannelType per allowed type; None is no channel
  ChannelIdsUse channelIds;
  RefRule src;
  RefRule dst;
  RefPairing pairing;
  bool reduces;           // reads reduce_op, default sum
  bool barrier;           // reads barrier_id and num_threadblocks
  bool semaphores;        // reads at least one semaphore_ids entry
  bool pipeline;          // reads iter_context and a nested ops list
  bool portSrcIsPackets;  // over port channels the src is already packets in scratch
  bool portIdsPerDst;     // over port channels one channel id per dst_buff, leading to its rank
};

const OpRule& opRule(OpType type);

inline bool allowsChannelType(const OpRule& rule, ChannelType t) {
  return (rule.channelTypes & (1u << static_cast<unsigned>(t))) != 0;
}

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_OP_RULES_HPP_
