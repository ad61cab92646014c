// MSCCLPP_COMM_SECRET (docs/runtime.md, "Security"): SHA-256 and HMAC
// against their standards' vectors; ranks with the secret meet; a stranger
// who knows the address and the unique id but not the secret cannot join;
// a rank proves the secret without sending it; bad settings are refused.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "../../support/scoped_env.hpp"
#include "bootstrap/comm_secret.hpp"
#include "bootstrap/wire.hpp"
#include "core/net/hello.hpp"
#include "core/net/sha256.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/errors.hpp"
#include "rank_threads.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;
using mscclpp::test::ScopedEnv;

namespace {

constexpr const char* kSecret = "0123456789abcdef-test-secret";

std::string hex(const uint8_t* p, size_t n) {
  std::string out;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    out += b;
  }
  return out;
}
std::string hex(const net::Digest& d) { return hex(d.data(), d.size()); }

std::string sha(const std::string& text) { return hex(net::sha256(text.data(), text.size())); }

std::string hmac(const std::string& key, const std::string& data) {
  return hex(net::hmacSha256(key.data(), key.size(), {{data.data(), data.size()}}));
}

// A connection that the listener dropped reads EOF (or a reset) within a second.
bool closedByPeer(net::Socket& s) {
  char c;
  for (int i = 0; i < 100; ++i) {
    const ssize_t n = ::recv(s.fd(), &c, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("SHA-256 matches FIPS 180-4's examples", "[bootstrap][secret]") {
  CHECK(sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a', fed in uneven pieces: the buffering across blocks.
  net::Sha256 s;
  const std::string piece(997, 'a');
  size_t fed = 0;
  while (fed < 1000000) {
    const size_t n = std::min(piece.size(), 1000000 - fed);
    s.update(piece.data(), n);
    fed += n;
  }
  CHECK(hex(s.finish()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("HMAC-SHA256 matches RFC 4231's test vectors", "[bootstrap][secret]") {
  CHECK(hmac(std::string(20, '\x0b'), "Hi There") ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hmac("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hmac(std::string(20, '\xaa'), std::string(50, '\xdd')) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4 += static_cast<char>(i);
  CHECK(hmac(key4, std::string(50, '\xcd')) == "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  CHECK(hmac(std::string(20, '\x0c'), "Test With Truncation").substr(0, 32) == "a3b6167473100ee06e0c796c2955552b");
  CHECK(hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(hmac(std::string(131, '\xaa'),
             "This is a test using a larger than block-size key and a larger than block-size data. The key needs to "
             "be hashed before being used by the HMAC algorithm.") ==
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // The message in parts is the message whole.
  const net::Digest parts = net::hmacSha256("Jefe", 4, {{"what do ya ", 11}, {"want for nothing?", 17}});
  CHECK(hex(parts) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("ranks with MSCCLPP_COMM_SECRET meet; strangers cannot", "[bootstrap][secret]") {
  ScopedEnv secret("MSCCLPP_COMM_SECRET", kSecret);
  const UniqueId id = TcpBootstrap::createUniqueId();
  const bootstrap::UniqueIdFields f = bootstrap::decodeUniqueId(id);
  // A stranger knows the id, secret and all, but not MSCCLPP_COMM_SECRET.
  // Its hello, as rank 2, gets a challenge that it cannot answer.
  net::Socket stranger = net::Socket::connectTo(f.root, Deadline(5), "root", true);
  bootstrap::RendezvousHello hello{};
  hello.header = net::makeHelloHeader(bootstrap::kRendezvousHelloMagic, f.secret);
  hello.rank = 2;
  hello.nRanks = 3;
  stranger.sendAll(&hello, sizeof(hello), Deadline(5), "stranger");
  net::HelloChallenge challenge{};
  stranger.recvAll(&challenge, sizeof(challenge), Deadline(5), "stranger");
  CHECK(std::memcmp(challenge.magic, net::kChallengeMagic, 8) == 0);
  // A guessed proof is dropped at once.
  uint8_t guess[net::kHelloProofBytes] = {};
  stranger.sendAll(guess, sizeof(guess), Deadline(5), "stranger");
  CHECK(closedByPeer(stranger));
  // The real ranks still meet (a stranger taken for rank 2 would have
  // failed the rendezvous: "rank 2 arrived twice"), and their peer
  // listeners challenge strangers too.
  std::vector<std::shared_ptr<TcpBootstrap>> bs(3);
  runRanks(3, [&](int r) {
    bs[r] = std::make_shared<TcpBootstrap>(r, 3);
    bs[r]->initialize(id, 20);
  });
  std::vector<int> all = {0, 1, 2};
  runRanks(3, [&](int r) { bs[r]->allGather(all.data(), sizeof(int)); });
  net::Socket peer =
      net::Socket::connectTo(net::SocketAddress::parse(bs[1]->listenAddress()), Deadline(5), "rank 1", false);
  bootstrap::PeerHello peerHello{};
  peerHello.header = net::makeHelloHeader(bootstrap::kPeerHelloMagic, f.secret);
  peerHello.fromRank = 0;
  peerHello.nRanks = 3;
  peer.sendAll(&peerHello, sizeof(peerHello), Deadline(5), "stranger");
  peer.recvAll(&challenge, sizeof(challenge), Deadline(5), "stranger");
  CHECK(std::memcmp(challenge.magic, net::kChallengeMagic, 8) == 0);
  peer.sendAll(guess, sizeof(guess), Deadline(5), "stranger");
  CHECK(closedByPeer(peer));
  int v = 11, got = 0;
  bs[0]->send(&v, sizeof(v), 1, 3);
  bs[1]->recv(&got, sizeof(got), 0, 3);
  CHECK(got == 11);
}

TEST_CASE("a rank proves MSCCLPP_COMM_SECRET without sending it", "[bootstrap][secret]") {
  ScopedEnv secret("MSCCLPP_COMM_SECRET", kSecret);
  // A fake root that records what a rank sends.
  net::SocketAddress any = net::SocketAddress::parse("127.0.0.1:1");
  any.setPort(0);
  net::Socket listener = net::Socket::listenOn(any);
  bootstrap::UniqueIdFields f;
  f.root = listener.localAddress();
  f.secret = net::randomSecret();
  const UniqueId id = bootstrap::encodeUniqueId(f);
  const net::Digest key = *bootstrap::jobKey(f.secret);
  for (bool honest : {false, true}) {
    std::string error;
    std::thread rank([&] {
      TcpBootstrap b(0, 2);
      try {
        b.initialize(id, 3);
      } catch (const Error& e) {
        error = e.what();
      }
    });
    net::Socket s;
    for (int i = 0; i < 500 && !s.valid(); ++i) {
      s = listener.accept();
      if (!s.valid()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(s.valid());
    bootstrap::RendezvousHello hello{};
    s.recvAll(&hello, sizeof(hello), Deadline(5), "fake root");
    // Neither the id's secret nor MSCCLPP_COMM_SECRET is on the wire.
    CHECK(std::memcmp(hello.header.secret, f.secret.data(), f.secret.size()) != 0);
    const std::string wire(reinterpret_cast<const char*>(&hello), sizeof(hello));
    CHECK(wire.find(std::string(kSecret).substr(0, 8)) == std::string::npos);
    net::HelloChallenge c{};
    std::memcpy(c.magic, net::kChallengeMagic, 8);
    const net::Secret nonce = net::randomSecret();
    std::memcpy(c.nonce, nonce.data(), sizeof(c.nonce));
    const net::Digest mine = net::listenerProof(key, bootstrap::kRendezvousHelloMagic, hello.header.secret, c.nonce);
    std::memcpy(c.proof, mine.data(), mine.size());
    if (!honest) c.proof[0] ^= 1;  // a listener that does not know the key
    s.sendAll(&c, sizeof(c), Deadline(5), "fake root");
    if (honest) {
      uint8_t proof[net::kHelloProofBytes];
      s.recvAll(proof, sizeof(proof), Deadline(5), "fake root");
      const net::Digest expect = net::joinerProof(key, bootstrap::kRendezvousHelloMagic, hello.header.secret, c.nonce,
                                                  &hello.rank, sizeof(hello) - sizeof(hello.header));
      CHECK(net::digestEquals(proof, expect));
    }
    s.close();  // the fake root gives up: the rank fails
    rank.join();
    INFO(error);
    if (!honest) CHECK_THAT(error, Catch::Contains("could not prove MSCCLPP_COMM_SECRET"));
    if (honest) CHECK_FALSE(error.empty());
  }
}

TEST_CASE("ranks and a root that disagree on the secret say so", "[bootstrap][secret]") {
  SECTION("the rank has none") {
    UniqueId id;
    {
      ScopedEnv secret("MSCCLPP_COMM_SECRET", kSecret);
      id = TcpBootstrap::createUniqueId();
    }
    TcpBootstrap b(0, 1);
    CHECK_THROWS_WITH(b.initialize(id, 5), Catch::Contains("asks every rank to prove MSCCLPP_COMM_SECRET, which this "
                                                           "rank does not set"));
  }
  SECTION("the root has none") {
    const UniqueId id = TcpBootstrap::createUniqueId();
    ScopedEnv secret("MSCCLPP_COMM_SECRET", kSecret);
    TcpBootstrap b(0, 1);
    CHECK_THROWS_WITH(b.initialize(id, 5), Catch::Contains("does not use MSCCLPP_COMM_SECRET, or ours differs"));
  }
}

TEST_CASE("bad MSCCLPP_COMM_SECRET settings are refused", "[bootstrap][secret]") {
  {
    ScopedEnv secret("MSCCLPP_COMM_SECRET", "short");
    CHECK_THROWS_WITH(bootstrap::configuredCommSecret(),
                      Catch::StartsWith("MSCCLPP_COMM_SECRET has 5 bytes; a secret needs at least 16"));
    TcpBootstrap b(0, 1);
    CHECK_THROWS_WITH(b.initialize("127.0.0.1:1", 1), Catch::Contains("MSCCLPP_COMM_SECRET has 5 bytes"));
  }
  char path[] = "/tmp/mscclpp-secret-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = std::string(kSecret) + "\nsecond line\n";
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  {
    ScopedEnv file("MSCCLPP_COMM_SECRET_FILE", path);
    CHECK(bootstrap::configuredCommSecret() == std::string(kSecret));  // its first line
    ScopedEnv both("MSCCLPP_COMM_SECRET", kSecret);
    CHECK_THROWS_WITH(bootstrap::configuredCommSecret(),
                      "MSCCLPP_COMM_SECRET and MSCCLPP_COMM_SECRET_FILE are both set: set one of them");
  }
  unlink(path);
  {
    ScopedEnv file("MSCCLPP_COMM_SECRET_FILE", path);
    CHECK_THROWS_WITH(bootstrap::configuredCommSecret(), Catch::Contains(std::string(path) + ": cannot open it"));
  }
  CHECK_FALSE(bootstrap::configuredCommSecret().has_value());
}
