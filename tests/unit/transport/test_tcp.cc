// The TCP transport: ordered writes and updates, flush, remote rejections,
// peers leaving, strangers at the engine port, abort.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "../../support/scoped_env.hpp"
#include "../bootstrap/rank_threads.hpp"
#include "comm/communicator_impl.hpp"
#include "core/hash.hpp"
#include "core/logger.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/registration.hpp"
#include "transport/tcp/connection.hpp"
#include "transport/tcp/driver.hpp"
#include "transport/tcp/memory.hpp"

using namespace mscclpp;
using Clock = std::chrono::steady_clock;
using mscclpp::test::runRanks;

namespace {

struct Pair {
  std::vector<std::shared_ptr<Communicator>> comms;
  std::vector<std::shared_ptr<Connection>> conns;
  std::vector<std::vector<uint64_t>> bufs;
  std::vector<RegisteredMemory> local, remote;
};

// Two ranks (threads) with a TCP connection and a registered plain-host buffer each.
std::unique_ptr<Pair> makePair(size_t words, int n = 2) {
  auto p = std::make_unique<Pair>();
  auto bs = test::makeTcpBootstraps(n);
  p->comms.resize(n);
  p->conns.resize(n);
  p->bufs.assign(n, std::vector<uint64_t>(words, 0));
  p->local.resize(n);
  p->remote.resize(n);
  runRanks(n, [&](int r) {
    p->comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice);
    if (r > 1) return;
    Communicator& c = *p->comms[r];
    int peer = 1 - r;
    auto f = c.connect(peer, 0, Transport::Tcp);
    p->local[r] = c.registerMemory(p->bufs[r].data(), words * 8, Transport::Tcp);
    c.sendMemory(p->local[r], peer, 0);
    p->remote[r] = c.recvMemory(peer, 0).get();
    p->conns[r] = f.get();
  });
  return p;
}

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

}  // namespace

TEST_CASE("TCP writes and updates arrive in order, both ways at once", "[tcp][connection]") {
  const size_t half = (8 << 20) / 8;  // 8 MiB sent each way
  const size_t words = 2 * half + 1;  // [0, half): our data; [half, 2 half): the peer's; then a flag
  auto p = makePair(words);
  runRanks(2, [&](int r) {
    int peer = 1 - r;
    std::vector<uint64_t>& mine = p->bufs[r];
    for (size_t i = 0; i < half; ++i) mine[i] = (uint64_t(r + 1) << 40) + i;
    Connection& conn = *p->conns[r];
    CHECK(conn.describe() == "rank " + std::to_string(r) + " -> rank " + std::to_string(peer) + " over TCP");
    // In pieces, as a proxy would: the flag update must land after all of them.
    const uint64_t piece = 1 << 20;
    for (uint64_t off = 0; off < half * 8; off += piece)
      conn.write(p->remote[r], half * 8 + off, p->local[r], off, piece);
    uint64_t outbound = 0;
    conn.updateAndSync(p->remote[r], (words - 1) * 8, &outbound, 7);
    conn.flush();
    uint64_t* flag = &mine[words - 1];
    waitUntil([&] { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) == 7; }, Deadline(30), "peer flag");
    bool same = true;
    for (size_t i = 0; i < half; ++i) same = same && mine[half + i] == (uint64_t(peer + 1) << 40) + i;
    CHECK(same);
  });
}

TEST_CASE("TCP rejects bad requests locally or at the peer, in place", "[tcp][connection]") {
  auto p = makePair(128, 3);
  runRanks(3, [&](int r) {
    Communicator& c = *p->comms[r];
    if (r == 2) {
      std::vector<char> other(64);
      c.sendMemory(c.registerMemory(other.data(), 64, Transport::Tcp), 0, 5);
      c.bootstrap()->barrier();
      return;
    }
    if (r == 1) {
      c.bootstrap()->barrier();
      return;
    }
    Connection& conn = *p->conns[0];
    CHECK_THROWS_WITH(conn.write(p->remote[0], 1000, p->local[0], 0, 100),
                      "rank 0 -> rank 1 over TCP: write of 100 bytes at destination offset 1000 overruns rank 1's "
                      "1024-byte memory");
    RegisteredMemory fromRank2 = c.recvMemory(2, 5).get();
    CHECK_THROWS_WITH(conn.write(fromRank2, 0, p->local[0], 0, 8),
                      "rank 0 -> rank 1 over TCP: the destination memory belongs to rank 2, not to the peer");
    // A registration whose key the peer does not know (a stale or forged one):
    // the peer rejects it, the stream stays in sync, and the error surfaces at
    // flush with the peer's reason.
    auto forged = std::make_shared<RegisteredMemoryAccess::Impl>(*RegisteredMemoryAccess::impl(p->remote[0]));
    auto forgedKey =
        std::make_shared<transport::tcp::TcpRecord>(*forged->record<transport::tcp::TcpRecord>(Transport::Tcp));
    forgedKey->key += 1000;
    forged->records[static_cast<size_t>(Transport::Tcp)] = forgedKey;
    conn.write(RegisteredMemoryAccess::make(forged), 0, p->local[0], 0, 64);
    try {
      conn.flush();
      FAIL("flush did not report the rejected write");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::RemoteError);
      CHECK_THAT(e.what(), Catch::StartsWith("rank 0 -> rank 1 over TCP: flush: rank 1 TCP transport: write #1 of 64 "
                                             "bytes names unknown memory key"));
    }
    CHECK_THROWS_WITH(conn.write(p->remote[0], 0, p->local[0], 0, 8), Catch::Contains("names unknown memory key"));
    c.bootstrap()->barrier();
  });
}

TEST_CASE("a departed TCP peer fails flush at once, not at the deadline", "[tcp][faults]") {
  auto p = makePair(16);
  p->conns[1].reset();
  p->comms[1].reset();  // rank 1 is gone: its sockets close
  auto start = Clock::now();
  try {
    p->conns[0]->write(p->remote[0], 0, p->local[0], 0, 8);
    p->conns[0]->flush();
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::RemoteError);
    CHECK_THAT(e.what(), Catch::StartsWith("rank 0 -> rank 1 over TCP: ") && Catch::Contains("rank 1 closed its TCP "
                                                                                             "connection"));
  }
  CHECK(secondsSince(start) < 5.0);
}

TEST_CASE("the TCP engine drops strangers; the connection keeps working", "[tcp][faults]") {
  auto p = makePair(16);
  net::SocketAddress addr =
      transport::tcp::engineOf(*CommunicatorAccess::impl(*p->comms[1]).session(Transport::Tcp))->address();
  net::Socket garbage = net::Socket::connectTo(addr, Deadline(5), "test", false);
  garbage.sendAll("\x01\x02\x03\x04garbage!", 12, Deadline(5), "test");
  CHECK(warnedAbout("rank 1 TCP transport: dropped connection from", "bad magic"));
  net::Socket stranger = net::Socket::connectTo(addr, Deadline(5), "test", false);
  transport::tcp::Hello hello{};
  std::memcpy(hello.header.magic, "MSCLTCP1", 8);
  stranger.sendAll(&hello, sizeof(hello), Deadline(5), "test");
  CHECK(warnedAbout("rank 1 TCP transport: dropped connection from", "wrong secret (not a peer of this communicator)"));
  p->bufs[0][3] = 99;
  p->conns[0]->write(p->remote[0], 24, p->local[0], 24, 8);
  p->conns[0]->flush();
  CHECK(p->bufs[1][3] == 99);
}

TEST_CASE("abort makes TCP calls fail promptly", "[tcp][faults]") {
  auto p = makePair(16);
  auto start = Clock::now();
  p->comms[0]->abort();
  CHECK_THROWS_WITH(p->conns[0]->flush(), Catch::Contains("aborted"));
  CHECK_THROWS_WITH(p->conns[0]->write(p->remote[0], 0, p->local[0], 0, 8), Catch::Contains("aborted"));
  CHECK(secondsSince(start) < 2.0);
  // The peer sees rank 0 leave.
  CHECK_THROWS_WITH(p->conns[1]->flush(),
                    Catch::Contains("rank 0 closed its TCP connection") || Catch::Contains("connection lost"));
}

TEST_CASE("both sides must ask for the same transport", "[tcp][connection]") {
  auto bs = test::makeTcpBootstraps(2);
  std::vector<std::shared_ptr<Communicator>> comms(2);
  runRanks(2, [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  runRanks(2, [&](int r) {
    auto f = comms[r]->connect(1 - r, 3, r == 0 ? Transport::Tcp : Transport::HostShm);
    CHECK_THROWS_WITH(f.get(), r == 0 ? "communicator rank 0/2: connect to rank 1 over TCP (tag 3): rank 1 connected "
                                        "with SHM on this tag: both sides must use the same transport"
                                      : "communicator rank 1/2: connect to rank 0 over SHM (tag 3): rank 0 connected "
                                        "with TCP on this tag: both sides must use the same transport");
  });
}

TEST_CASE("a TCP connection to oneself works through the engine", "[tcp][connection]") {
  auto bs = test::makeTcpBootstraps(1);
  Communicator c(bs[0], kHostDevice);
  std::vector<uint64_t> a(8, 5), b(8, 0);
  auto f = c.connect(0, 0, Transport::Tcp);
  RegisteredMemory ma = c.registerMemory(a.data(), 64, Transport::Tcp);
  RegisteredMemory mb = c.registerMemory(b.data(), 64, Transport::Tcp);
  auto conn = f.get();
  conn->write(mb, 0, ma, 0, 64);
  conn->flush();
  CHECK(b == a);
}

TEST_CASE("a TCP handshake waits the communicator's timeout, naming it", "[tcp][timeout]") {
  test::ScopedEnv longer("MSCCLPP_TIMEOUT_S", "5");
  auto bs = test::makeTcpBootstraps(2, 0.3);  // the communicators' own timeout: 0.3 s
  std::vector<std::shared_ptr<Communicator>> comms(2);
  runRanks(2, [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  // Rank 1 sends its endpoint but never completes its side: rank 0's connection waits for rank 1's socket.
  auto half = comms[1]->connect(0, 3, Transport::Tcp);
  auto start = Clock::now();
  std::string error = test::errorOf([&] { comms[0]->connect(1, 3, Transport::Tcp).get(); });
  CHECK_THAT(error, Catch::StartsWith("communicator rank 0/2: connect to rank 1 over TCP (tag 3): ") &&
                        Catch::EndsWith("within 0.3 s (the communicator's timeout)"));
  CHECK(secondsSince(start) < 2.0);
  // A shorter MSCCLPP_TIMEOUT_S is the earlier deadline, and is named.
  test::ScopedEnv shorter("MSCCLPP_TIMEOUT_S", "0.2");
  auto half2 = comms[1]->connect(0, 4, Transport::Tcp);
  error = test::errorOf([&] { comms[0]->connect(1, 4, Transport::Tcp).get(); });
  CHECK_THAT(error, Catch::EndsWith("within 0.2 s (MSCCLPP_TIMEOUT_S)"));
}

TEST_CASE("a TCP handshake ends when the communicator fails", "[tcp][timeout]") {
  // No deadline: a peer that failed before opening its side of a connection
  // (a rank gone from the job) must not leave the other waiting for it.
  test::ScopedEnv none("MSCCLPP_TIMEOUT_S", "0");
  auto bs = test::makeTcpBootstraps(2);
  std::vector<std::shared_ptr<Communicator>> comms(2);
  runRanks(2, [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  auto half = comms[1]->connect(0, 5, Transport::Tcp);
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    comms[0]->fail(ErrorCode::RemoteError, "communicator rank 0/2: rank 1 failed: gone");
  });
  auto start = Clock::now();
  std::string error = test::errorOf([&] { comms[0]->connect(1, 5, Transport::Tcp).get(); });
  failer.join();
  CHECK_THAT(error, Catch::StartsWith("communicator rank 0/2: connect to rank 1 over TCP (tag 5): ") &&
                        Catch::Contains("the communicator failed"));
  CHECK(secondsSince(start) < 2.0);
}

TEST_CASE("a TCP flush waits the communicator's timeout, naming it", "[tcp][timeout]") {
  test::ScopedEnv longer("MSCCLPP_TIMEOUT_S", "5");
  auto bs = test::makeTcpBootstraps(1, 0.3);
  Communicator c(bs[0], kHostDevice);
  auto pending = CommunicatorAccess::impl(c)
                     .session(Transport::Tcp)
                     ->connect(1, timeoutOf(c));  // what Communicator::connect passes
  const transport::tcp::EndpointInfo mine = transport::tcp::decodeEndpoint(pending->localEndpoint(), "endpoint");
  // The peer: a test thread that opens both sockets of the connection, then reads nothing and acknowledges nothing.
  net::SocketAddress loopback = mine.address;
  loopback.setPort(0);
  net::Socket listener = net::Socket::listenOn(loopback);
  transport::tcp::EndpointInfo silent;
  silent.address = listener.localAddress();
  silent.secret = net::randomSecret();
  silent.engineId = 7;
  silent.nonce = 11;
  net::Socket fromRank0, toRank0;
  std::string peerError;
  std::thread peer([&] {
    peerError = test::errorOf([&] {
      const Deadline deadline(5, "the test's deadline");
      while (!(fromRank0 = listener.accept()).valid()) {
        if (deadline.expired()) throwTimeout(deadline, "accept");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      transport::tcp::Hello hello{};
      fromRank0.recvAll(&hello, sizeof(hello), deadline, "hello");
      fromRank0.sendAll(transport::tcp::kHelloAckMagic, 8, deadline, "hello reply");
      toRank0 = net::Socket::connectTo(mine.address, deadline, "rank 0's TCP transport", false);
      transport::tcp::Hello back{};
      back.header = net::makeHelloHeader(transport::tcp::kHelloMagic, mine.secret);
      back.connId = mix64(silent.nonce, mine.nonce);  // the id rank 0 claims for its incoming socket
      back.fromRank = 1;
      toRank0.sendAll(&back, sizeof(back), deadline, "hello");
      char ack[8];
      toRank0.recvAll(ack, sizeof(ack), deadline, "hello reply");
    });
  });
  std::shared_ptr<Connection> conn;
  std::string connectError = test::errorOf([&] {
    conn = pending->complete(transport::PeerEndpoint{1, -1, transport::tcp::encodeEndpoint(silent)});
  });
  peer.join();
  REQUIRE(peerError == "(no error)");
  REQUIRE(connectError == "(no error)");
  auto start = Clock::now();
  std::string error = test::errorOf([&] { conn->flush(); });
  CHECK(error == "rank 0 -> rank 1 over TCP: flush did not complete within 0.3 s (the communicator's timeout)");
  CHECK(secondsSince(start) < 2.0);
  // Its own argument still wins.
  error = test::errorOf([&] { conn->flush(100000); });
  CHECK_THAT(error, Catch::EndsWith("within 0.1 s (the flush's timeout)"));
}
