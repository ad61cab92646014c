#include "bootstrap/unique_id.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "core/enforce.hpp"

namespace mscclpp::bootstrap {

namespace {
constexpr char kMagic[8] = {'M', 'S', 'C', 'L', 'P', 'P', 'I', 'D'};
constexpr size_t kAddrOffset = 12;
constexpr size_t kSecretOffset = kAddrOffset + net::SocketAddress::kEncodedBytes;
constexpr size_t kUsedBytes = kSecretOffset + 16;
static_assert(kUsedBytes <= MSCCLPP_UNIQUE_ID_BYTES, "unique id layout overflows 128 bytes");
}  // namespace

UniqueId encodeUniqueId(const UniqueIdFields& fields) {
  UniqueId id{};
  std::memcpy(id.data(), kMagic, 8);
  uint16_t version = kUniqueIdVersion;
  std::memcpy(id.data() + 8, &version, 2);
  std::memcpy(id.data() + 10, &fields.flags, 2);
  fields.root.encode(id.data() + kAddrOffset);
  std::memcpy(id.data() + kSecretOffset, fields.secret.data(), 16);
  return id;
}

UniqueIdFields decodeUniqueId(const UniqueId& id) {
  MSCCLPP_ENFORCE(std::memcmp(id.data(), kMagic, 8) == 0, ErrorCode::InvalidArgument,
                  "unique id: bad magic (not created by TcpBootstrap::createUniqueId / ncclGetUniqueId of this library)");
  uint16_t version, flags;
  std::memcpy(&version, id.data() + 8, 2);
  std::memcpy(&flags, id.data() + 10, 2);
  MSCCLPP_ENFORCE(version == kUniqueIdVersion, ErrorCode::InvalidArgument, "unique id: version %u, expected %u",
                  unsigned(version), unsigned(kUniqueIdVersion));
  MSCCLPP_ENFORCE((flags & ~kFlagFixedAddress) == 0, ErrorCode::InvalidArgument, "unique id: unknown flags 0x%x",
                  unsigned(flags));
  for (size_t i = kUsedBytes; i < id.size(); ++i) {
    MSCCLPP_ENFORCE(id[i] == 0, ErrorCode::InvalidArgument, "unique id: byte %zu of the reserved tail is 0x%02x, not 0",
                    i, unsigned(id[i]));
  }
  UniqueIdFields f;
  f.flags = flags;
  f.root = net::SocketAddress::decode(id.data() + kAddrOffset, "unique id root address");
  std::memcpy(f.secret.data(), id.data() + kSecretOffset, 16);
  return f;
}

Secret randomSecret() {
  Secret s{};
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::getrandom(s.data() + done, s.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError("getrandom for the bootstrap secret", errno);
    }
    done += static_cast<size_t>(n);
  }
  return s;
}

uint64_t mix64(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hashString(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then mixed
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return mix64(h, text.size());
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

UniqueIdFields fixedAddressId(const std::string& hostPort) {
  UniqueIdFields f;
  f.flags = kFlagFixedAddress;
  f.root = net::SocketAddress::parse(hostPort);
  f.secret = derivedSecret(f.root.toString());
  return f;
}

}  // namespace mscclpp::bootstrap
