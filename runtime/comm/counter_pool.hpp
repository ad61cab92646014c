// Small counters for semaphores: 8-byte words, each alone on a 64-byte line (no false sharing
// between a counter the peer writes and one we spin on), carved out of 4 KiB blocks so that a
// communicator with many semaphores does not create one shared-memory segment or one cudaMalloc per
// counter. Host blocks come from allocSharedHost (every transport can reach them); device blocks
// from cudaMalloc (CUDA builds). Owned by a communicator; counters keep their block alive.
// Thread-safety: allocate() may be called from any thread.
#ifndef MSCCLPP_COMM_COUNTER_POOL_HPP_
#define MSCCLPP_COMM_COUNTER_POOL_HPP_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace mscclpp::comm {

class CounterPool : public std::enable_shared_from_this<CounterPool> {
 public:
  static constexpr size_t kBlockBytes = 4096;
  static constexpr size_t kSlotBytes = 64;

  // device: -1 for host memory, else the CUDA device the counters live on.
  explicit CounterPool(int device) : device_(device) {}

  // A zeroed counter; returning it to the pool when the last copy goes.
  std::shared_ptr<uint64_t> allocate();
  int device() const { return device_; }

 private:
  struct Block;
  void release(const std::shared_ptr<Block>& block, size_t slot);

  const int device_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Block>> blocks_;
};

}  // namespace mscclpp::comm

#endif  // MSCCLPP_COMM_COUNTER_POOL_HPP_
