// MSCCL++'s "interfaceIpPortTrio": where the bootstrap root of a job listens (rank 0 runs it), and
// optionally the network interface the ranks are meant to use.
#ifndef MSCCLPP_CAPI_ROOT_ADDRESS_HPP_
#define MSCCLPP_CAPI_ROOT_ADDRESS_HPP_

#include <string>

namespace mscclpp::capi {

struct RootAddress {
  std::string text;           // as given, for messages
  std::string interfaceName;  // "" when the text names no interface
  std::string hostPort;       // "ip:port" or "[v6]:port": what TcpBootstrap::initialize takes
};

// Splits "interface:ip:port", "interface:[v6]:port", "ip:port" or "[v6]:port". Throws
// Error(InvalidArgument) naming the text and the accepted forms; the host and port themselves are
// checked by the bootstrap when it parses hostPort.
RootAddress parseRootAddress(const std::string& text);

// The bootstrap chooses its listening interface itself (MSCCLPP_SOCKET_IFNAME, or loopback for a
// loopback root), so an interface named in the address can only be checked, not imposed: throws
// Error(InvalidArgument) when root.interfaceName is set and is not up, or when listenHostPort (the
// bootstrap's own "host:port") is not one of its addresses, naming both interfaces.
void checkListenInterface(const RootAddress& root, const std::string& listenHostPort, int rank, int nRanks);

}  // namespace mscclpp::capi

#endif  // MSCCLPP_CAPI_ROOT_ADDRESS_HPP_
