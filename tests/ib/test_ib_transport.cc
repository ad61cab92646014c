// The InfiniBand transport against the verbs double, ranks as threads of one
// process: connections between HCAs, writes and signals, and what the double
// found (docs/runtime.md, "InfiniBand"). The suite's environment gives this
// process four HCAs: mlx5_0 and mlx5_1, mlx5_2 with 32 inline bytes, mlx5_3
// with messages of at most 64 KiB.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <vector>

#include "../support/scoped_env.hpp"
#include "../unit/bootstrap/rank_threads.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/errors.hpp"

using namespace mscclpp;

namespace {

constexpr size_t kWords = 32 * 1024;  // 256 KiB

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Two ranks as threads, rank r on transport `mine[r]`: each writes its block
// into the peer's buffer, then signals its word, flushes and checks what the
// peer wrote to it.
void exchange(Transport t0, Transport t1, size_t words = kWords) {
  auto bs = test::makeInProcessBootstraps(2);
  test::runRanks(2, [&](int r) {
    const Transport mine = r == 0 ? t0 : t1;
    Communicator c(bs[r], kHostDevice);
    std::vector<uint64_t> send(words), recv(words + 1, 0);  // the last word is the signal
    for (size_t i = 0; i < words; ++i) send[i] = (uint64_t(r) << 40) | i;
    RegisteredMemory sendMem = c.registerMemory(send.data(), words * 8, mine);
    RegisteredMemory recvMem = c.registerMemory(recv.data(), (words + 1) * 8, mine);
    auto conn = c.connect(1 - r, 0, mine);
    c.sendMemory(recvMem, 1 - r, 0);
    RegisteredMemory peer = c.recvMemory(1 - r, 0).get();
    std::shared_ptr<Connection> cn = conn.get();
    uint64_t value = 0;
    cn->write(peer, 0, sendMem, 0, words * 8);
    cn->updateAndSync(peer, words * 8, &value, 1);
    cn->flush();
    auto t = std::chrono::steady_clock::now();
    while (__atomic_load_n(&recv[words], __ATOMIC_ACQUIRE) != 1 && since(t) < 20) {
    }
    REQUIRE(recv[words] == 1);
    for (size_t i = 0; i < words; ++i) {
      if (recv[i] != ((uint64_t(1 - r) << 40) | i)) {
        FAIL("rank " << r << ": word " << i << " is " << recv[i]);
      }
    }
    bs[r]->barrier();
  });
}

}  // namespace

TEST_CASE("IB writes and signals reach the peer", "[ib]") { exchange(Transport::IB0, Transport::IB0); }

TEST_CASE("an IBn beyond the host's ports names what there is", "[ib]") {
  auto bs = test::makeInProcessBootstraps(1);
  Communicator c(bs[0], kHostDevice);
  std::vector<char> buf(64);
  CHECK_THROWS_WITH(c.registerMemory(buf.data(), 64, Transport::IB7),
                    Catch::Contains("InfiniBand: IB7 requested but this host has 4 HCA port(s) (IB0=mlx5_0:1, "
                                    "IB1=mlx5_1:1, IB2=mlx5_2:1, IB3=mlx5_3:1); use "
                                    "Communicator::nearestIbTransport(), or MSCCLPP_HCA_DEVICES to choose them"));
  std::string why;
  CHECK(c.nearestIbTransport(&why) != Transport::Unknown);
  CHECK_THAT(why, Catch::Contains(" of 4 port(s) as near"));
  // MSCCLPP_HCA_DEVICES chooses the ports, in its own order.
  test::ScopedEnv hcas("MSCCLPP_HCA_DEVICES", "=mlx5_3,mlx5_1");
  CHECK_THROWS_WITH(c.registerMemory(buf.data(), 64, Transport::IB2),
                    Catch::Contains("IB2 requested but this host has 2 HCA port(s) (IB0=mlx5_3:1, IB1=mlx5_1:1)"));
}

TEST_CASE("ranks on different HCAs connect to each other", "[ib][finding]") {
  // One end on IB0, the other on IB1, as automatic NIC choice gives ranks
  // of different GPUs: each side needs the peer's region on the peer's HCA.
  exchange(Transport::IB0, Transport::IB1);
}

TEST_CASE("an HCA with 32 inline bytes carries signals", "[ib][finding]") { exchange(Transport::IB2, Transport::IB2); }

TEST_CASE("writes beyond the port's max message size are split", "[ib][finding]") {
  exchange(Transport::IB3, Transport::IB3, 128 * 1024);  // 1 MiB over 64 KiB messages
}

TEST_CASE("a failed IB connection fails every later call at once", "[ib][finding]") {
  // Rank 1 drops its end (its queue pair is destroyed): rank 0's write
  // exhausts its retries, and every later call fails with that error
  // at once instead of waiting for completions that never come.
  auto bs = test::makeInProcessBootstraps(2);
  test::runRanks(2, [&](int r) {
    Communicator c(bs[r], kHostDevice);
    std::vector<uint64_t> buf(1024, 7);
    RegisteredMemory mem = c.registerMemory(buf.data(), buf.size() * 8, Transport::IB0);
    auto conn = c.connect(1 - r, 0, Transport::IB0);
    c.sendMemory(mem, 1 - r, 0);
    RegisteredMemory peer = c.recvMemory(1 - r, 0).get();
    std::shared_ptr<Connection> cn = conn.get();
    if (r == 1) {
      cn.reset();
      conn = {};  // the future held the last copy
      bs[r]->barrier();
      bs[r]->barrier();
      return;
    }
    bs[r]->barrier();
    std::string first;
    try {
      cn->write(peer, 0, mem, 0, 4096);
      cn->flush();
    } catch (const Error& e) {
      first = e.what();
      CHECK(e.code() == ErrorCode::RemoteError);
    }
    CHECK_THAT(first, Catch::StartsWith("rank 0 -> rank 1 over IB0: flush: ") &&
                          Catch::Contains("transport retry counter exceeded"));
    auto t = std::chrono::steady_clock::now();
    std::string second = test::errorOf([&] { cn->flush(); });
    std::string third = test::errorOf([&] { cn->write(peer, 0, mem, 0, 8); });
    const double took = since(t);
    CHECK(took < 0.5);
    CHECK_THAT(second, Catch::Contains("transport retry counter exceeded"));
    CHECK_THAT(third, Catch::Contains("transport retry counter exceeded"));
    bs[r]->barrier();
  });
}

TEST_CASE("a signal posted as its connection closes arrives", "[ib][finding]") {
  // Rank 0 writes, signals and drops the connection without a flush, as a
  // process that exits after a plan's last signal: the queue pair dies with
  // the connection, so what the HCA had not sent yet would be lost.
  for (int round = 0; round < 20; ++round) {
    auto bs = test::makeInProcessBootstraps(2);
    test::runRanks(2, [&](int r) {
      Communicator c(bs[r], kHostDevice);
      std::vector<uint64_t> buf(513, 0);
      RegisteredMemory mem = c.registerMemory(buf.data(), buf.size() * 8, Transport::IB0);
      auto conn = c.connect(1 - r, 0, Transport::IB0);
      c.sendMemory(mem, 1 - r, 0);
      RegisteredMemory peer = c.recvMemory(1 - r, 0).get();
      std::shared_ptr<Connection> cn = conn.get();
      conn = {};
      bs[r]->barrier();
      if (r == 0) {
        for (size_t i = 0; i < 512; ++i) buf[i] = i + 1;
        uint64_t value = 0;
        cn->write(peer, 0, mem, 0, 512 * 8);
        cn->updateAndSync(peer, 512 * 8, &value, 1);
        cn.reset();
      } else {
        auto t = std::chrono::steady_clock::now();
        while (__atomic_load_n(&buf[512], __ATOMIC_ACQUIRE) != 1 && since(t) < 5) {
        }
        CHECK(buf[512] == 1);
        CHECK(buf[511] == 512);
      }
      bs[r]->barrier();
    });
  }
}
