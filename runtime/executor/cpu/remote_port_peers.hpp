// Port-channel peers on other hosts, for the CPU backend. A wiring that spans hosts
// (CommunicatorWiring) reaches a rank on another host only through port channels: its memory is
// not mapped here, so the context's proxy handler performs each request of such a channel on a
// Connection (TCP) instead of the same-host memmove:
//   put    -> Connection::write(peer's region, its offset + dstOffset, our region, offset + srcOffset)
//   signal -> Connection::updateAndSync(peer's region, the paired counter's offset, ++outbound)
//   flush  -> Connection::flush (bounded by MSCCLPP_TIMEOUT_S)
//
// Ownership: built by the wiring, owned by the context's RankResources (shared_ptr); it keeps the
// connections and registrations alive while the context exists. Thread-safety: used only by the
// context's proxy thread after construction (a Connection allows one thread at a time).
#ifndef MSCCLPP_EXECUTOR_CPU_REMOTE_PORT_PEERS_HPP_
#define MSCCLPP_EXECUTOR_CPU_REMOTE_PORT_PEERS_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mscclpp/connection.hpp"
#include "mscclpp/memory.hpp"

namespace mscclpp::exec {

struct RemotePortPeers {
  // One per rank-level port channel (indexed by channel id). connection == nullptr: the peer is on
  // this host and the channel keeps the zero-copy path.
  struct Channel {
    int peer = -1;
    std::shared_ptr<Connection> connection;
    RegisteredMemory peerRegion;     // the peer's whole region (input, output, scratch, counters)
    uint64_t peerCounterOffset = 0;  // the counter of the paired channel inside peerRegion
    uint64_t outbound = 0;           // signals sent so far (counters only grow; updateAndSync's source)
  };
  // One per proxy memory id (0 input, 1 output, 2 scratch, 3 + k remote buffer k): where the buffer
  // starts inside its owner's registered region. region invalid: not reachable over a connection.
  struct Memory {
    int owner = -1;
    RegisteredMemory region;
    uint64_t offset = 0;
  };
  std::string planName;
  int rank = -1;
  std::vector<Channel> channels;
  std::vector<Memory> memories;

  bool crossesHost(uint32_t channelId) const {
    return channelId < channels.size() && channels[channelId].connection != nullptr;
  }
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_REMOTE_PORT_PEERS_HPP_
