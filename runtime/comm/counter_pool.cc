#include "comm/counter_pool.hpp"

#include "core/enforce.hpp"
#include "mscclpp/memory.hpp"
#include "mscclpp_config.h"
#include "transport/device_memory.hpp"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp::comm {

struct CounterPool::Block {
  std::shared_ptr<void> memory;
  std::vector<bool> used = std::vector<bool>(kBlockBytes / kSlotBytes, false);
  char* base() const { return static_cast<char*>(memory.get()); }
};

namespace {

std::shared_ptr<void> allocateBlock(int device) {
  if (device < 0) return allocSharedHostBytes(CounterPool::kBlockBytes);
#if MSCCLPP_HAVE_CUDA
  void* p = nullptr;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(&p, CounterPool::kBlockBytes);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError,
                  "semaphore counters: cudaMalloc of %zu bytes on device %d: %s", CounterPool::kBlockBytes, device,
                  cudaGetErrorString(e));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
#else
  MSCCLPP_THROW(ErrorCode::NotSupported, "semaphore counters on CUDA device %d: this build has no CUDA support",
                device);
#endif
}

// A slot is zeroed as it is handed out: on a GPU, on a stream of ours and
// waited for, so the counter reads 0 before any kernel can use it.
void zeroSlot(int device, void* p) {
  if (device < 0) {
    __atomic_store_n(static_cast<uint64_t*>(p), 0, __ATOMIC_RELAXED);
    return;
  }
  transport::zeroDeviceMemory(device, p, sizeof(uint64_t), "semaphore counter");
}

}  // namespace

std::shared_ptr<uint64_t> CounterPool::allocate() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<Block> block;
  size_t slot = 0;
  for (auto& b : blocks_) {
    for (size_t i = 0; i < b->used.size(); ++i) {
      if (!b->used[i]) {
        block = b;
        slot = i;
        break;
      }
    }
    if (block) break;
  }
  if (!block) {
    block = std::make_shared<Block>();
    block->memory = allocateBlock(device_);
    blocks_.push_back(block);
  }
  uint64_t* p = reinterpret_cast<uint64_t*>(block->base() + slot * kSlotBytes);
  zeroSlot(device_, p);
  block->used[slot] = true;
  std::weak_ptr<CounterPool> pool = weak_from_this();
  return std::shared_ptr<uint64_t>(p, [pool, block, slot](uint64_t*) {
    if (auto self = pool.lock()) self->release(block, slot);
  });
}

void CounterPool::release(const std::shared_ptr<Block>& block, size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  block->used[slot] = false;
}

}  // namespace mscclpp::comm
