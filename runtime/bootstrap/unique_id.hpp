// The 128-byte unique id and the secret it carries. Layout (little-endian fields):
//   [0, 8)    magic "MSCLPPID"
//   [8, 10)   version (1)
//   [10, 12)  flags: bit 0 = fixed address (MSCCLPP_COMM_ID; rank 0 runs the root)
//   [12, 36)  root address (SocketAddress wire form)
//   [36, 52)  secret: 128 random bits from getrandom (derived from the address when fixed)
//   [52, 128) zero
#ifndef MSCCLPP_BOOTSTRAP_UNIQUE_ID_HPP_
#define MSCCLPP_BOOTSTRAP_UNIQUE_ID_HPP_

#include <cstdint>
#include <string>

#include "core/net/secret.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp::bootstrap {

constexpr uint16_t kUniqueIdVersion = 1;
constexpr uint16_t kFlagFixedAddress = 1;

struct UniqueIdFields {
  uint16_t flags = 0;
  net::SocketAddress root;
  net::Secret secret{};
};

UniqueId encodeUniqueId(const UniqueIdFields& fields);
// Throws Error(InvalidArgument) naming the field that is wrong (magic, version, address, padding).
UniqueIdFields decodeUniqueId(const UniqueId& id);

// The id for a fixed root address (MSCCLPP_COMM_ID or TcpBootstrap::initialize("host:port")).
UniqueIdFields fixedAddressId(const std::string& hostPort);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_UNIQUE_ID_HPP_
