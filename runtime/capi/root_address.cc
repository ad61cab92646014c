#include "capi/root_address.hpp"

#include "core/enforce.hpp"
#include "core/net/net_interface.hpp"
#include "core/net/socket.hpp"
#include "core/params.hpp"

namespace mscclpp::capi {

namespace {

constexpr const char* kForms = "interface:ip:port, interface:[ipv6]:port, ip:port or [ipv6]:port";

// "eth0 10.0.0.1, lo 127.0.0.1": what a message lists as the interfaces that are up.
std::string describeInterfaces(const std::vector<net::NetInterface>& list) {
  std::string out;
  for (const auto& i : list) {
    net::SocketAddress a = i.address;
    a.setPort(0);
    std::string host = a.toString();
    host = host.substr(0, host.rfind(':'));  // drop the ":0"
    out += (out.empty() ? "" : ", ") + i.name + " " + host;
  }
  return out.empty() ? "none" : out;
}

}  // namespace

RootAddress parseRootAddress(const std::string& text) {
  RootAddress r;
  r.text = text;
  MSCCLPP_ENFORCE(!text.empty(), ErrorCode::InvalidArgument, "bootstrap address is empty: expected %s", kForms);
  const size_t bracket = text.find('[');
  if (bracket != std::string::npos) {
    // IPv6: everything from '[' on is the host:port; before it, nothing or "interface:".
    if (bracket > 0) {
      MSCCLPP_ENFORCE(bracket >= 2 && text[bracket - 1] == ':' && text.find(':') == bracket - 1,
                      ErrorCode::InvalidArgument, "bootstrap address '%s': expected %s", text.c_str(), kForms);
      r.interfaceName = text.substr(0, bracket - 1);
    }
    r.hostPort = text.substr(bracket);
  } else {
    size_t colons = 0;
    for (char c : text) colons += c == ':';
    MSCCLPP_ENFORCE(colons == 1 || colons == 2, ErrorCode::InvalidArgument,
                    "bootstrap address '%s' has %zu ':'; expected %s (write IPv6 addresses in brackets)", text.c_str(),
                    colons, kForms);
    if (colons == 2) {
      const size_t first = text.find(':');
      MSCCLPP_ENFORCE(first > 0, ErrorCode::InvalidArgument, "bootstrap address '%s': the interface name is empty",
                      text.c_str());
      r.interfaceName = text.substr(0, first);
      r.hostPort = text.substr(first + 1);
    } else {
      r.hostPort = text;
    }
  }
  return r;
}

void checkListenInterface(const RootAddress& root, const std::string& listenHostPort, int rank, int nRanks) {
  if (root.interfaceName.empty()) return;
  const std::vector<net::NetInterface> up = net::listInterfaces();
  bool named = false;
  for (const auto& i : up) named = named || i.name == root.interfaceName;
  MSCCLPP_ENFORCE(named, ErrorCode::InvalidArgument,
                  "rank %d/%d: bootstrap address '%s' names interface %s, which is not up or has no usable address "
                  "(up: %s)",
                  rank, nRanks, root.text.c_str(), root.interfaceName.c_str(), describeInterfaces(up).c_str());
  net::SocketAddress listening = net::SocketAddress::parse(listenHostPort);
  listening.setPort(0);
  std::string usedName = "an unknown interface";
  for (const auto& i : up) {
    net::SocketAddress a = i.address;
    a.setPort(0);
    if (a == listening) {
      if (i.name == root.interfaceName) return;
      usedName = "interface " + i.name;
    }
  }
  const std::string spec = params::socketIfname();
  MSCCLPP_THROW(ErrorCode::InvalidArgument,
                "rank %d/%d: bootstrap address '%s' names interface %s, but this rank's bootstrap listens on %s (%s, "
                "chosen by %s); set MSCCLPP_SOCKET_IFNAME==%s for the job, or leave the interface out of the address",
                rank, nRanks, root.text.c_str(), root.interfaceName.c_str(), listenHostPort.c_str(), usedName.c_str(),
                spec.empty() ? "the default rule: a loopback root keeps the job on loopback, else the first "
                               "non-loopback interface"
                             : ("MSCCLPP_SOCKET_IFNAME=" + spec).c_str(),
                root.interfaceName.c_str());
}

}  // namespace mscclpp::capi
