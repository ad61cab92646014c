#include "executor/cuda/context_memory.hpp"

#include <cstring>

#include "core/logger.hpp"
#include "executor/cuda/cuda_check.hpp"

namespace mscclpp::exec {

namespace {

// The idle block that fits `bytes` best, at most twice its size (a block much
// larger than the need is left for trim), or null.
template <class Entry>
decltype(Entry::block) takeFitting(std::vector<Entry>& idle, size_t bytes) {
  const size_t need = bytes == 0 ? 1 : bytes;
  size_t best = idle.size();
  for (size_t i = 0; i < idle.size(); ++i) {
    const size_t have = idle[i].block->bytes();
    if (have >= need && have / 2 <= need && (best == idle.size() || have < idle[best].block->bytes())) best = i;
  }
  if (best == idle.size()) return nullptr;
  decltype(Entry::block) b = std::move(idle[best].block);
  idle.erase(idle.begin() + static_cast<long>(best));
  return b;
}

// Moves out the entries idle since before quiet point `before`.
template <class Entry>
std::vector<Entry> takeStale(std::vector<Entry>& idle, uint64_t before) {
  std::vector<Entry> stale, kept;
  for (Entry& e : idle) (e.since < before ? stale : kept).push_back(std::move(e));
  idle.swap(kept);
  return stale;
}

}  // namespace

ContextMemory::~ContextMemory() {
  // Whoever drops the rank's last context: the rank's thread, or the
  // releaser's when a graph held it. Every launch of ours has been issued.
  DeviceGuard guard(device_);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    MSCCLPP_WARN(LogExec, "GPU %d: waiting for the device before freeing the contexts' memory: %s", device_,
                 cudaGetErrorString(e));
  }
  retired_.clear();
  idleDevice_.clear();
  idlePinned_.clear();
}

void ContextMemory::quiesce(const std::string& who) {
  MSCCLPP_CUDA_CHECK(cudaDeviceSynchronize(), "%s: waiting for the GPU's earlier work before the build's allocations",
                     who.c_str());
  std::vector<std::shared_ptr<void>> drop;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drop.swap(retired_);
    ++quietPoints_;
  }
  drop.clear();  // their frees and unmappings, now that nothing of the world runs
}

std::unique_ptr<DeviceAllocation> ContextMemory::device(size_t bytes, const std::string& what) {
  std::unique_ptr<DeviceAllocation> b;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    b = takeFitting(idleDevice_, bytes);
  }
  if (!b) return std::make_unique<DeviceAllocation>(bytes, what);
  b->zero(what);
  return b;
}

std::unique_ptr<PinnedAllocation> ContextMemory::pinned(size_t bytes, const std::string& what) {
  std::unique_ptr<PinnedAllocation> b;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    b = takeFitting(idlePinned_, bytes);
  }
  if (!b) return std::make_unique<PinnedAllocation>(bytes, what);
  std::memset(b->host(), 0, b->bytes());
  return b;
}

void ContextMemory::trim() {
  std::vector<Idle<DeviceAllocation>> device;
  std::vector<Idle<PinnedAllocation>> pinned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    device = takeStale(idleDevice_, quietPoints_ - 1);
    pinned = takeStale(idlePinned_, quietPoints_ - 1);
  }
  // Freed here, out of the lock: the releaser may be giving blocks back.
}

void ContextMemory::giveBack(std::unique_ptr<DeviceAllocation> block) {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mutex_);
  idleDevice_.push_back({std::move(block), quietPoints_});
}

void ContextMemory::giveBack(std::unique_ptr<PinnedAllocation> block) {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mutex_);
  idlePinned_.push_back({std::move(block), quietPoints_});
}

void ContextMemory::retire(std::shared_ptr<void> object) {
  if (!object) return;
  std::lock_guard<std::mutex> lock(mutex_);
  retired_.push_back(std::move(object));
}

}  // namespace mscclpp::exec
