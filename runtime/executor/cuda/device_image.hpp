// One execution context's image as one contiguous block of bytes, ready to be copied to device
// memory in a single upload: every array the interpreter reads (ExecContextDevice, threadblocks,
// ops, resolved references, ids, channel handles, switch member tables) and the mutable state the
// launches update (ExecState, block records, semaphore expected counters, sem_* counters,
// barriers), with every pointer into those arrays rewritten for the address the block will live
// at. Pointers that lead outside the image (buffers, peers' counters, the proxy FIFO, the abort
// flag) are kept as they are: the context builder already made them valid on the device.
//
// Layout: every section starts at a multiple of 16 bytes and is padded to 16 (the kernel copies
// op lists to shared memory with 16-byte vectors). The immutable sections come first, then the
// mutable ones, so the mutable part can be read back (diagnostics) or re-uploaded (reset) alone.
//
// Thread-safety: pure functions of their arguments.
#ifndef MSCCLPP_EXECUTOR_CUDA_DEVICE_IMAGE_HPP_
#define MSCCLPP_EXECUTOR_CUDA_DEVICE_IMAGE_HPP_

#include <cstdint>
#include <vector>

#include "executor/exec_layout.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

struct PackedImage {
  std::vector<char> bytes;     // the image, relocated for `base`
  uint64_t base = 0;           // the address the image's internal pointers assume
  uint64_t contextOffset = 0;  // the ExecContextDevice the kernel receives (base + contextOffset)
  uint64_t mutableOffset = 0;  // first byte of the mutable sections
  uint64_t mutableBytes = 0;
  uint64_t stateOffset = 0;                // ExecState
  uint64_t recordsOffset = 0;              // BlockRecord[nBlocks]
  std::vector<uint64_t> blockOpListBytes;  // per block, as the kernel lays it out in shared memory
};

// What the size of a packed image depends on: the counts of its arrays.
struct ImageCounts {
  struct Block {
    uint32_t nOps = 0, nRefs = 0, nIds = 0;
  };
  std::vector<Block> blocks;
  uint32_t nMemoryChannels = 0, nPortChannels = 0;
  std::vector<uint32_t> switchMembers;  // per switch channel
  uint32_t nSemaphores = 0, nBarriers = 0;
  bool operator==(const ImageCounts& o) const;
};
ImageCounts imageCountsOf(const ExecContextDevice& image);
// The counts a rank's image of `plan` will have (what ContextImage::build makes of the plan), known
// before any peer is heard from: the device memory is allocated before the exchange.
ImageCounts imageCountsOf(const plan::RankPlan& plan);

// The size of the packed image (depends only on its counts): allocate this much, then pack for the
// allocation's address.
uint64_t packedImageBytes(const ImageCounts& counts);
uint64_t packedImageBytes(const ExecContextDevice& image);

// Packs `image` (a host image: ContextImage::device()) relocated to `base`. The mutable sections
// receive the current values of the image's state (a fresh context's: flag 1, counters zero).
// Throws Error(InternalError) when a channel handle points to state outside the image's arrays.
PackedImage packDeviceImage(const ExecContextDevice& image, uint64_t base);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_DEVICE_IMAGE_HPP_
