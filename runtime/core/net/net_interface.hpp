// Choosing the network interface the bootstrap (and the TCP transport) listens on, with
// MSCCLPP_SOCKET_IFNAME semantics borrowed from NCCL_SOCKET_IFNAME:
//   "eth0,ib"   names starting with one of the prefixes
//   "=eth0"     exactly these names
//   "^docker"   every name except those starting with a prefix ("^=" for exact exclusion)
// Default (empty): the first non-loopback interface that is up, or loopback when it is the only
// one up. IPv4 addresses are preferred over IPv6 within that order; IPv6 link-local addresses are
// skipped (they need a scope the peers cannot know).
#ifndef MSCCLPP_CORE_NET_NET_INTERFACE_HPP_
#define MSCCLPP_CORE_NET_NET_INTERFACE_HPP_

#include <string>
#include <vector>

#include "core/net/socket.hpp"

namespace mscclpp::net {

struct NetInterface {
  std::string name;
  SocketAddress address;  // port 0
  bool loopback;
};

// Interfaces that are up with a usable address, in the kernel's order, IPv4 entries first.
std::vector<NetInterface> listInterfaces();

// True when `name` is selected by the MSCCLPP_SOCKET_IFNAME-style `spec` (empty spec selects all).
bool interfaceMatches(const std::string& spec, const std::string& name);

// The interface to use for `spec` among `candidates` (see the header comment). Throws
// Error(InvalidArgument) naming the spec and the interfaces seen when none matches.
NetInterface chooseInterface(const std::string& spec, const std::vector<NetInterface>& candidates);

// chooseInterface(MSCCLPP_SOCKET_IFNAME, listInterfaces()).
NetInterface chooseDefaultInterface();

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_NET_INTERFACE_HPP_
