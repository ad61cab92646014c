// RegisteredMemory's accessors: transports read registrations too, so they live with
// RegisteredMemory::Impl in this layer.
#include "transport/registration.hpp"

namespace mscclpp {

void* RegisteredMemory::data() const { return impl_ ? impl_->data : nullptr; }
void* RegisteredMemory::originalDataPtr() const {
  return impl_ ? reinterpret_cast<void*>(static_cast<uintptr_t>(impl_->originalData)) : nullptr;
}
size_t RegisteredMemory::size() const { return impl_ ? static_cast<size_t>(impl_->size) : 0; }
TransportFlags RegisteredMemory::transports() const { return impl_ ? impl_->transports : TransportFlags(); }
int RegisteredMemory::rank() const { return impl_ ? impl_->ownerRank : -1; }
bool RegisteredMemory::isLocal() const { return impl_ && impl_->local; }
bool RegisteredMemory::isDeviceMemory() const { return impl_ && impl_->deviceMemory; }

}  // namespace mscclpp
