// Fixtures of the public-API tests: two ranks (threads of this process) with
// memory channels over shared memory and port channels through a proxy, built
// only with public headers, as a user program would.
#ifndef MSCCLPP_TESTS_UNIT_API_API_TEST_UTIL_HPP_
#define MSCCLPP_TESTS_UNIT_API_API_TEST_UTIL_HPP_

#include <memory>
#include <vector>

#include "../bootstrap/rank_threads.hpp"
#include "mscclpp/mscclpp.hpp"

namespace mscclpp::test {

constexpr uint64_t kMs = 1000000ull;  // nanoseconds

inline std::vector<std::shared_ptr<Communicator>> makeHostComms(int n) {
  auto bs = makeInProcessBootstraps(n);
  std::vector<std::shared_ptr<Communicator>> comms(n);
  runRanks(n, [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  return comms;
}

// Two ranks; rank r's memory channel writes into rank (1 - r)'s buffer. Each
// buffer is `words` 64-bit words of shared host memory; the channel's packet
// buffer is the upper half of our own.
struct MemoryChannelPair {
  static constexpr size_t kWords = 4096;
  static constexpr size_t kPacketWordOffset = kWords / 2;
  std::vector<std::shared_ptr<Communicator>> comms;
  std::vector<std::shared_ptr<uint64_t>> bufs;
  std::vector<MemoryChannel> channels;

  uint64_t* buf(int r) const { return bufs[r].get(); }
  void* packetBuffer(int r) const { return bufs[r].get() + kPacketWordOffset; }
};

inline std::unique_ptr<MemoryChannelPair> makeMemoryChannelPair() {
  auto s = std::make_unique<MemoryChannelPair>();
  s->comms = makeHostComms(2);
  s->bufs = {allocSharedHost<uint64_t>(MemoryChannelPair::kWords),
             allocSharedHost<uint64_t>(MemoryChannelPair::kWords)};
  s->channels.resize(2);
  runRanks(2, [&](int r) {
    Communicator& c = *s->comms[r];
    auto conn = c.connect(1 - r, 0, Transport::HostShm);
    c.sendMemory(c.registerMemory(s->buf(r), MemoryChannelPair::kWords * 8, Transport::HostShm), 1 - r, 0);
    RegisteredMemory remote = c.recvMemory(1 - r, 0).get();
    auto sem = std::make_shared<SmDevice2DeviceSemaphore>(c, conn.get());
    s->channels[r] = SmChannel(sem, remote, s->buf(r), s->packetBuffer(r));
  });
  return s;
}

// Two ranks with a proxy each; rank r's port channel puts from its buffer into
// rank (1 - r)'s. The memory ids: 0 = the peer's buffer (default destination),
// 1 = ours (default source).
struct PortChannelPair {
  static constexpr size_t kWords = 4096;
  std::vector<std::shared_ptr<Communicator>> comms;
  std::vector<std::shared_ptr<uint64_t>> bufs;
  std::vector<std::unique_ptr<ProxyService>> proxies;
  std::vector<PortChannel> channels;

  uint64_t* buf(int r) const { return bufs[r].get(); }
};

inline std::unique_ptr<PortChannelPair> makePortChannelPair(Transport transport) {
  auto s = std::make_unique<PortChannelPair>();
  s->comms = makeHostComms(2);
  s->bufs = {allocSharedHost<uint64_t>(PortChannelPair::kWords), allocSharedHost<uint64_t>(PortChannelPair::kWords)};
  s->proxies.resize(2);
  s->channels.resize(2);
  runRanks(2, [&](int r) {
    Communicator& c = *s->comms[r];
    auto conn = c.connect(1 - r, 0, transport);
    RegisteredMemory mine = c.registerMemory(s->buf(r), PortChannelPair::kWords * 8, transport);
    c.sendMemory(mine, 1 - r, 0);
    RegisteredMemory theirs = c.recvMemory(1 - r, 0).get();
    s->proxies[r] = std::make_unique<ProxyService>();
    ProxyService& proxy = *s->proxies[r];
    SemaphoreId sem = proxy.buildAndAddSemaphore(c, conn.get());
    MemoryId dst = proxy.addMemory(theirs);
    MemoryId src = proxy.addMemory(mine);
    s->channels[r] = ProxyChannel(proxy.portChannel(sem, dst, src));
    proxy.startProxy();
  });
  return s;
}

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_UNIT_API_API_TEST_UTIL_HPP_
