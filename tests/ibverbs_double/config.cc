// The double's configuration and addresses: the HCAs of this host from
// IBV_DOUBLE_DEVICES, this host's address on the fabric, and what a LID or GID
// of a port is and which host it leads to (docs/ibverbs-double.md, "Addresses").
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>

#include "ibverbs_double.hpp"

namespace ibvdouble {
namespace {

bool parseInt(const std::string& v, long lo, long hi, long* out) {
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo || x > hi) return false;
  *out = x;
  return true;
}

// One entry: name[:key=value]... (docs/ibverbs-double.md lists the keys).
bool parseDevice(const std::string& text, DeviceSpec* d, std::string* error) {
  size_t colon = text.find(':');
  d->name = text.substr(0, colon);
  if (d->name.empty() || d->name.size() >= IBV_SYSFS_NAME_MAX) {
    *error = "device name '" + d->name + "' is empty or too long";
    return false;
  }
  while (colon != std::string::npos) {
    size_t next = text.find(':', colon + 1);
    std::string kv = text.substr(colon + 1, next == std::string::npos ? std::string::npos : next - colon - 1);
    colon = next;
    size_t eq = kv.find('=');
    std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    long x = 0;
    if (key == "link" && (value == "ib" || value == "roce")) {
      d->linkLayer = value == "ib" ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
      if (value == "roce") d->mtu = IBV_MTU_1024;  // an Ethernet MTU of 1500 leaves 1024 for RoCE
    } else if (key == "ports" && parseInt(value, 1, 2, &x)) {
      d->ports = static_cast<int>(x);
    } else if (key == "mtu" && parseInt(value, 256, 4096, &x) && (x & (x - 1)) == 0) {
      d->mtu = static_cast<ibv_mtu>(__builtin_ctzl(x) - 7);  // 256 -> IBV_MTU_256 (1)
    } else if (key == "inline" && parseInt(value, 0, 1024, &x)) {
      d->maxInline = static_cast<int>(x);
    } else if (key == "atomics" && parseInt(value, 0, 1, &x)) {
      d->atomics = x == 1;
    } else if (key == "max_qp_wr" && parseInt(value, 1, 1 << 20, &x)) {
      d->maxQpWr = static_cast<int>(x);
    } else if (key == "max_cqe" && parseInt(value, 1, 1 << 22, &x)) {
      d->maxCqe = static_cast<int>(x);
    } else if (key == "max_msg" && parseInt(value, 1, 1l << 31, &x)) {
      d->maxMsg = static_cast<uint32_t>(x);
    } else if (key == "state" && (value == "active" || value == "down")) {
      d->portActive = value == "active";
    } else if (key == "sysfs" && !value.empty() && value.size() < IBV_SYSFS_PATH_MAX) {
      d->sysfsPath = value;
    } else {
      *error = "device " + d->name + ": bad setting '" + kv + "'";
      return false;
    }
  }
  if (d->sysfsPath.empty()) d->sysfsPath = "/sys/class/infiniband/" + d->name;
  return true;
}

uint32_t defaultHostAddr() {
  ifaddrs* list = nullptr;
  uint32_t found = INADDR_LOOPBACK;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    found = ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    break;
  }
  freeifaddrs(list);
  return found;
}

Config load() {
  Config c;
  const char* devices = std::getenv("IBV_DOUBLE_DEVICES");
  std::string text = devices ? devices : "";
  size_t pos = 0;
  while (!text.empty() && pos <= text.size() && c.error.empty()) {
    size_t comma = text.find(',', pos);
    DeviceSpec d;
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (parseDevice(item, &d, &c.error)) c.devices.push_back(d);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (c.devices.size() > 16) c.error = "at most 16 devices";
  const char* addr = std::getenv("IBV_DOUBLE_ADDR");
  in_addr a{};
  if (addr != nullptr && *addr != '\0') {
    if (inet_pton(AF_INET, addr, &a) == 1)
      c.hostAddr = ntohl(a.s_addr);
    else
      c.error = std::string("IBV_DOUBLE_ADDR '") + addr + "' is not an IPv4 address";
  } else {
    c.hostAddr = defaultHostAddr();
  }
  if (const char* g = std::getenv("IBV_DOUBLE_GPUDIRECT")) {
    if (std::strcmp(g, "0") == 0 || std::strcmp(g, "1") == 0)
      c.gpuDirect = *g == '1';
    else
      c.error = std::string("IBV_DOUBLE_GPUDIRECT '") + g + "' is not 0 or 1";
  }
  if (const char* t = std::getenv("IBV_DOUBLE_MIN_ACK_TIMEOUT_MS")) {
    long x = 0;
    if (parseInt(t, 0, 600000, &x))
      c.minAckTimeoutMs = static_cast<int>(x);
    else
      c.error = std::string("IBV_DOUBLE_MIN_ACK_TIMEOUT_MS '") + t + "' is not a count of milliseconds";
  }
  return c;
}

void putAddr(uint8_t* p, uint32_t addr) {
  p[0] = addr >> 24;
  p[1] = addr >> 16;
  p[2] = addr >> 8;
  p[3] = addr;
}
uint32_t getAddr(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// The double's port GUID: 02:c9, device, port, then the host's IPv4 address.
void putGuid(uint8_t* p, int device, int port, uint32_t host) {
  p[0] = 0x02;
  p[1] = 0xc9;
  p[2] = static_cast<uint8_t>(device);
  p[3] = static_cast<uint8_t>(port);
  putAddr(p + 4, host);
}

bool isLinkLocal(const ibv_gid& g) { return g.raw[0] == 0xfe && g.raw[1] == 0x80; }
bool isV4Mapped(const ibv_gid& g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, prefix, 12) == 0;
}

}  // namespace

const Config& config() {
  static const Config c = load();
  return c;
}

// InfiniBand ports: one GID, the subnet prefix fe80::/64 and the port GUID.
// RoCE ports, as the kernel fills them for a net device with one IPv4
// address: 0 and 1 the link-local address from the MAC (RoCE v1, v2), 2 and 3
// the IPv4-mapped address (v1, v2). The MAC is 02:<device><port>:<IPv4>.
GidEntry gidEntry(int device, int port, int index) {
  GidEntry e;
  const DeviceSpec& d = config().devices.at(static_cast<size_t>(device));
  const uint32_t host = config().hostAddr;
  if (d.linkLayer == IBV_LINK_LAYER_INFINIBAND) {
    if (index != 0) return e;
    e.gid.raw[0] = 0xfe;
    e.gid.raw[1] = 0x80;
    putGuid(e.gid.raw + 8, device, port, host);
    e.type = IBV_GID_TYPE_IB;
    e.valid = true;
    return e;
  }
  if (index < 0 || index > 3) return e;
  if (index < 2) {
    e.gid.raw[0] = 0xfe;
    e.gid.raw[1] = 0x80;
    uint8_t* eui = e.gid.raw + 8;  // EUI-64 of the MAC: U/L bit flipped, ff:fe in the middle
    eui[0] = 0x02 ^ 0x02;
    eui[1] = static_cast<uint8_t>(device << 4 | port);
    eui[2] = static_cast<uint8_t>(host >> 24);
    eui[3] = 0xff;
    eui[4] = 0xfe;
    eui[5] = static_cast<uint8_t>(host >> 16);
    eui[6] = static_cast<uint8_t>(host >> 8);
    eui[7] = static_cast<uint8_t>(host);
  } else {
    e.gid.raw[10] = 0xff;
    e.gid.raw[11] = 0xff;
    putAddr(e.gid.raw + 12, host);
  }
  e.type = index % 2 == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
  e.valid = true;
  return e;
}

// The subnet manager's LID: the host's last address byte, device and port.
uint16_t portLid(int device, int port) {
  const DeviceSpec& d = config().devices.at(static_cast<size_t>(device));
  if (d.linkLayer != IBV_LINK_LAYER_INFINIBAND) return 0;
  return static_cast<uint16_t>((config().hostAddr & 0xff) << 5 | device << 1 | (port - 1));
}

// A LID leads to a host of this host's /24; a GUID or an IPv4-mapped GID names
// the host's address. RoCE across hosts is a routed RoCE v2 network: RoCE v1
// frames and link-local destinations stay on their host.
Route routeOf(int device, int port, const ibv_ah_attr& ah, std::string* why) {
  Route r;
  const DeviceSpec& d = config().devices.at(static_cast<size_t>(device));
  const uint32_t self = config().hostAddr;
  if (!ah.is_global) {
    if (d.linkLayer != IBV_LINK_LAYER_INFINIBAND || ah.dlid == 0) {
      *why = "no GRH and no LID";
      return r;
    }
    r.hostAddr = (self & 0xffffff00u) | (ah.dlid >> 5);
    r.device = (ah.dlid >> 1) & 0xf;
    r.port = (ah.dlid & 1) + 1;
    return r;
  }
  const ibv_gid& g = ah.grh.dgid;
  if (d.linkLayer == IBV_LINK_LAYER_INFINIBAND) {
    if (!isLinkLocal(g) || g.raw[8] != 0x02 || g.raw[9] != 0xc9) {
      *why = "the destination GID is not a port GID of this subnet";
      return r;
    }
    r.hostAddr = getAddr(g.raw + 12);
    r.device = g.raw[10];
    r.port = g.raw[11];
    return r;
  }
  GidEntry src = gidEntry(device, port, ah.grh.sgid_index);
  uint32_t host = 0;
  if (isV4Mapped(g)) {
    host = getAddr(g.raw + 12);
  } else if (isLinkLocal(g) && g.raw[11] == 0xff && g.raw[12] == 0xfe) {
    host = uint32_t(g.raw[10]) << 24 | uint32_t(g.raw[13]) << 16 | uint32_t(g.raw[14]) << 8 | g.raw[15];
    if (host != self) {
      *why = "a link-local destination GID does not leave its host";
      return r;
    }
  } else {
    *why = "the destination GID is neither IPv4-mapped nor a link-local GID of this fabric";
    return r;
  }
  if (host != self && src.type == IBV_GID_TYPE_ROCE_V1) {
    *why = "RoCE v1 frames (source GID index " + std::to_string(ah.grh.sgid_index) + ") are not routed between hosts";
    return r;
  }
  r.hostAddr = host;
  return r;
}

}  // namespace ibvdouble
