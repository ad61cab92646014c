// A rendezvous that cannot complete fails on every rank, promptly, with
// the reason: a rank dies mid-hello or after arriving, a bogus hello carries
// the job's secret, or the root is gone. The rank hosting the root is told
// like the others, so no rank waits on a root that gave up. A rank never
// waits past its rendezvous timeout.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>

#include "../../support/scoped_env.hpp"
#include "bootstrap/root.hpp"
#include "bootstrap/wire.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/errors.hpp"
#include "rank_threads.hpp"

using namespace mscclpp;
using Clock = std::chrono::steady_clock;
using mscclpp::test::runRanks;

namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A socket listening on a loopback port the kernel chose.
net::Socket listenOnLoopback() {
  net::SocketAddress addr = net::SocketAddress::parse("127.0.0.1:1");
  addr.setPort(0);
  return net::Socket::listenOn(addr);
}

// A loopback host:port nobody listens on now (the rank 0 root binds it again).
std::string freeLoopbackAddress() { return listenOnLoopback().localAddress().toString(); }

// The unique id's fields for a root listening at `root`, with a fresh secret.
bootstrap::UniqueIdFields fieldsFor(const net::Socket& root) {
  bootstrap::UniqueIdFields f;
  f.root = root.localAddress();
  f.secret = net::randomSecret();
  return f;
}

// A rank's hello as TcpBootstrap sends it.
bootstrap::RendezvousHello helloOf(const bootstrap::UniqueIdFields& f, int rank, int nRanks) {
  bootstrap::RendezvousHello h{};
  h.header = net::makeHelloHeader(bootstrap::kRendezvousHelloMagic, f.secret);
  h.rank = rank;
  h.nRanks = nRanks;
  net::SocketAddress::parse("127.0.0.1:9").encode(h.listenAddress);
  return h;
}

// Sends the first `bytes` of a hello as `rank`, then closes the connection (the rank's process died).
void dieAfterHelloBytes(const bootstrap::UniqueIdFields& f, int rank, int nRanks, size_t bytes) {
  net::Socket s = net::Socket::connectTo(f.root, Deadline(10), "the bootstrap root", true);
  bootstrap::RendezvousHello h = helloOf(f, rank, nRanks);
  s.sendAll(&h, bytes, Deadline(5), "test: hello");
}

struct Outcome {
  std::string error = "(no error)";
  ErrorCode code = ErrorCode::InternalError;
  double seconds = 0;
};

// Ranks `ranks` of nRanks initialize from `id` on threads while `fault` runs on this one; returns each rank's error.
std::vector<Outcome> initializeWhile(const std::vector<int>& ranks, int nRanks, const UniqueId& id,
                                     const std::function<void()>& fault) {
  std::vector<Outcome> out(ranks.size());
  auto start = Clock::now();
  std::thread faulty(fault);
  runRanks(static_cast<int>(ranks.size()), [&](int k) {
    TcpBootstrap b(ranks[k], nRanks);
    try {
      b.initialize(id);
    } catch (const Error& e) {
      out[k].error = e.what();
      out[k].code = e.code();
    }
    out[k].seconds = secondsSince(start);
  });
  faulty.join();
  return out;
}

// Every rank failed promptly with RemoteError containing each of `texts`.
void checkAllFailedPromptly(const std::vector<Outcome>& out, const std::vector<std::string>& texts) {
  for (const Outcome& o : out) {
    INFO(o.error);
    CHECK(o.code == ErrorCode::RemoteError);
    for (const std::string& t : texts) CHECK_THAT(o.error, Catch::Contains(t));
    CHECK(o.seconds < 5.0);
  }
}

}  // namespace

// MSCCLPP_TIMEOUT_S is 60 in this suite; each failure below must come in seconds.
TEST_CASE("a rank dying mid-hello fails the rendezvous everywhere", "[bootstrap][rendezvous]") {
  for (size_t bytes : {sizeof(net::HelloHeader), sizeof(bootstrap::RendezvousHello) - 4}) {
    DYNAMIC_SECTION("after " << bytes << " bytes of its hello") {
      // A new address each time: a failed root stays a while to tell late ranks.
      const std::string hostPort = freeLoopbackAddress();
      const auto fields = bootstrap::fixedAddressId(hostPort);
      const UniqueId id = bootstrap::encodeUniqueId(fields);
      // Ranks 0 (hosting the root), 1 and 2 of 4; rank 3 connects, sends part of its hello and dies.
      auto out = initializeWhile({0, 1, 2}, 4, id, [&] { dieAfterHelloBytes(fields, 3, 4, bytes); });
      for (const Outcome& o : out) {
        INFO(o.error);
        CHECK(o.code == ErrorCode::RemoteError);
        CHECK_THAT(o.error, Catch::Contains("rendezvous failed"));
        CHECK_THAT(o.error, Catch::Contains("closed its connection to the bootstrap root at " + hostPort +
                                            " in the middle of its hello"));
        if (bytes > sizeof(net::HelloHeader)) CHECK_THAT(o.error, Catch::Contains("rank 3 at 127.0.0.1:"));
        CHECK(o.seconds < 5.0);
      }
    }
  }
}

TEST_CASE("a rank that arrived and died fails every rank at once", "[bootstrap][rendezvous]") {
  const UniqueId id = TcpBootstrap::createUniqueId();
  const auto fields = bootstrap::decodeUniqueId(id);
  // Ranks 0 and 2 of 4 come, rank 1 arrives and dies, rank 3 is late: nobody waits for it.
  auto out =
      initializeWhile({0, 2}, 4, id, [&] { dieAfterHelloBytes(fields, 1, 4, sizeof(bootstrap::RendezvousHello)); });
  checkAllFailedPromptly(out, {"rank 1 at 127.0.0.1:", "closed its connection to the bootstrap root"});
}

TEST_CASE("a bogus hello with the secret fails every rank", "[bootstrap][rendezvous]") {
  const UniqueId id = TcpBootstrap::createUniqueId();
  const auto fields = bootstrap::decodeUniqueId(id);
  net::Socket bogus;  // kept open: the failure comes from its content, not from a close
  auto out = initializeWhile({0, 1}, 3, id, [&] {
    bogus = net::Socket::connectTo(fields.root, Deadline(10), "the bootstrap root", true);
    bootstrap::RendezvousHello h = helloOf(fields, 7, 3);
    bogus.sendAll(&h, sizeof(h), Deadline(5), "test: hello");
  });
  checkAllFailedPromptly(out, {"rank 7 at 127.0.0.1:", "is not in [0, 3)"});
}

TEST_CASE("a root stopping early fails the ranks that arrived", "[bootstrap][rendezvous]") {
  net::Socket listener = listenOnLoopback();
  const bootstrap::UniqueIdFields f = fieldsFor(listener);
  auto root = bootstrap::RootListener::start(std::move(listener), f.secret, std::nullopt, 60, "MSCCLPP_TIMEOUT_S");
  auto out = initializeWhile({0, 1}, 3, bootstrap::encodeUniqueId(f), [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // ranks 0 and 1 arrive; rank 2 never does
    root->stop();
  });
  checkAllFailedPromptly(out, {"was stopped before every rank arrived"});
}

TEST_CASE("the rendezvous wait ends at its timeout, naming the setting", "[bootstrap][rendezvous]") {
  // A root that accepts and never answers (a hung process holding the port).
  net::Socket silentRoot = listenOnLoopback();
  const bootstrap::UniqueIdFields f = fieldsFor(silentRoot);
  SECTION("the initialize() timeout") {
    TcpBootstrap b(1, 2);
    auto start = Clock::now();
    CHECK_THROWS_WITH(b.initialize(bootstrap::encodeUniqueId(f), 1.0),
                      Catch::Contains("did not complete within 1 s (the initialize() timeout)"));
    CHECK(secondsSince(start) < 1.5);
  }
  SECTION("MSCCLPP_INIT_TIMEOUT_S") {
    test::ScopedEnv noTimeout("MSCCLPP_TIMEOUT_S", "0");
    test::ScopedEnv init("MSCCLPP_INIT_TIMEOUT_S", "1");
    TcpBootstrap b(1, 2);
    auto start = Clock::now();
    CHECK_THROWS_WITH(b.initialize(bootstrap::encodeUniqueId(f)),
                      Catch::Contains("did not complete within 1 s (MSCCLPP_INIT_TIMEOUT_S)"));
    CHECK(secondsSince(start) < 1.5);
  }
}
