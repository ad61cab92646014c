#include "core/net/secret.hpp"

#include <cstring>

#include "core/hash.hpp"
#include "core/random.hpp"

namespace mscclpp::net {

Secret randomSecret() {
  Secret s{};
  randomBytes(s.data(), s.size(), "a connection secret");
  return s;
}

Secret derivedSecret(const std::string& text) {
  Secret s{};
  uint64_t a = mix64(hashString(text), 0x4d53434c50504131ull);
  uint64_t b = mix64(a, hashString("mscclpp-comm-id:" + text));
  std::memcpy(s.data(), &a, 8);
  std::memcpy(s.data() + 8, &b, 8);
  return s;
}

bool secretEquals(const uint8_t* a, const Secret& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < b.size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace mscclpp::net
