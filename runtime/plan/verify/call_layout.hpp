// Where a plan's references land for one chunk size: the buffers of every rank as the executor lays
// them out (context_image.cc: shapeCall, inPlaceLayout, resolveThreadblocks, and the interpreter's
// span/bufferOffset), so the verifier's byte ranges are exactly the executor's.
#ifndef MSCCLPP_PLAN_VERIFY_CALL_LAYOUT_HPP_
#define MSCCLPP_PLAN_VERIFY_CALL_LAYOUT_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::plan::verify {

// The physical buffers of a rank. In-place plans have one data buffer holding input and output.
enum PhysBuffer : uint8_t { kDataBuffer = 0, kOutputBuffer = 1, kScratchBuffer = 2, kPhysBuffers = 3 };

struct RankLayout {
  uint8_t inputPhys = kDataBuffer;
  uint8_t outputPhys = kOutputBuffer;
  uint64_t inputBase = 0, inputBytes = 0;    // the input's place in inputPhys
  uint64_t outputBase = 0, outputBytes = 0;  // the output's place in outputPhys
  uint64_t scratchBytes = 0;                 // the whole scratch (both halves with double scratch)
  uint64_t halfBytes = 0;                    // the second half's offset (0 without double scratch)
};

struct CallLayout {
  uint64_t chunk = 0;         // bytes per chunk
  uint64_t scratchChunk = 0;  // bytes per scratch chunk (smaller than chunk when reuse_resources wraps)
  bool wrapScratch = false;   // pipelined scratch offsets wrap modulo scratchChunk
  uint64_t align = 1;
  uint64_t messageBytes = 0;  // the message size this chunk stands for (as plans state sizes)
  std::vector<RankLayout> ranks;
  bool served = true;
  std::string refusal;  // why the executor refuses this size (served false)
};

// The message size a chunk of chunkBytes stands for, or false when no call of the plan has that chunk.
bool messageForChunk(const Plan& plan, uint64_t chunkBytes, uint64_t* messageBytes);

CallLayout makeLayout(const Plan& plan, uint64_t chunkBytes, uint64_t reuseScratchBytes);

// One byte range an op touches. Data ranges: [off, off + len). Packet ranges hold len data bytes as
// LL packets at [off, off + 2 len) (off already includes the doubling).
struct Loc {
  uint32_t rank = 0;
  uint8_t phys = kDataBuffer;
  bool packet = false;
  uint64_t off = 0;
  uint64_t len = 0;  // data bytes
  uint64_t physLen() const { return packet ? 2 * len : len; }
};

// What the interpreter knows when it resolves a reference (op_interpreter.hpp: span, bufferOffset).
struct RefContext {
  int rank = 0;  // the rank executing the op
  const Op* op = nullptr;
  bool inPipeline = false;
  uint64_t pipeOff = 0;  // iteration x unit
  uint64_t unit = 0;
  uint64_t half = 0;  // the executing rank's scratch half for this call
};

// The locations of one reference: one for local and remote references, one per group member for
// multicast ones. len is the span this iteration covers (0 past a pipelined reference's end).
void resolveRef(const Plan& plan, const CallLayout& layout, const RefContext& ctx, const BufferRef& ref, bool packet,
                std::vector<Loc>* out);

// The buffer type of a rank that a physical position belongs to, for messages: "input", "output",
// "scratch", "data" (in place, both) and the chunk it falls in.
struct Place {
  std::string buffer;  // "rank 1 scratch"
  std::string chunks;  // "chunk 3", "chunks 2-3", "chunk 3 bytes [16, 32)"
};
Place describePlace(const Plan& plan, const CallLayout& layout, uint32_t rank, uint8_t phys, bool packet,
                    uint64_t begin, uint64_t end);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_CALL_LAYOUT_HPP_
