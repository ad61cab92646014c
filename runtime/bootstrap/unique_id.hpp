// The 128-byte unique id and the secret it carries. Layout (little-endian fields):
//   [0, 8)    magic "MSCLPPID"
//   [8, 10)   version (1)
//   [10, 12)  flags: bit 0 = fixed address (MSCCLPP_COMM_ID; rank 0 runs the root)
//   [12, 36)  root address (SocketAddress wire form)
//   [36, 52)  secret: 128 random bits from getrandom (derived from the address when fixed)
//   [52, 128) zero
#ifndef MSCCLPP_BOOTSTRAP_UNIQUE_ID_HPP_
#define MSCCLPP_BOOTSTRAP_UNIQUE_ID_HPP_

#include <array>
#include <cstdint>
#include <string>

#include "bootstrap/socket.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp::bootstrap {

using Secret = std::array<uint8_t, 16>;

constexpr uint16_t kUniqueIdVersion = 1;
constexpr uint16_t kFlagFixedAddress = 1;

struct UniqueIdFields {
  uint16_t flags = 0;
  net::SocketAddress root;
  Secret secret{};
};

UniqueId encodeUniqueId(const UniqueIdFields& fields);
// Throws Error(InvalidArgument) naming the field that is wrong (magic, version, address, padding).
UniqueIdFields decodeUniqueId(const UniqueId& id);

// 128 bits from getrandom(2).
Secret randomSecret();
// A secret every process computes alike from the fixed rendezvous address text (MSCCLPP_COMM_ID):
// not secret against anyone who knows the address, only a guard against strays.
Secret derivedSecret(const std::string& text);
// Compares without an early exit.
bool secretEquals(const uint8_t* a, const Secret& b);

// The id for a fixed root address (MSCCLPP_COMM_ID or TcpBootstrap::initialize("host:port")).
UniqueIdFields fixedAddressId(const std::string& hostPort);

// Mixes two 64-bit values (splitmix64 finaliser): namespaces of splits and views.
uint64_t mix64(uint64_t a, uint64_t b);
uint64_t hashString(const std::string& text);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_UNIQUE_ID_HPP_
