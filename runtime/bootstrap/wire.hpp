// The bootstrap's byte layouts, all little-endian. The unique id
// travels out of band; every socket message starts with a magic,
// so a stray or garbage connection is recognised at once.
//   rank -> root:  RendezvousHello
//   root -> rank:  RendezvousReply, then the address table or an error text
//   rank -> rank:  PeerHello once per connection, then FrameHeader + payload
#ifndef MSCCLPP_BOOTSTRAP_WIRE_HPP_
#define MSCCLPP_BOOTSTRAP_WIRE_HPP_

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/net/hello.hpp"
#include "core/net/secret.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp::bootstrap {

// ---- The unique id: 128 bytes ---------------------------------------------------------------
//   [0, 8)    magic "MSCLPPID"
//   [8, 10)   version (1)
//   [10, 12)  flags: bit 0 = fixed address (MSCCLPP_COMM_ID; rank 0 runs the root)
//   [12, 36)  root address (SocketAddress wire form)
//   [36, 52)  secret: 128 random bits (derived from the address when fixed)
//   [52, 128) zero
constexpr uint16_t kUniqueIdVersion = 1;
constexpr uint16_t kFlagFixedAddress = 1;

struct UniqueIdFields {
  uint16_t flags = 0;
  net::SocketAddress root;
  net::Secret secret{};
};

UniqueId encodeUniqueId(const UniqueIdFields& fields);
// Throws InvalidArgument naming the wrong
// field: magic, version, address or padding.
UniqueIdFields decodeUniqueId(const UniqueId& id);

// The id for a fixed root address: MSCCLPP_COMM_ID,
// or TcpBootstrap::initialize("host:port").
UniqueIdFields fixedAddressId(const std::string& hostPort);

// ---- Socket messages --------------------------------------------------------------------------

struct RendezvousHello {
  net::HelloHeader header;  // magic "MSCLRDV1", the unique id's secret
  int32_t rank;
  int32_t nRanks;
  uint8_t listenAddress[net::SocketAddress::kEncodedBytes];
};
static_assert(sizeof(RendezvousHello) == 56 && std::is_trivially_copyable<RendezvousHello>::value, "wire layout");

struct RendezvousReply {
  char magic[8];    // "MSCLRDVR"
  int32_t status;   // 0: the address table follows; 1: an error message follows
  uint32_t length;  // bytes that follow
};
static_assert(sizeof(RendezvousReply) == 16, "wire layout");

struct PeerHello {
  net::HelloHeader header;  // magic "MSCLPEER", the unique id's secret
  int32_t fromRank;
  int32_t nRanks;
};
static_assert(sizeof(PeerHello) == 32, "wire layout");

constexpr uint32_t kFrameMagic = 0x4642534d;  // "MSBF"
struct FrameHeader {
  uint32_t magic;
  uint32_t kind;
  uint64_t ns;
  int32_t tag;
  uint32_t reserved;
  uint64_t size;
};
static_assert(sizeof(FrameHeader) == 32, "wire layout");

constexpr char kRendezvousHelloMagic[8] = {'M', 'S', 'C', 'L', 'R', 'D', 'V', '1'};
constexpr char kRendezvousReplyMagic[8] = {'M', 'S', 'C', 'L', 'R', 'D', 'V', 'R'};
constexpr char kPeerHelloMagic[8] = {'M', 'S', 'C', 'L', 'P', 'E', 'E', 'R'};
constexpr uint32_t kMaxRendezvousErrorBytes = 4096;

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_WIRE_HPP_
