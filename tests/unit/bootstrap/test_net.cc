// Unique id layout, socket addresses and interface selection.
#include <catch2/catch.hpp>
#include <cstring>

#include "bootstrap/wire.hpp"
#include "core/net/net_interface.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/errors.hpp"

using namespace mscclpp;
using mscclpp::net::NetInterface;
using mscclpp::net::SocketAddress;

namespace {
std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("socket addresses parse, print and round-trip the wire form", "[net]") {
  SocketAddress a = SocketAddress::parse("127.0.0.1:5000");
  CHECK(a.toString() == "127.0.0.1:5000");
  CHECK(a.isLoopback());
  SocketAddress b = SocketAddress::parse("[::1]:6000");
  CHECK(b.toString() == "[::1]:6000");
  CHECK(b.family() == AF_INET6);
  for (const SocketAddress& addr : {a, b, SocketAddress::parse("192.0.2.7:1")}) {
    uint8_t wire[SocketAddress::kEncodedBytes];
    addr.encode(wire);
    CHECK(SocketAddress::decode(wire, "test").toString() == addr.toString());
  }
  CHECK(errorOf([] { SocketAddress::parse("localhost"); }) == "address 'localhost': expected host:port");
  CHECK(errorOf([] { SocketAddress::parse("1.2.3.4:70000"); }) ==
        "address '1.2.3.4:70000': port '70000' is not in 1..65535");
  CHECK(errorOf([] { SocketAddress::parse("::1:80"); }) == "address '::1:80': write IPv6 addresses as [addr]:port");
  uint8_t bad[SocketAddress::kEncodedBytes] = {9, 0, 1, 0};
  CHECK(errorOf([&] { SocketAddress::decode(bad, "peer table"); }) ==
        "peer table: address family tag 9 is neither 4 (IPv4) nor 6 (IPv6)");
}

TEST_CASE("unique ids round-trip and bad ids are rejected precisely", "[net]") {
  bootstrap::UniqueIdFields f;
  f.root = SocketAddress::parse("10.1.2.3:4567");
  f.secret = net::randomSecret();
  UniqueId id = bootstrap::encodeUniqueId(f);
  CHECK(std::memcmp(id.data(), "MSCLPPID", 8) == 0);
  bootstrap::UniqueIdFields g = bootstrap::decodeUniqueId(id);
  CHECK(g.root.toString() == "10.1.2.3:4567");
  CHECK(g.secret == f.secret);
  CHECK(g.flags == 0);
  // Two random secrets differ (128 bits from getrandom).
  CHECK(net::randomSecret() != net::randomSecret());

  UniqueId zero{};
  CHECK_THROWS_WITH(bootstrap::decodeUniqueId(zero), Catch::Contains("unique id: bad magic"));
  UniqueId v = id;
  v[8] = 7;
  CHECK(errorOf([&] { bootstrap::decodeUniqueId(v); }) == "unique id: version 7, expected 1");
  UniqueId tail = id;
  tail[100] = 0x5a;
  CHECK(errorOf([&] { bootstrap::decodeUniqueId(tail); }) == "unique id: byte 100 of the reserved tail is 0x5a, not 0");
  UniqueId port = id;
  port[14] = port[15] = 0;
  CHECK(errorOf([&] { bootstrap::decodeUniqueId(port); }) == "unique id root address: port is 0");
}

TEST_CASE("fixed-address ids derive the same secret everywhere", "[net]") {
  auto a = bootstrap::fixedAddressId("127.0.0.1:29500");
  auto b = bootstrap::fixedAddressId("127.0.0.1:29500");
  auto c = bootstrap::fixedAddressId("127.0.0.1:29501");
  CHECK(a.secret == b.secret);
  CHECK(a.secret != c.secret);
  CHECK(a.flags == bootstrap::kFlagFixedAddress);
}

TEST_CASE("MSCCLPP_SOCKET_IFNAME matching follows NCCL's conventions", "[net]") {
  CHECK(net::interfaceMatches("", "eth0"));
  CHECK(net::interfaceMatches("eth", "eth0"));
  CHECK(net::interfaceMatches("ib,eth", "eth1"));
  CHECK_FALSE(net::interfaceMatches("ib", "eth0"));
  CHECK(net::interfaceMatches("=eth0", "eth0"));
  CHECK_FALSE(net::interfaceMatches("=eth0", "eth01"));
  CHECK_FALSE(net::interfaceMatches("^docker,lo", "docker0"));
  CHECK_FALSE(net::interfaceMatches("^docker,lo", "lo"));
  CHECK(net::interfaceMatches("^docker,lo", "eth0"));
  CHECK(net::interfaceMatches("^=eth0", "eth01"));
  CHECK_FALSE(net::interfaceMatches("^=eth0", "eth0"));
}

TEST_CASE("the default interface: first non-loopback, else loopback", "[net]") {
  NetInterface lo{"lo", SocketAddress::parse("127.0.0.1:1"), true};
  NetInterface eth{"eth0", SocketAddress::parse("192.0.2.2:1"), false};
  NetInterface veth{"veth1", SocketAddress::parse("10.9.0.1:1"), false};
  CHECK(net::chooseInterface("", {lo, eth, veth}).name == "eth0");
  CHECK(net::chooseInterface("", {lo}).name == "lo");
  CHECK(net::chooseInterface("veth", {lo, eth, veth}).name == "veth1");
  CHECK(net::chooseInterface("^eth", {lo, eth, veth}).name == "lo");
  CHECK(errorOf([&] {
          net::chooseInterface("ib", {lo, eth});
        }) == "MSCCLPP_SOCKET_IFNAME='ib' selects no interface that is up (seen: lo=127.0.0.1:1, eth0=192.0.2.2:1)");
  // The real machine has at least loopback.
  CHECK_FALSE(net::listInterfaces().empty());
}
