// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the bootstrap's
// challenge-response with a shared secret (docs/runtime.md, "Security").
// Checked against FIPS 180-4's examples and RFC 4231's test vectors.
#ifndef MSCCLPP_CORE_NET_SHA256_HPP_
#define MSCCLPP_CORE_NET_SHA256_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace mscclpp::net {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  Digest finish();  // the object is spent after

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

Digest sha256(const void* data, size_t size);

// HMAC-SHA256 over the concatenation of the parts.
struct Bytes {
  const void* data;
  size_t size;
};
Digest hmacSha256(const void* key, size_t keySize, std::initializer_list<Bytes> message);

// Compares without an early exit.
bool digestEquals(const uint8_t* a, const Digest& b);

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_SHA256_HPP_
