// The 128-bit secrets that guard our listening sockets.
// A peer proves it belongs to the job by sending the listener's secret in its hello.
// It learned the secret over an authenticated channel: the unique id or the bootstrap.
#ifndef MSCCLPP_CORE_NET_SECRET_HPP_
#define MSCCLPP_CORE_NET_SECRET_HPP_

#include <array>
#include <cstdint>
#include <string>

namespace mscclpp::net {

using Secret = std::array<uint8_t, 16>;

// 128 bits from getrandom(2).
Secret randomSecret();
// A secret every process derives alike from
// the rendezvous address (MSCCLPP_COMM_ID).
// Anyone who knows the address knows it: it only guards against strays.
Secret derivedSecret(const std::string& text);
// Compares without an early exit.
bool secretEquals(const uint8_t* a, const Secret& b);

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_SECRET_HPP_
