// Encoding and decoding of the unique id (layout in wire.hpp).
#include "bootstrap/wire.hpp"

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
  MSCCLPP_ENFORCE(
      std::memcmp(id.data(), kMagic, 8) == 0, ErrorCode::InvalidArgument,
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

UniqueIdFields fixedAddressId(const std::string& hostPort) {
  UniqueIdFields f;
  f.flags = kFlagFixedAddress;
  f.root = net::SocketAddress::parse(hostPort);
  f.secret = net::derivedSecret(f.root.toString());
  return f;
}

}  // namespace mscclpp::bootstrap
