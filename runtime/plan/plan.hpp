// The in-memory execution plan: loaded from plan JSON (docs/plan-format.md),
// chosen by the registry, run by the executor.
// The loader resolves and checks every reference, so the executor trusts it as is.
// A threadblock's ops, references and ids are flat arrays of trivially copyable
// structs: they go to device memory without conversion.
// Ownership: a loaded Plan is immutable and shared as PlanPtr; any thread may read it.
#ifndef MSCCLPP_PLAN_PLAN_HPP_
#define MSCCLPP_PLAN_PLAN_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace mscclpp::plan {

// Gather and Scatter extend MSCCL++'s list (docs/plan-format.md), and so do
// the variable-size collectives after Test (variable_sizes.hpp).
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
  Test,
  AllToAllV,
  AllGatherV,
  ReduceScatterV
};
enum class Protocol : uint8_t { Simple, LL };
enum class ChannelType : uint8_t { None, Memory, Port, Switch };
enum class BufferType : uint8_t { Input, Output, Scratch };
// The reduce_op written in the plan.
// The executor applies the call's op;
// PlanHeader::reduceOps says which call ops a plan serves.
enum class PlanReduceOp : uint8_t { None, Sum, Prod, Min, Max };

enum class OpType : uint8_t {
#define MSCCLPP_OP(name, json, isPacket) name,
#include "op_table.def"
#undef MSCCLPP_OP
};

// Names are the JSON spellings; op names
// come from the one table, op_table.def.
const char* opTypeName(OpType type);
bool opTypeFromName(const std::string& name, OpType* type);
bool isPacketOp(OpType type);
const char* collectiveName(Collective c);
bool collectiveFromName(const std::string& name, Collective* c);
const char* channelTypeName(ChannelType t);
const char* bufferTypeName(BufferType t);  // "i", "o", "s"

// Where a reference points.
enum class RefKind : uint8_t {
  Local,      // this rank's buffer of the given type
  Remote,     // a peer's buffer; id is the rank-level remote buffer
  Multicast,  // a switch channel's binding; id is the rank-level switch channel
};

// Which per-call table places a segment reference (variable_sizes.hpp).
enum class SegmentTable : uint8_t { None, Send, Recv };

// Chunks of a buffer: bytes [index * chunk, (index + size) * chunk).
// The chunk size is fixed per call by plan_sizing.hpp.
// For packets in scratch the executor doubles offsets and sizes:
// half of a packet's bytes are payload.
// A segment reference (segment != None), only in variable-size plans,
// covers the owner's segment for segmentPeer instead: its place and size
// come from the call's counts, and index counts scratch slots.
struct BufferRef {
  RefKind kind;
  BufferType type;  // the referenced buffer; for Multicast the bound one
  SegmentTable segment;
  uint8_t reserved;
  uint32_t id;
  uint32_t index;
  uint32_t size;
  uint32_t segmentPeer;
};
static_assert(std::is_trivially_copyable<BufferRef>::value && sizeof(BufferRef) == 20, "compared as bytes");

// One operation.
// Its lists live in the threadblock's arrays:
// refs from srcBegin and dstBegin, ids from idsBegin.
// Channel ops hold rank-level channel indexes of channelType in ids,
// translated through the threadblock's list.
// Semaphore ops hold semaphore ids there.
// The op runs slice tbgId of tbgSize: 0 of 1 without tbg_info.
// reduceOp is None for ops that do not reduce; Sum, the DSL's default,
// when a reducing op has no reduce_op.
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
  uint32_t bodyCount;        // pipeline: the next bodyCount ops are its body
  uint32_t numChunks;        // pipeline: iter_context.num_chunks
  uint64_t unitSize;         // pipeline: iter_context.unit_size in bytes
};
static_assert(std::is_trivially_copyable<Op>::value, "Op is copied to device memory as is");

struct ThreadblockPlan {
  int id = 0;
  std::vector<Op> ops;  // a pipeline op is followed by its body; no nesting
  std::vector<BufferRef> refs;
  std::vector<uint32_t> ids;
  // Each op's DSL "file:line" from the optional "source" key,
  // parallel to ops.
  // Empty when no op has one; an op without it has "".
  // Only the verifier and the plan picture read it.
  std::vector<std::string> opSources;
};

// One memory or port channel.
// The k-th channel of a type toward a peer pairs with
// the peer's k-th channel of that type toward this rank.
struct ChannelDecl {
  int peer = -1;
  int pairIndex = 0;  // k: earlier channels of this type toward the same peer
  // Added by the loader, after the listed channels,
  // where the peer lists more channels toward
  // this rank than this rank lists back.
  // MSCCL++ pairs them alike.
  // No op of this rank uses it: it gives the peer's extra channel its pair.
  bool implicit = false;
};

struct SwitchChannelDecl {
  BufferType bufferType = BufferType::Input;
  std::vector<int> ranks;  // this rank's multicast group, in the plan's order
};

struct RemoteBufferDecl {
  int rank = -1;
  BufferType type = BufferType::Input;
  bool viaMemory = false;  // access_channel_types contains "memory"
  bool viaPort = false;    // access_channel_types contains "port"
};

// gpus[r].
// In a plan loaded for one rank,
// the other ranks keep their declarations
// but no threadblocks (hasOps false): pairing and exports need only those.
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
  std::string source;  // file path or a caller's name, such as "<memory>"
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
  int formatVersion = 0;  // 0: no format_version key, as in MSCCL++'s plans
  std::vector<std::string> tags;
  int root = 0;           // root of a rooted collective
  int nRanksPerNode = 0;  // the ranks per node the plan serves; 0 is any
  // variable_sizes: the counts bind segment references per call,
  // and scratch is scratch_chunks slots of slotBytes.
  bool variableSizes = false;
  uint64_t slotBytes = 0;
  // Bit i is set when the plan holds PlanReduceOp i.
  // A plan reducing only with Sum, the DSL's default, serves every call op:
  // the executor applies the call's.
  uint32_t reduceOps = 0;
};

struct Plan {
  PlanHeader header;
  std::vector<RankPlan> ranks;  // index == rank
};

using PlanPtr = std::shared_ptr<const Plan>;

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_HPP_
