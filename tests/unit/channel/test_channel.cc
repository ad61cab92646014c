// Semaphores and channels built on real connections, with their device handles
// driven by host threads (the CPU backend's stand-in for GPU threads).
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "../../support/scoped_env.hpp"
#include "../bootstrap/rank_threads.hpp"
#include "comm/communicator_impl.hpp"
#include "comm/counter_pool.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/semaphore.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

namespace {

// timeout: the TCP bootstraps' (and so the communicators') own timeout; 0: none.
std::vector<std::shared_ptr<Communicator>> makeComms(int n, bool tcp, double timeout = 0) {
  auto bs = tcp ? test::makeTcpBootstraps(n, timeout) : test::makeInProcessBootstraps(n);
  std::vector<std::shared_ptr<Communicator>> comms(n);
  runRanks(n, [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  return comms;
}

}  // namespace

TEST_CASE("the counter pool gives zeroed counters, one per line, reused", "[channel]") {
  auto pool = std::make_shared<comm::CounterPool>(-1);
  std::set<uintptr_t> seen;
  std::vector<std::shared_ptr<uint64_t>> held;
  for (int i = 0; i < 100; ++i) {  // more than one 4 KiB block
    held.push_back(pool->allocate());
    CHECK(*held.back() == 0);
    CHECK(reinterpret_cast<uintptr_t>(held.back().get()) % 64 == 0);
    CHECK(seen.insert(reinterpret_cast<uintptr_t>(held.back().get())).second);
    CHECK(isSharedHost(held.back().get(), 8));
  }
  uint64_t* first = held[0].get();
  *first = 42;
  held[0].reset();
  auto again = pool->allocate();
  CHECK(again.get() == first);  // reused, and zeroed again
  CHECK(*again == 0);
}

TEST_CASE("memory channels: put, signal, wait and packets between ranks", "[channel]") {
  const int n = 3;
  auto comms = makeComms(n, false);
  const size_t words = 4096;  // [0, 1024) data out, [1024, 2048) data in, [2048, ...) packets in
  std::vector<std::shared_ptr<uint64_t>> bufs;
  for (int r = 0; r < n; ++r) bufs.push_back(allocSharedHost<uint64_t>(words));
  runRanks(n, [&](int r) {
    Communicator& c = *comms[r];
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    auto toNext = c.connect(next, 0, Transport::HostShm);
    auto toPrev = c.connect(prev, 0, Transport::HostShm);
    RegisteredMemory mine = c.registerMemory(bufs[r].get(), words * 8, Transport::HostShm);
    c.sendMemory(mine, next, 0);
    c.sendMemory(mine, prev, 0);
    RegisteredMemory nextMem = c.recvMemory(next, 0).get();
    RegisteredMemory prevMem = c.recvMemory(prev, 0).get();
    auto nextConn = toNext.get();
    auto prevConn = toPrev.get();
    // Pairwise construction in one global order (by the lower rank of each pair) avoids wait cycles.
    std::shared_ptr<MemoryDevice2DeviceSemaphore> semNext, semPrev;
    if (r < next) {
      semNext = std::make_shared<MemoryDevice2DeviceSemaphore>(c, nextConn);
      semPrev = std::make_shared<MemoryDevice2DeviceSemaphore>(c, prevConn);
    } else {
      semPrev = std::make_shared<MemoryDevice2DeviceSemaphore>(c, prevConn);
      semNext = std::make_shared<MemoryDevice2DeviceSemaphore>(c, nextConn);
    }
    char* base = reinterpret_cast<char*>(bufs[r].get());
    MemoryChannel toNextCh(semNext, nextMem, base, base + 2048 * 8);
    MemoryChannel fromPrevCh(semPrev, prevMem, base, base + 2048 * 8);
    MemoryChannelDeviceHandle out = toNextCh.deviceHandle();
    MemoryChannelDeviceHandle in = fromPrevCh.deviceHandle();
    for (int i = 0; i < 1024; ++i) bufs[r].get()[i] = 100000 * r + i;
    // Two "threads" of a block share the copy, then one signals.
    out.put(1024 * 8, 0, 1024 * 8, 0, 2);
    out.put(1024 * 8, 0, 1024 * 8, 1, 2);
    out.signal();
    in.wait();
    for (int i = 0; i < 1024; ++i) REQUIRE(bufs[r].get()[1024 + i] == uint64_t(100000 * prev + i));
    // Packets: data and flag travel together, no signal needed.
    out.putPackets(2048 * 8, 0, 512, 0, 1, /*flag=*/7);
    std::vector<uint64_t> got(64, 0);
    MemoryChannelDeviceHandle local = in;
    local.src_ = got.data();
    local.getPackets(0, 0, 512, 0, 1, /*flag=*/7);
    for (int i = 0; i < 64; ++i) REQUIRE(got[i] == uint64_t(100000 * prev + i));
    // A wait with a short deadline times out cleanly when no signal comes.
    CHECK(in.waitFor(20000000ull) == SpinStatus::Timeout);
    c.bootstrap()->barrier();
  });
}

TEST_CASE("host-to-host semaphores signal across TCP", "[channel]") {
  auto comms = makeComms(2, true);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    auto conn = c.connect(1 - r, 2, Transport::Tcp).get();
    Host2HostSemaphore sem(c, conn);
    CHECK_FALSE(sem.poll());
    c.bootstrap()->barrier();  // nobody signals before both polled
    for (int i = 0; i < 10; ++i) {
      sem.signal();
      sem.wait(10);
    }
    CHECK_THROWS_WITH(sem.wait(0.05), Catch::EndsWith("wait for signal #11 did not complete within 0.05 s "
                                                      "(the timeout argument of wait())"));
  });
}

TEST_CASE("semaphores check the connection and the peer's kind", "[channel]") {
  auto comms = makeComms(2, true);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    auto tcp = c.connect(1 - r, 0, Transport::Tcp).get();
    CHECK_THROWS_WITH(MemoryDevice2DeviceSemaphore(c, tcp),
                      "MemoryDevice2DeviceSemaphore rank " + std::to_string(r) + " -> rank " + std::to_string(1 - r) +
                          " over TCP: a memory-channel semaphore needs a SHM or IPC connection (the peer writes our "
                          "counter through a mapping)");
    auto shm = c.connect(1 - r, 1, Transport::HostShm).get();
    // Evaluated outside the assertion: the constructors wait for each other.
    std::string err = test::errorOf([&] {
      if (r == 0) {
        Host2DeviceSemaphore s(c, shm);
      } else {
        MemoryDevice2DeviceSemaphore s(c, shm);
      }
    });
    if (r == 0) {
      CHECK(err ==
            "Host2DeviceSemaphore rank 0 -> rank 1 over SHM: rank 1 built a MemoryDevice2DeviceSemaphore "
            "on this connection: both sides must build the same kind, in the same order");
    } else {
      CHECK(err ==
            "MemoryDevice2DeviceSemaphore rank 1 -> rank 0 over SHM: rank 0 built a Host2DeviceSemaphore "
            "on this connection: both sides must build the same kind, in the same order");
    }
    auto other = makeComms(1, false);
    CHECK_THROWS_WITH(Host2DeviceSemaphore(*other[0], shm), Catch::EndsWith("was not created by this communicator"));
  });
}

TEST_CASE("switch channels bind every member's buffer (CPU emulation)", "[channel]") {
  const int n = 3;
  auto comms = makeComms(n, false);
  std::vector<std::shared_ptr<float>> bufs;
  for (int r = 0; r < n; ++r) bufs.push_back(allocSharedHost<float>(256));
  runRanks(n, [&](int r) {
    for (int i = 0; i < 256; ++i) bufs[r].get()[i] = float(r + 1) * i;
    SwitchChannel sw = SwitchChannel::create(*comms[r], {2, 0, 1}, bufs[r].get(), 256 * sizeof(float), 9);
    CHECK_FALSE(sw.hasMulticast());
    SwitchChannelDeviceHandle h = sw.deviceHandle();
    CHECK(h.nMembers == 3);
    CHECK(h.myIndex == uint32_t(r == 2 ? 0 : r + 1));
    CHECK(h.mcPtr == nullptr);
    CHECK(h.memberPtrs[h.myIndex] == bufs[r].get());
    comms[r]->bootstrap()->barrier();
    // Every member reduces its own slice across all members: 1*i + 2*i + 3*i = 6*i.
    for (int i = r; i < 256; i += n) {
      float sum = h.reduce<float>(i);
      REQUIRE(sum == 6.0f * i);
    }
    comms[r]->bootstrap()->barrier();
    for (int i = r; i < 256; i += n) h.broadcast<float>(i, -1.0f * i);
    comms[r]->bootstrap()->barrier();
    for (int i = 0; i < 256; ++i) REQUIRE(bufs[r].get()[i] == -1.0f * i);
    comms[r]->bootstrap()->barrier();
  });
  CHECK_THROWS_WITH(SwitchChannel::create(*comms[0], {1, 2}, bufs[0].get(), 64, 0),
                    "SwitchChannel rank 0/3 (tag 0): this rank is not in the group");
  CHECK_THROWS_WITH(SwitchChannel::create(*comms[0], {0, 0}, bufs[0].get(), 64, 0),
                    "SwitchChannel rank 0/3 (tag 0): rank 0 is listed twice");
}

TEST_CASE("the communicator's timeout bounds channel waits, named", "[channel]") {
  test::ScopedEnv unset("MSCCLPP_TIMEOUT_S", nullptr);  // the suite sets one; the communicator's must apply alone
  auto comms = makeComms(2, true, 0.3);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    auto conn = c.connect(1 - r, 3, Transport::Tcp).get();
    Host2HostSemaphore host(c, conn);
    MemoryDevice2DeviceSemaphore device(c, c.connect(1 - r, 4, Transport::HostShm).get());
    CHECK(device.deviceHandle().timeoutNs == 300000000ull);  // the handle's wait() deadline
    c.bootstrap()->barrier();
    // Nobody signals: the default wait ends at the communicator's timeout, naming it.
    std::string error = test::errorOf([&] { host.wait(); });
    CHECK_THAT(error, Catch::EndsWith("did not complete within 0.3 s (the communicator's timeout)"));
    c.bootstrap()->barrier();
  });
  {
    test::ScopedEnv shorter("MSCCLPP_TIMEOUT_S", "0.2");  // the earlier of the two applies, named as such
    CHECK(std::string(comms[0]->timeoutSetting()) == "MSCCLPP_TIMEOUT_S");
    runRanks(2, [&](int r) {
      Communicator& c = *comms[r];
      Host2HostSemaphore host(c, c.connect(1 - r, 5, Transport::Tcp).get());
      c.bootstrap()->barrier();
      std::string error = test::errorOf([&] { host.wait(); });
      CHECK_THAT(error, Catch::EndsWith("did not complete within 0.2 s (MSCCLPP_TIMEOUT_S)"));
      c.bootstrap()->barrier();
    });
  }
  CHECK(std::string(comms[0]->timeoutSetting()) == "the communicator's timeout");
}

TEST_CASE("timeoutOf: connections and NVLS keep the communicator's", "[channel]") {
  test::ScopedEnv unset("MSCCLPP_TIMEOUT_S", nullptr);
  auto comms = makeComms(1, true, 0.3);
  TimeoutSetting t = timeoutOf(*comms[0]);
  CHECK(t.seconds == 0.3);
  CHECK(std::string(t.source) == "the communicator's timeout");
  CHECK(test::errorOf([&] { waitUntil([] { return false; }, t.start(), "the handle"); }) ==
        "the handle did not complete within 0.3 s (the communicator's timeout)");
  {
    test::ScopedEnv shorter("MSCCLPP_TIMEOUT_S", "0.2");  // the earlier one, read when the object is made
    t = timeoutOf(*comms[0]);
    CHECK(t.seconds == 0.2);
    CHECK(std::string(t.source) == "MSCCLPP_TIMEOUT_S");
  }
  auto none = makeComms(1, false);  // an in-process bootstrap has no timeout of its own
  t = timeoutOf(*none[0]);
  CHECK(t.seconds == 0);
  CHECK(std::string(t.source) == "MSCCLPP_TIMEOUT_S");  // a setting for messages, though nothing times out
}
