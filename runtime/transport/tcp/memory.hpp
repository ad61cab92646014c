// TCP memory keys: a registered buffer gets a 64-bit key in
// its communicator's TCP engine. A peer names (key, offset)
// in its write frames, and the engine's receiver thread
// resolves them here, checking bounds. Keys are never
// reused within an engine, so a stale key fails cleanly.
// Thread-safety: any thread.
#ifndef MSCCLPP_TRANSPORT_TCP_MEMORY_HPP_
#define MSCCLPP_TRANSPORT_TCP_MEMORY_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "transport/transport.hpp"

namespace mscclpp::transport::tcp {

// A TCP memory key resolved by the owner's receiver
// thread: the TCP record of a registration.
struct TcpRecord : ExportRecord {
  uint64_t engineId = 0;  // which communicator's TCP engine resolves the key
  uint64_t key = 0;

  void serialize(ByteWriter& w) const override;
  static std::shared_ptr<const TcpRecord> read(ByteReader& r);
};

struct Region {
  char* base = nullptr;
  uint64_t size = 0;
  bool device = false;  // CUDA device memory: writes go through a staging copy
};

class KeyRegistry : public std::enable_shared_from_this<KeyRegistry> {
 public:
  // The returned handle unregisters the key when the last copy goes.
  std::shared_ptr<void> add(void* base, uint64_t size, bool device, uint64_t* key);
  bool find(uint64_t key, Region* out) const;
  size_t count() const;

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, Region> regions_;
  uint64_t nextKey_ = 1;
};

}  // namespace mscclpp::transport::tcp

#endif  // MSCCLPP_TRANSPORT_TCP_MEMORY_HPP_
