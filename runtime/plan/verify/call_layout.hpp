// Where a plan's references land at one chunk size, on every rank.
// The layout repeats the executor's, in context_image.cc and the interpreter,
// so the verifier's byte ranges are exactly the executor's.
#ifndef MSCCLPP_PLAN_VERIFY_CALL_LAYOUT_HPP_
#define MSCCLPP_PLAN_VERIFY_CALL_LAYOUT_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::plan::verify {

// The physical buffers of a rank.
// In-place plans have one data buffer holding input and output.
enum PhysBuffer : uint8_t { kDataBuffer = 0, kOutputBuffer = 1, kScratchBuffer = 2, kPhysBuffers = 3 };

struct RankLayout {
  uint8_t inputPhys = kDataBuffer;
  uint8_t outputPhys = kOutputBuffer;
  uint64_t inputBase = 0, inputBytes = 0;    // the input's place in inputPhys
  uint64_t outputBase = 0, outputBytes = 0;  // the output's place in outputPhys
  uint64_t scratchBytes = 0;                 // the whole scratch, both halves when doubled
  uint64_t halfBytes = 0;                    // the second half's offset; 0 when not doubled
};

struct CallLayout {
  uint64_t chunk = 0;         // bytes per chunk
  uint64_t scratchChunk = 0;  // bytes per scratch chunk; less than chunk when scratch wraps
  bool wrapScratch = false;   // pipelined scratch offsets wrap modulo scratchChunk
  uint64_t align = 1;
  uint64_t messageBytes = 0;  // the message size of this chunk, as plans state sizes
  std::vector<RankLayout> ranks;
  bool served = true;
  std::string refusal;  // why the executor refuses this size, when not served
};

// The message size with chunks of chunkBytes;
// false when no call has that chunk.
bool messageForChunk(const Plan& plan, uint64_t chunkBytes, uint64_t* messageBytes);

CallLayout makeLayout(const Plan& plan, uint64_t chunkBytes, uint64_t reuseScratchBytes);

// One byte range an op touches.
// Data is [off, off + len).
// Packets hold len data bytes at [off, off + 2 len);
// off is already doubled.
struct Loc {
  uint32_t rank = 0;
  uint8_t phys = kDataBuffer;
  bool packet = false;
  uint64_t off = 0;
  uint64_t len = 0;  // data bytes
  uint64_t physLen() const { return packet ? 2 * len : len; }
};

// What the interpreter knows when it resolves a reference,
// in op_interpreter.hpp.
struct RefContext {
  int rank = 0;  // the rank executing the op
  const Op* op = nullptr;
  bool inPipeline = false;
  uint64_t pipeOff = 0;  // iteration x unit
  uint64_t unit = 0;
  uint64_t half = 0;  // the executing rank's scratch half for this call
};

// The locations of one reference: one,
// or one per group member for multicast.
// len is what this iteration covers; 0 past a pipelined reference's end.
void resolveRef(const Plan& plan, const CallLayout& layout, const RefContext& ctx, const BufferRef& ref, bool packet,
                std::vector<Loc>* out);

// For messages: the buffer a physical position belongs to, and its chunk.
// An in-place plan's shared buffer is "data".
struct Place {
  std::string buffer;  // "rank 1 scratch"
  std::string chunks;  // "chunk 3", "chunks 2-3", "chunk 3 bytes [16, 32)"
};
Place describePlace(const Plan& plan, const CallLayout& layout, uint32_t rank, uint8_t phys, bool packet,
                    uint64_t begin, uint64_t end);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_CALL_LAYOUT_HPP_
