// Port channels of a GPU context to ranks on other hosts. Their memory is
// not mapped here, so the context's proxy performs each request on the
// communicator's TCP or IB connection to the peer (docs/cuda-backend.md,
// "Port channels across hosts"):
//   put    -> Connection::write from our registered device memory
//   signal -> Connection::updateAndSync of the peer's paired counter
//   flush  -> Connection::flush of every connection written since the last
// Ownership: the context's; it keeps connections and registrations alive.
// Thread-safety: built before the proxy starts, then used by its thread only.
#ifndef MSCCLPP_EXECUTOR_CUDA_FAR_PORTS_HPP_
#define MSCCLPP_EXECUTOR_CUDA_FAR_PORTS_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/context_image.hpp"
#include "mscclpp/connection.hpp"
#include "mscclpp/fifo_device.hpp"
#include "mscclpp/memory.hpp"

namespace mscclpp::exec {

class FarPorts {
 public:
  // One per port channel, by id. No connection: the peer is on this host.
  struct Channel {
    int peer = -1;
    std::string peerHost;            // its host id, for messages
    int connection = -1;             // index into connections()
    RegisteredMemory peerRegion;     // the peer's context region, which holds its counters
    uint64_t peerCounterOffset = 0;  // the paired channel's counter inside peerRegion
    uint64_t outbound = 0;           // signals sent so far (updateAndSync's source)
  };
  // One per proxy memory id: the registration holding the buffer and where it starts.
  struct Memory {
    int owner = -1;
    RegisteredMemory region;
    uint64_t offset = 0;
  };

  FarPorts(std::string name, size_t nChannels);

  // Adds a connection (once per peer); returns its index.
  int addConnection(std::shared_ptr<Connection> connection);
  Channel& channel(uint32_t id) { return channels_.at(id); }
  std::vector<Memory>& memories() { return memories_; }
  bool crosses(uint32_t channelId) const {
    return channelId < channels_.size() && channels_[channelId].connection >= 0;
  }
  // The signal's local word for a channel across hosts.
  uint64_t* outboundOf(uint32_t channelId) { return &channels_.at(channelId).outbound; }

  // Performs the put and signal parts of a request on a channel across
  // hosts; table: the image's memory table (sizes). Returns the error, or "".
  std::string perform(const TriggerFields& f, const std::vector<ContextImage::MemoryEntry>& table);
  // Waits until every write and signal issued so far completed at its peer,
  // within timeoutSeconds (<= 0: none). Returns the error, or "".
  std::string flush(double timeoutSeconds);

 private:
  std::string name_;
  std::vector<Channel> channels_;
  std::vector<Memory> memories_;
  std::vector<std::shared_ptr<Connection>> connections_;
  std::vector<bool> written_;  // per connection: operations since its last flush
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_FAR_PORTS_HPP_
