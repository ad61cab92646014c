// Transports, registered memory and shared host memory. A RegisteredMemory describes a buffer and,
// per transport, what a peer needs to reach it: a shared-memory name, a CUDA IPC handle, an
// InfiniBand rkey, a TCP key. Communicator::registerMemory makes it on the owner; it is serialised,
// sent, and deserialised by the peer, which maps it where it can on the same host.
// Ownership: a RegisteredMemory never owns its buffer, which must outlive every copy, local or
// imported. Copies share one registration. Imported mappings are cached per process and per peer
// allocation, so importing one allocation twice maps it once. Thread-safety: immutable.
#ifndef MSCCLPP_MEMORY_HPP_
#define MSCCLPP_MEMORY_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mscclpp/export.h"

namespace mscclpp {

// MSCCL++'s transport names, plus HostShm: same-host shared memory for the CPU backend.
// Ethernet is the TCP transport, also spelled Transport::Tcp.
enum class Transport : uint8_t {
  Unknown = 0,
  CudaIpc,
  Nvls,
  IB0,
  IB1,
  IB2,
  IB3,
  IB4,
  IB5,
  IB6,
  IB7,
  Ethernet,
  HostShm,
  NumTransports,
  Tcp = Ethernet,
};

// "IPC", "NVLS", "IB0".."IB7", "TCP", "SHM", "UNK".
MSCCLPP_API const char* transportName(Transport t);
MSCCLPP_API bool isIbTransport(Transport t);
// The IB device index of IB0..IB7: 0..7.
MSCCLPP_API int ibDeviceIndex(Transport t);

class MSCCLPP_API TransportFlags {
 public:
  constexpr TransportFlags() : bits_(0) {}
  constexpr TransportFlags(Transport t) : bits_(1u << static_cast<unsigned>(t)) {}
  static constexpr TransportFlags fromBits(uint32_t bits) { return TransportFlags(bits, 0); }

  constexpr bool has(Transport t) const { return (bits_ >> static_cast<unsigned>(t)) & 1u; }
  constexpr bool none() const { return bits_ == 0; }
  constexpr bool any() const { return bits_ != 0; }
  int count() const { return __builtin_popcount(bits_); }
  constexpr uint32_t bits() const { return bits_; }
  // "SHM|TCP".
  std::string toString() const;

  constexpr TransportFlags operator|(TransportFlags o) const { return TransportFlags(bits_ | o.bits_, 0); }
  constexpr TransportFlags operator&(TransportFlags o) const { return TransportFlags(bits_ & o.bits_, 0); }
  constexpr TransportFlags operator^(TransportFlags o) const { return TransportFlags(bits_ ^ o.bits_, 0); }
  TransportFlags& operator|=(TransportFlags o) {
    bits_ |= o.bits_;
    return *this;
  }
  constexpr bool operator==(TransportFlags o) const { return bits_ == o.bits_; }
  constexpr bool operator!=(TransportFlags o) const { return bits_ != o.bits_; }

 private:
  constexpr TransportFlags(uint32_t bits, int) : bits_(bits) {}
  uint32_t bits_;
};

constexpr TransportFlags operator|(Transport a, Transport b) { return TransportFlags(a) | TransportFlags(b); }

constexpr TransportFlags AllIBTransports = Transport::IB0 | Transport::IB1 | Transport::IB2 | Transport::IB3 |
                                           Transport::IB4 | Transport::IB5 | Transport::IB6 | Transport::IB7;

class MSCCLPP_API RegisteredMemory {
 public:
  RegisteredMemory() = default;

  bool valid() const { return impl_ != nullptr; }
  // The buffer's address in this process: the original pointer on the owner, the mapping on a
  // same-host importer, nullptr where it is not mapped: reach it through a connection.
  void* data() const;
  // The owner's address, for diagnostics: meaningless in another process.
  void* originalDataPtr() const;
  size_t size() const;
  TransportFlags transports() const;
  // The rank that registered it, in its communicator.
  int rank() const;
  // True on the process and communicator that registered it.
  bool isLocal() const;
  // True when the buffer is CUDA device memory.
  bool isDeviceMemory() const;

  // A self-describing, versioned byte string, checked when read back.
  std::vector<char> serialize() const;
  // Imports a serialised registration, mapped when it lives on this host with HostShm or CudaIpc
  // among its transports. Throws Error(InvalidArgument) naming the field for malformed bytes, and
  // a precise error when a mapping fails.
  static RegisteredMemory deserialize(const std::vector<char>& data);

 private:
  friend class RegisteredMemoryAccess;  // the runtime's own layers (runtime/transport/registration.hpp)
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// Shared host memory: zeroed, page-aligned memory that same-host processes map after
// registerMemory(ptr, bytes, Transport::HostShm), a send and deserialize. Backed by memfd, which
// peers open through /proc/<pid>/fd, so nothing is left behind even after a crash; or, with
// MSCCLPP_HOST_SHM=posix, by a POSIX shm name that goes when the memory is freed, when its maker
// exits, when the last process that maps it unmaps it, or, after a kill, at the next sweep
// (docs/runtime.md). It is unmapped when the last shared_ptr goes; peers' mappings keep the pages
// until they unmap. Any thread.
MSCCLPP_API std::shared_ptr<void> allocSharedHostBytes(size_t bytes);
template <class T = char>
std::shared_ptr<T> allocSharedHost(size_t count) {
  return std::static_pointer_cast<T>(allocSharedHostBytes(count * sizeof(T)));
}
// True when [ptr, ptr+bytes) lies in one live shared host allocation.
MSCCLPP_API bool isSharedHost(const void* ptr, size_t bytes = 1);
// POSIX mode: removes the allocation's name now, once every peer imported it; later imports fail.
// No effect on memfd memory. Returns whether a name was removed.
MSCCLPP_API bool unlinkSharedHostName(const void* ptr);
// Whether the allocation holding ptr still has a POSIX name for unlinkSharedHostName to remove.
MSCCLPP_API bool sharedHostHasName(const void* ptr);

}  // namespace mscclpp

#endif  // MSCCLPP_MEMORY_HPP_
