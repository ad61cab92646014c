// The in-memory execution plan: what the loader produces from plan JSON (plan-format.md), what
// the registry selects, and what the executor runs. Every reference has been resolved and checked
// at load time, so the executor trusts these structures without re-validating them.
//
// Layout is chosen for the executor: each threadblock's ops, buffer references and id lists are
// flat arrays of trivially-copyable structs that can be copied to device memory as they are.
//
// Ownership and threads: a Plan is immutable once loaded and shared through
// std::shared_ptr<const Plan>; any thread may read it.
#ifndef MSCCLPP_PLAN_PLAN_HPP_
#define MSCCLPP_PLAN_PLAN_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace mscclpp::plan {

// Gather and Scatter are our extension of MSCCL++'s list (docs/plan-core.md).
enum class Collective : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  SendRecv,
  Broadcast,
  Reduce,
  Gather,
  Scatter,
  Custom,
  Test
};
enum class Protocol : uint8_t { Simple, LL };
enum class ChannelType : uint8_t { None, Memory, Port, Switch };
enum class BufferType : uint8_t { Input, Output, Scratch };
// The reduce_op written in the plan. The executor applies the op of the call (see
// PlanHeader::reduceOps for which call ops a plan serves).
enum class PlanReduceOp : uint8_t { None, Sum, Prod, Min, Max };

enum class OpType : uint8_t {
#define MSCCLPP_OP(name, json, isPacket) name,
#include "op_table.def"
#undef MSCCLPP_OP
};

// Decoding through the one table (op_table.def). Names are the JSON spellings.
const char* opTypeName(OpType type);
bool opTypeFromName(const std::string& name, OpType* type);
bool isPacketOp(OpType type);
const char* collectiveName(Collective c);
bool collectiveFromName(const std::string& name, Collective* c);
const char* channelTypeName(ChannelType t);
const char* bufferTypeName(BufferType t);  // "i", "o", "s"

// Where a reference points.
enum class RefKind : uint8_t {
  Local,      // this rank's input/output/scratch buffer (type says which)
  Remote,     // a peer's buffer reached through a channel: id = rank-level remote buffer index
  Multicast,  // a switch channel's multicast binding: id = rank-level switch channel index
};

// A chunk-granular slice of a buffer: bytes [index*chunk, (index+size)*chunk) where chunk is the
// plan's chunk size for the call (see plan_sizing.hpp: fixed per call from the message size). For packet data in
// scratch the executor doubles offsets and sizes (a packet carries half its bytes as payload).
struct BufferRef {
  RefKind kind;
  BufferType type;  // Local: which buffer; Remote: the remote buffer's type; Multicast: the bound buffer's type
  uint16_t reserved;
  uint32_t id;
  uint32_t index;
  uint32_t size;
};
static_assert(sizeof(BufferRef) == 16, "BufferRef is copied to device memory as is");

// One operation. Variable-length parts live in the threadblock's arrays: refs[srcBegin ..
// srcBegin+nSrc), refs[dstBegin .. dstBegin+nDst), ids[idsBegin .. idsBegin+nIds). For channel ops
// ids are RANK-LEVEL channel indexes of channelType (already translated through the threadblock's
// channel list); for sem_acquire/sem_release they are semaphore ids. Thread-block groups: op runs
// slice tbgId of tbgSize (tbgId 0 of tbgSize 1 when the op has no tbg_info). reduceOp is None for ops that
// do not reduce, and Sum for reducing ops without a reduce_op key (the DSL's default).
struct Op {
  OpType type;
  ChannelType channelType;
  PlanReduceOp reduceOp;
  uint8_t reserved0;
  uint16_t tbgId;
  uint16_t tbgSize;
  uint32_t srcBegin;
  uint32_t dstBegin;
  uint16_t nSrc;
  uint16_t nDst;
  uint32_t idsBegin;
  uint32_t nIds;
  uint32_t barrierId;        // barrier
  uint32_t numThreadblocks;  // barrier: blocks taking part
  uint32_t bodyCount;        // pipeline: the next bodyCount ops form its body
  uint32_t numChunks;        // pipeline: iter_context.num_chunks
  uint64_t unitSize;         // pipeline: iter_context.unit_size in bytes
};
static_assert(std::is_trivially_copyable<Op>::value, "Op is copied to device memory as is");

struct ThreadblockPlan {
  int id = 0;
  std::vector<Op> ops;  // a pipeline op is followed by its bodyCount body ops (no nesting)
  std::vector<BufferRef> refs;
  std::vector<uint32_t> ids;
  // Where each op was written (a DSL "file:line"), parallel to ops: the optional "source" key the DSL
  // compiler writes with source locations on (docs/plan-verifier.md). Empty when no op carries one; an
  // op without the key has "". Only the verifier and the plan picture read it.
  std::vector<std::string> opSources;
};

// One memory or port channel: the k-th channel of a type toward a peer pairs with the peer's k-th
// channel of that type toward this rank.
struct ChannelDecl {
  int peer = -1;
  int pairIndex = 0;  // k: how many earlier channels of this type this rank has toward the same peer
  // Not listed in the plan: added by the loader after this rank's listed channels because the peer lists
  // more channels of this type toward this rank than this rank lists toward the peer (MSCCL++ pairs them
  // the same way). No op of this rank uses it; it exists so that the peer's extra channel has its pair.
  bool implicit = false;
};

struct SwitchChannelDecl {
  BufferType bufferType = BufferType::Input;
  std::vector<int> ranks;  // the multicast group this rank belongs to (ascending rank order as in the plan)
};

struct RemoteBufferDecl {
  int rank = -1;
  BufferType type = BufferType::Input;
  bool viaMemory = false;  // access_channel_types contains "memory"
  bool viaPort = false;    // access_channel_types contains "port"
};

// gpus[r]. For a plan loaded for one rank (LoadOptions::onlyRank), the other ranks carry their
// channel and remote-buffer declarations (needed for pairing and for knowing what to export to
// them) but no threadblocks (hasOps == false).
struct RankPlan {
  int rank = -1;
  uint32_t inputChunks = 0;
  uint32_t outputChunks = 0;
  uint32_t scratchChunks = 0;
  std::vector<ChannelDecl> memoryChannels;  // rank-level index order
  std::vector<ChannelDecl> portChannels;
  std::vector<SwitchChannelDecl> switchChannels;
  std::vector<RemoteBufferDecl> remoteBuffers;
  std::vector<uint32_t> semaphoreInitValues;
  std::vector<ThreadblockPlan> threadblocks;
  uint32_t numBarriers = 0;  // max barrier_id + 1 over all ops of this rank
  bool hasOps = false;
};

struct PlanHeader {
  std::string name;
  std::string source;  // file path or a caller-given name ("<memory>")
  Collective collective = Collective::Custom;
  Protocol protocol = Protocol::Simple;
  bool inPlace = false;
  int worldSize = 0;
  int numThreadsPerBlock = 1024;
  bool useDoubleScratchBuffer = false;
  uint32_t bufferAlignment = 16;
  uint64_t minMessageSize = 0;
  uint64_t maxMessageSize = UINT64_MAX;
  bool reuseResources = false;
  int formatVersion = 0;  // 0: the key was absent (MSCCL++-compiled plans)
  std::vector<std::string> tags;
  int root = 0;           // broadcast/reduce/gather/scatter root (our optional "root" key)
  int nRanksPerNode = 0;  // our optional "nranks_per_node" key: the ranks per node the plan serves; 0 = any
  // Bit i set when the plan contains reduce_op i (PlanReduceOp). A plan whose only reduce op is
  // Sum (the DSL's default) serves every call op: the executor substitutes the call's op.
  uint32_t reduceOps = 0;
};

struct Plan {
  PlanHeader header;
  std::vector<RankPlan> ranks;  // index == rank
};

using PlanPtr = std::shared_ptr<const Plan>;

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_HPP_
