// A rank's memory for its GPU contexts, kept from context to context. Page-table
// changes (cudaMalloc, cudaFree, cudaHostAlloc, cudaFreeHost, IPC close) wait for
// the device holding the driver's lock, which blocks every other thread's CUDA
// call on it; made while a kernel of the world spins on a rank whose thread the
// lock blocks, they never return. So a destroyed context frees nothing: its
// blocks come back here for the next build, and what else of it changes page
// tables when it goes (its proxy's FIFO, CUDA IPC mappings, NVLS bindings) waits
// here for the next quiet point (docs/cuda-backend.md, "Context memory").
// Thread-safety: giveBack() and retire() from any thread; the rest from the
// rank's thread.
#ifndef MSCCLPP_EXECUTOR_CUDA_CONTEXT_MEMORY_HPP_
#define MSCCLPP_EXECUTOR_CUDA_CONTEXT_MEMORY_HPP_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executor/cuda/gpu_memory.hpp"

namespace mscclpp::exec {

class ContextMemory {
 public:
  explicit ContextMemory(int device) : device_(device) {}
  // Waits for the device, then frees everything.
  ~ContextMemory();
  ContextMemory(const ContextMemory&) = delete;
  ContextMemory& operator=(const ContextMemory&) = delete;

  // The quiet point of a build, once every rank of the world has issued its
  // earlier calls: waits for this rank's device to finish them, then drops
  // what was retired. Page-table changes are safe until the build's exchange.
  void quiesce(const std::string& who);
  // Zeroed blocks of at least `bytes`: an idle block when one fits (at most
  // twice the size), else a new allocation. Only between quiesce() and the
  // build's exchange.
  std::unique_ptr<DeviceAllocation> device(size_t bytes, const std::string& what);
  std::unique_ptr<PinnedAllocation> pinned(size_t bytes, const std::string& what);
  // After the build's takes: frees the blocks idle since before the previous
  // quiet point (kept through one build, a block returned meanwhile can be
  // taken by the next).
  void trim();

  // From a destroyed context, whose device work has ended.
  void giveBack(std::unique_ptr<DeviceAllocation> block);
  void giveBack(std::unique_ptr<PinnedAllocation> block);
  // Something whose destruction changes page tables: dropped at the next quiet point.
  void retire(std::shared_ptr<void> object);

 private:
  template <class Block>
  struct Idle {
    std::unique_ptr<Block> block;
    uint64_t since;  // the quiet points counted when it came back
  };
  int device_;
  std::mutex mutex_;
  uint64_t quietPoints_ = 0;
  std::vector<Idle<DeviceAllocation>> idleDevice_;
  std::vector<Idle<PinnedAllocation>> idlePinned_;
  std::vector<std::shared_ptr<void>> retired_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_CONTEXT_MEMORY_HPP_
