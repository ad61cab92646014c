// Port-channel peers on other hosts, for the CPU backend. Their memory is not
// mapped here, so the proxy performs each request on an IB or TCP Connection:
//   put    -> Connection::write into the peer's registered region
//   signal -> Connection::updateAndSync of the paired counter
//   flush  -> Connection::flush, bounded by the launch's timeout
// Ownership: the context's RankResources; it keeps connections and
// registrations alive. Used only by the context's proxy thread.
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
  // One per port channel, by id. A null connection: the peer is on this
  // host and the channel keeps the zero-copy path.
  struct Channel {
    int peer = -1;
    std::string peerHost;  // its host id, for messages
    std::shared_ptr<Connection> connection;
    RegisteredMemory peerRegion;     // the peer's whole region (input, output, scratch, counters)
    uint64_t peerCounterOffset = 0;  // the counter of the paired channel inside peerRegion
    uint64_t outbound = 0;           // signals sent so far (counters only grow; updateAndSync's source)
  };
  // One per proxy memory id: where the buffer starts in its owner's region.
  // An invalid region: not reachable over a connection.
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
