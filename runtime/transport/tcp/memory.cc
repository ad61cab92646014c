#include "transport/tcp/memory.hpp"

namespace mscclpp::transport::tcp {

std::shared_ptr<void> KeyRegistry::add(void* base, uint64_t size, bool device, uint64_t* key) {
  uint64_t k;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    k = nextKey_++;
    regions_[k] = Region{static_cast<char*>(base), size, device};
  }
  *key = k;
  std::weak_ptr<KeyRegistry> weak = weak_from_this();
  return std::shared_ptr<void>(reinterpret_cast<void*>(k), [weak](void* p) {
    if (auto self = weak.lock()) {
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->regions_.erase(reinterpret_cast<uint64_t>(p));
    }
  });
}

bool KeyRegistry::find(uint64_t key, Region* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = regions_.find(key);
  if (it == regions_.end()) return false;
  *out = it->second;
  return true;
}

size_t KeyRegistry::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regions_.size();
}

}  // namespace mscclpp::transport::tcp
