#include "core/net/net_interface.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>

#include "core/enforce.hpp"
#include "core/params.hpp"

namespace mscclpp::net {

namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<NetInterface> listInterfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw SystemError("getifaddrs", errno);
  std::vector<NetInterface> v4, v6;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || !(a->ifa_flags & IFF_UP)) continue;
    int family = a->ifa_addr->sa_family;
    if (family == AF_INET) {
      v4.push_back({a->ifa_name, SocketAddress(a->ifa_addr, sizeof(sockaddr_in)), (a->ifa_flags & IFF_LOOPBACK) != 0});
    } else if (family == AF_INET6) {
      const auto* a6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
      v6.push_back({a->ifa_name, SocketAddress(a->ifa_addr, sizeof(sockaddr_in6)), (a->ifa_flags & IFF_LOOPBACK) != 0});
    }
  }
  ::freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

bool interfaceMatches(const std::string& spec, const std::string& name) {
  std::string text = spec;
  bool exclude = false, exact = false;
  if (!text.empty() && text[0] == '^') {
    exclude = true;
    text = text.substr(1);
  }
  if (!text.empty() && text[0] == '=') {
    exact = true;
    text = text.substr(1);
  }
  std::vector<std::string> items = splitList(text);
  if (items.empty()) return true;
  bool hit = false;
  for (const auto& item : items) {
    if (exact ? name == item : name.compare(0, item.size(), item) == 0) hit = true;
  }
  return exclude ? !hit : hit;
}

NetInterface chooseInterface(const std::string& spec, const std::vector<NetInterface>& candidates) {
  if (!spec.empty()) {
    for (const auto& c : candidates)
      if (interfaceMatches(spec, c.name)) return c;
  } else {
    for (const auto& c : candidates)
      if (!c.loopback) return c;
    for (const auto& c : candidates)
      if (c.loopback) return c;
  }
  std::string seen;
  for (const auto& c : candidates) seen += (seen.empty() ? "" : ", ") + c.name + "=" + c.address.toString();
  MSCCLPP_THROW(ErrorCode::InvalidArgument, "MSCCLPP_SOCKET_IFNAME='%s' selects no interface that is up (seen: %s)",
                spec.c_str(), seen.empty() ? "none" : seen.c_str());
}

NetInterface chooseDefaultInterface() { return chooseInterface(params::socketIfname(), listInterfaces()); }

}  // namespace mscclpp::net
