// Registered memory must outlive its use by peers (docs/cpp-api.md).
// Over TCP the receiver rejects a write into deregistered memory. It then
// refuses every later update on that connection, so a signal never
// announces data that did not arrive.
#include <catch2/catch.hpp>

#include "api_test_util.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

TEST_CASE("TCP refuses a signal after a write to deregistered memory", "[api][memory]") {
  // Whether the update leaves before the peer's error returns depends on
  // scheduling. It usually does with 8 MiB writes, more than socket buffers
  // hold, and eight connections make a wrongly applied update all but certain
  // to show. Every counter must stay 0.
  const int attempts = 8;
  const size_t words = size_t(1) << 20;
  auto comms = test::makeHostComms(2);
  auto data = allocSharedHost<uint64_t>(words), counters = allocSharedHost<uint64_t>(attempts);
  std::vector<std::string> flushErrors(attempts);
  std::vector<uint64_t> countersSeen(attempts, 99);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    // Rank 1's counters stay registered throughout.
    RegisteredMemory kept =
        r == 1 ? c.registerMemory(counters.get(), attempts * 8, Transport::Tcp) : RegisteredMemory();
    if (r == 1) c.sendMemory(kept, 0, 100);
    RegisteredMemory flag = r == 0 ? c.recvMemory(1, 100).get() : RegisteredMemory();
    std::vector<uint64_t> src(r == 0 ? words : 0, 7);
    RegisteredMemory local = r == 0 ? c.registerMemory(src.data(), words * 8, Transport::Tcp) : RegisteredMemory();
    for (int a = 0; a < attempts; ++a) {
      auto conn = c.connect(1 - r, a, Transport::Tcp).get();
      if (r == 1) {
        {
          RegisteredMemory dropped = c.registerMemory(data.get(), words * 8, Transport::Tcp);
          c.sendMemory(dropped, 0, a);
        }                          // the last copy is gone: the buffer is deregistered (a new key each attempt)
        c.bootstrap()->barrier();  // rank 0 writes, signals and flushes
        c.bootstrap()->barrier();
        countersSeen[a] = __atomic_load_n(counters.get() + a, __ATOMIC_ACQUIRE);
        continue;
      }
      RegisteredMemory dst = c.recvMemory(1, a).get();
      c.bootstrap()->barrier();
      uint64_t outbound = 0;
      flushErrors[a] = test::errorOf([&] {
        conn->write(dst, 0, local, 0, words * 8);
        conn->updateAndSync(flag, a * 8, &outbound, 1);  // may fail already: the peer's error came back
        conn->flush();
      });
      c.bootstrap()->barrier();
    }
  });
  for (int a = 0; a < attempts; ++a) {
    INFO("attempt " << a);
    CHECK(countersSeen[a] == 0);
    CHECK_THAT(flushErrors[a], Catch::StartsWith("rank 0 -> rank 1 over TCP: ") &&
                                   Catch::Contains("rank 1 TCP transport: write #1 of 8388608 bytes names unknown "
                                                   "memory key"));
  }
}
