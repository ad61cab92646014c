// One context's image as one contiguous block, ready for a single upload:
// every array the interpreter reads, then the state the launches update.
// Pointers into those arrays are rewritten for the block's device address;
// pointers out of the image (buffers, peers' counters, FIFO, abort flag) stay.
// Sections start and end on 16 bytes: the kernel copies op lists as vectors.
// The mutable sections come last, so they can be read back alone.
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
// The counts ContextImage::build will give a rank's image of `plan`, known
// before any peer is heard from: the memory is allocated before the exchange.
ImageCounts imageCountsOf(const plan::RankPlan& plan);

// The packed image's size, from its counts only: allocate this much, then
// pack for the allocation's address.
uint64_t packedImageBytes(const ImageCounts& counts);
uint64_t packedImageBytes(const ExecContextDevice& image);

// Packs the host image `image` relocated to `base`. The mutable sections
// get the image's current state: flag 1 and zero counters when fresh.
// Throws Error(InternalError) when a handle points outside the image.
PackedImage packDeviceImage(const ExecContextDevice& image, uint64_t base);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_DEVICE_IMAGE_HPP_
