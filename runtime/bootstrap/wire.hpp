// Byte layouts on bootstrap sockets. All fields are little-endian (the hosts we run on); every
// message starts with a magic so that a stray or garbage connection is recognised at once.
//
//   rank -> root:  RendezvousHello
//   root -> rank:  RendezvousReply, then nRanks encoded addresses (status 0) or a message (status 1)
//   rank -> rank:  PeerHello once per connection, then frames: FrameHeader + `size` payload bytes
#ifndef MSCCLPP_BOOTSTRAP_WIRE_HPP_
#define MSCCLPP_BOOTSTRAP_WIRE_HPP_

#include <cstdint>
#include <type_traits>

#include "core/net/hello.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::bootstrap {

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
