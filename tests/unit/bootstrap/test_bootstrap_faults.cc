// Faults: strangers and garbage on the bootstrap ports, ranks that never
// arrive, peers that leave, abort. Each must end in a precise error (or no
// effect at all) within the deadline.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <future>

#include "../../support/scoped_env.hpp"
#include "bootstrap/wire.hpp"
#include "core/logger.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/errors.hpp"
#include "rank_threads.hpp"

using namespace mscclpp;
using Clock = std::chrono::steady_clock;
using mscclpp::test::runRanks;

namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Waits (bounded) until the last warning contains both texts: the drop is logged by another thread.
bool warnedAbout(const std::string& text, const std::string& also = "") {
  auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {
    std::string w = lastWarning();
    if (w.find(text) != std::string::npos && w.find(also) != std::string::npos) return true;
    std::this_thread::yield();
  }
  return false;
}

net::Socket rawConnect(const net::SocketAddress& addr) {
  return net::Socket::connectTo(addr, Deadline(5), "test", true);
}

}  // namespace

TEST_CASE("the root drops garbage and wrong secrets; the job forms", "[bootstrap][faults]") {
  UniqueId id = TcpBootstrap::createUniqueId();
  auto fields = bootstrap::decodeUniqueId(id);
  // Garbage bytes.
  net::Socket garbage = rawConnect(fields.root);
  garbage.sendAll("GET / HTTP/1.0\r\n\r\n", 18, Deadline(5), "test");
  CHECK(warnedAbout("bootstrap root at", "bad magic (garbage or a foreign protocol)"));
  // A well-formed hello with the wrong secret.
  net::Socket stranger = rawConnect(fields.root);
  bootstrap::RendezvousHello hello{};
  std::memcpy(hello.header.magic, bootstrap::kRendezvousHelloMagic, 8);
  hello.rank = 0;
  hello.nRanks = 2;
  fields.root.encode(hello.listenAddress);
  stranger.sendAll(&hello, sizeof(hello), Deadline(5), "test");
  CHECK(warnedAbout("bootstrap root at", "wrong secret (not a rank of this job)"));
  // A silent connection stays pending without blocking anyone.
  net::Socket silent = rawConnect(fields.root);
  std::vector<std::shared_ptr<Bootstrap>> bs(2);
  runRanks(2, [&](int r) {
    auto b = std::make_shared<TcpBootstrap>(r, 2);
    b->initialize(id);
    int v[2] = {0, 0};
    v[r] = r + 10;
    b->allGather(v, sizeof(int));
    CHECK(v[0] == 10);
    CHECK(v[1] == 11);
    bs[r] = b;
  });
}

TEST_CASE("a rank's listener drops garbage, strangers and impostors", "[bootstrap][faults]") {
  UniqueId id = TcpBootstrap::createUniqueId();
  auto fields = bootstrap::decodeUniqueId(id);
  std::vector<std::shared_ptr<TcpBootstrap>> bs(2);
  runRanks(2, [&](int r) {
    bs[r] = std::make_shared<TcpBootstrap>(r, 2);
    bs[r]->initialize(id);
    bs[r]->barrier();  // both directions connected
  });
  net::SocketAddress target = net::SocketAddress::parse(bs[0]->listenAddress());
  net::Socket garbage = rawConnect(target);
  std::vector<char> noise(4096, '\x5a');
  garbage.sendAll(noise.data(), noise.size(), Deadline(5), "test");
  CHECK(warnedAbout("bootstrap rank 0/2: dropped connection from", "bad magic"));
  net::Socket stranger = rawConnect(target);
  bootstrap::PeerHello hello{};
  std::memcpy(hello.header.magic, bootstrap::kPeerHelloMagic, 8);
  hello.fromRank = 1;
  hello.nRanks = 2;
  stranger.sendAll(&hello, sizeof(hello), Deadline(5), "test");
  CHECK(warnedAbout("bootstrap rank 0/2: dropped connection from", "wrong secret"));
  // Right secret, but rank 1 is already connected: an impostor (or a confused rank) is refused.
  net::Socket impostor = rawConnect(target);
  std::memcpy(hello.header.secret, fields.secret.data(), 16);
  impostor.sendAll(&hello, sizeof(hello), Deadline(5), "test");
  CHECK(warnedAbout("dropped a second connection claiming rank 1"));
  runRanks(2, [&](int r) {
    int v = 40 + r, got = 0;
    bs[r]->send(&v, sizeof(v), 1 - r, 9);
    bs[r]->recv(&got, sizeof(got), 1 - r, 9);
    CHECK(got == 41 - r);
  });
}

TEST_CASE("a rank that never arrives fails init in time, named", "[bootstrap][faults]") {
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "1");
  UniqueId id = TcpBootstrap::createUniqueId();
  auto start = Clock::now();
  std::vector<std::string> errors(4);
  runRanks(3, [&](int r) {
    TcpBootstrap b(r == 2 ? 3 : r, 5);  // ranks 0, 1, 3 of 5 come; 2 and 4 never do
    try {
      b.initialize(id);
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Timeout);
      errors[r] = e.what();
    }
  });
  double elapsed = secondsSince(start);
  CHECK(elapsed < 4.0);
  for (int r = 0; r < 3; ++r) {
    INFO(errors[r]);
    CHECK_THAT(errors[r],
               Catch::Contains("rendezvous failed: ranks 2, 4 (2 of 5) did not arrive at the bootstrap root"));
    CHECK_THAT(errors[r], Catch::Contains("within 1 s (MSCCLPP_TIMEOUT_S)"));
  }
}

TEST_CASE("an unreachable root fails init within the deadline", "[bootstrap][faults]") {
  net::SocketAddress addr = net::SocketAddress::parse("127.0.0.1:1");
  {
    addr.setPort(0);
    auto s = net::Socket::listenOn(addr);
    addr = s.localAddress();
  }  // closed: nobody listens there now
  bootstrap::UniqueIdFields f;
  f.root = addr;
  f.secret = net::randomSecret();
  TcpBootstrap b(0, 2);
  auto start = Clock::now();
  CHECK_THROWS_WITH(b.initialize(bootstrap::encodeUniqueId(f), 0.5),
                    Catch::StartsWith("cannot connect to the bootstrap root at " + addr.toString() + " within 0.5 s"));
  CHECK(secondsSince(start) < 2.0);
}

TEST_CASE("a peer leaving fails waits at once; a silent one times out", "[bootstrap][faults]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = kind == "tcp" ? test::makeTcpBootstraps(3) : test::makeInProcessBootstraps(3);
      runRanks(3, [&](int r) { bs[r]->barrier(); });
      int last = 77;
      bs[1]->send(&last, sizeof(last), 0, 4);
      bs[1].reset();  // rank 1 leaves (its connections close)
      int got = 0;
      bs[0]->recv(&got, sizeof(got), 1, 4);  // what it sent before leaving is still delivered
      CHECK(got == 77);
      auto start = Clock::now();
      try {
        bs[0]->recv(1, 4, 8);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::RemoteError);
        CHECK_THAT(e.what(), Catch::StartsWith("bootstrap rank 0/3: recv from rank 1 (tag 4): rank 1"));
      }
      CHECK(secondsSince(start) < 2.0);
      bs[0]->setTimeout(0.3);
      start = Clock::now();
      try {
        bs[0]->recv(2, 4, 8);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Timeout);
        CHECK(std::string(e.what()) ==
              "bootstrap rank 0/3: recv from rank 2 (tag 4) did not complete within 0.3 s (MSCCLPP_TIMEOUT_S)");
      }
      double t = secondsSince(start);
      CHECK(t >= 0.3);
      CHECK(t < 1.5);
    }
  }
}

TEST_CASE("abort wakes blocked calls promptly, even with peers gone", "[bootstrap][faults]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = kind == "tcp" ? test::makeTcpBootstraps(3) : test::makeInProcessBootstraps(3);
      runRanks(3, [&](int r) { bs[r]->barrier(); });
      bs[2].reset();
      auto start = Clock::now();
      auto blocked = std::async(std::launch::async, [&]() {
        try {
          bs[0]->recv(1, 11, 8);  // rank 1 is alive but never sends
        } catch (const Error& e) {
          return e.code();
        }
        return ErrorCode::InternalError;
      });
      bs[0]->abort();
      CHECK(blocked.get() == ErrorCode::Aborted);
      CHECK_THROWS_WITH(bs[0]->barrier(), Catch::Contains("aborted"));
      CHECK(secondsSince(start) < 2.0);
      if (kind == "inproc") {
        // In process, an abort is visible to the peers as the rank leaving.
        CHECK_THROWS_WITH(bs[1]->recv(0, 1, 8), Catch::Contains("rank 0 aborted"));
      }
      bs[0]->abort();  // idempotent
    }
  }
}

TEST_CASE("misuse is reported precisely", "[bootstrap]") {
  TcpBootstrap b(1, 4);
  CHECK_THROWS_WITH(b.barrier(), "TcpBootstrap rank 1/4: initialize() was not called");
  CHECK_THROWS_WITH(TcpBootstrap(4, 4), "TcpBootstrap: rank 4 is not in [0, nRanks=4)");
  CHECK_THROWS_WITH(InProcessBootstrap::createGroup(0), "InProcessBootstrap::createGroup: nRanks=0 must be > 0");
}

TEST_CASE("abort interrupts an initialize that waits for missing ranks", "[bootstrap][faults]") {
  UniqueId id = TcpBootstrap::createUniqueId();
  auto b = std::make_shared<TcpBootstrap>(0, 3);  // ranks 1 and 2 never come
  auto start = Clock::now();
  auto init = std::async(std::launch::async, [&]() {
    try {
      b->initialize(id);
    } catch (const Error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(ErrorCode::InternalError, std::string("no error"));
  });
  b->abort();  // before or during the rendezvous: either way initialize ends with Aborted
  auto result = init.get();
  CHECK(result.first == ErrorCode::Aborted);
  CHECK_THAT(result.second, Catch::Contains("abort"));
  CHECK(secondsSince(start) < 2.0);
}
