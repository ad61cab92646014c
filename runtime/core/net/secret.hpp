// The 128-bit secrets that guard our listening sockets: a peer proves it belongs to the job (or to
// the communicator) by presenting the listener's secret in its hello (net/hello.hpp), learned over
// an already authenticated channel (the unique id, the bootstrap).
#ifndef MSCCLPP_CORE_NET_SECRET_HPP_
#define MSCCLPP_CORE_NET_SECRET_HPP_

#include <array>
#include <cstdint>
#include <string>

namespace mscclpp::net {

using Secret = std::array<uint8_t, 16>;

// 128 bits from getrandom(2).
Secret randomSecret();
// A secret every process computes alike from the fixed rendezvous address text (MSCCLPP_COMM_ID):
// not secret against anyone who knows the address, only a guard against strays.
Secret derivedSecret(const std::string& text);
// Compares without an early exit.
bool secretEquals(const uint8_t* a, const Secret& b);

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_SECRET_HPP_
