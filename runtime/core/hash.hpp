// Non-cryptographic hashes for derived identifiers: bootstrap namespaces, host identities.
// They are stable across processes and hosts, so every rank computes the same value.
#ifndef MSCCLPP_CORE_HASH_HPP_
#define MSCCLPP_CORE_HASH_HPP_

#include <cstdint>
#include <string>

namespace mscclpp {

// Mixes two 64-bit values with the splitmix64 finaliser.
uint64_t mix64(uint64_t a, uint64_t b);

// FNV-1a of the text, mixed with its length.
uint64_t hashString(const std::string& text);

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_HASH_HPP_
