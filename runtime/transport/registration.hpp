// The inside of a RegisteredMemory: the facts every
// transport shares, plus one export record per transport it
// was registered with. Communicator::registerMemory fills it
// on the owner; RegisteredMemory::serialize and deserialize
// carry it to importers (comm/registered_memory.cc). It
// lives in this layer because transports read registrations.
#ifndef MSCCLPP_TRANSPORT_REGISTRATION_HPP_
#define MSCCLPP_TRANSPORT_REGISTRATION_HPP_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/visibility.hpp"
#include "mscclpp/memory.hpp"
#include "transport/transport.hpp"

namespace mscclpp {

struct MSCCLPP_INTERNAL RegisteredMemory::Impl {
  void* data = nullptr;  // usable here; null when not mapped in this process
  uint64_t originalData = 0;
  uint64_t size = 0;
  TransportFlags transports;
  int32_t ownerRank = -1;
  int32_t ownerPid = 0;
  uint64_t ownerProcessToken = 0;
  uint64_t ownerHostHash = 0;
  bool local = false;         // registered by this process (not imported)
  bool deviceMemory = false;  // CUDA device memory

  // The record of each transport in `transports`; null elsewhere.
  std::array<std::shared_ptr<const transport::ExportRecord>, static_cast<size_t>(Transport::NumTransports)> records;

  // What must live as long as this registration: the TCP
  // key, IB memory regions, the imported shared-memory
  // or IPC mapping. Released in reverse order.
  std::vector<std::shared_ptr<void>> keepAlive;

  // The record of transport t as its own type R; null when not registered for t.
  template <class R>
  const R* record(Transport t) const {
    return static_cast<const R*>(records[static_cast<size_t>(t)].get());
  }
};

// The runtime's way into a RegisteredMemory, whose public header names no accessor.
class RegisteredMemoryAccess {
 public:
  using Impl = RegisteredMemory::Impl;
  static const std::shared_ptr<Impl>& impl(const RegisteredMemory& m) { return m.impl_; }
  static RegisteredMemory make(std::shared_ptr<Impl> impl) {
    RegisteredMemory m;
    m.impl_ = std::move(impl);
    return m;
  }
};

}  // namespace mscclpp

#endif  // MSCCLPP_TRANSPORT_REGISTRATION_HPP_
