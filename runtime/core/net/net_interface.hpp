// The network interface the bootstrap and the TCP transport listen on.
// MSCCLPP_SOCKET_IFNAME reads as NCCL_SOCKET_IFNAME does:
//   "eth0,ib"   names starting with one of the prefixes
//   "=eth0"     exactly these names
//   "^docker"   every name but those starting with a prefix; "^=" excludes exact names
// Empty picks the first non-loopback interface that is up, else loopback.
// IPv4 comes before IPv6; IPv6 link-local addresses are skipped,
// as peers cannot know their scope.
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

// Interfaces that are up with a usable
// address, in the kernel's order, IPv4 first.
std::vector<NetInterface> listInterfaces();

// True when spec, written as MSCCLPP_SOCKET_IFNAME, selects name;
// empty selects all.
bool interfaceMatches(const std::string& spec, const std::string& name);

// The interface spec picks among candidates, by the rules above.
// When none matches,
// throws InvalidArgument naming the spec and the interfaces seen.
NetInterface chooseInterface(const std::string& spec, const std::vector<NetInterface>& candidates);

// chooseInterface(MSCCLPP_SOCKET_IFNAME, listInterfaces()).
NetInterface chooseDefaultInterface();

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_NET_INTERFACE_HPP_
