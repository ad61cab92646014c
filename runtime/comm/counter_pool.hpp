// Small counters for semaphores: 8-byte words, each alone on a
// 64-byte line so that a counter the peer writes never shares
// one we spin on. They come from 4 KiB blocks, so many
// semaphores need neither many shared-memory segments nor many
// cudaMallocs. Host blocks come from allocSharedHost, which
// every transport reaches; device blocks from cudaMalloc.
// Ownership: a communicator owns the pool; counters keep their block alive.
// Thread-safety: allocate() from any thread.
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

  // A zeroed counter, which returns to the pool when its last copy goes.
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
