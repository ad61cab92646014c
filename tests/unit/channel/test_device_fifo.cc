// The proxy FIFO protocol (fifo_device.hpp) and the port channel handle on host threads.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "mscclpp/errors.hpp"
#include "mscclpp/port_channel_device.hpp"

using namespace mscclpp;

namespace {

constexpr uint64_t kSecond = 1000000000ull;

struct Ring {
  std::vector<ProxyTrigger> slots;
  uint64_t head = 0, tail = 0;
  explicit Ring(uint32_t n) : slots(n, ProxyTrigger{0, 0}) {}
  FifoDeviceHandle handle(uint64_t timeoutNs = kSecond) {
    return FifoDeviceHandle{slots.data(), &head, &tail, static_cast<uint32_t>(slots.size()), 0, timeoutNs};
  }
};

}  // namespace

TEST_CASE("trigger encoding round-trips MSCCL++'s layout", "[device][fifo]") {
  ProxyTrigger t{0, 0};
  REQUIRE(ProxyTrigger::encode(TriggerPut | TriggerSignal, 511, 0xfffffff0ull, 3, 17, 4096, 1023, &t));
  // MSCCL++'s bit positions: size | srcOffset in fst;
  // dstOffset | src id | dst id | type | channel | units16 in snd.
  REQUIRE((t.fst & 0xffffffffull) == 4096);
  REQUIRE((t.fst >> 32) == 17);
  REQUIRE((t.snd & 0xffffffffull) == 0xfffffff0ull);
  REQUIRE(((t.snd >> 32) & 511) == 3);
  REQUIRE(((t.snd >> 41) & 511) == 511);
  REQUIRE(((t.snd >> 50) & 7) == 3);
  REQUIRE(((t.snd >> 53) & 1023) == 1023);
  REQUIRE((t.snd >> 63) == 0);
  TriggerFields f = t.decode();
  REQUIRE((f.type == 3 && f.dstMemoryId == 511 && f.srcMemoryId == 3 && f.channelId == 1023));
  REQUIRE((f.size == 4096 && f.srcOffset == 17 && f.dstOffset == 0xfffffff0ull));
  // Beyond 4 GiB: 16-byte units.
  REQUIRE(ProxyTrigger::encode(TriggerPut, 1, 40ull << 30, 2, 8ull << 30, 1ull << 33, 0, &t));
  REQUIRE((t.snd >> 63) == 1);
  f = t.decode();
  REQUIRE((f.dstOffset == (40ull << 30) && f.srcOffset == (8ull << 30) && f.size == (1ull << 33)));
  // Not representable: an unaligned offset beyond 4 GiB, ids too large, no type.
  REQUIRE_FALSE(ProxyTrigger::encode(TriggerPut, 1, (5ull << 30) + 4, 2, 0, 16, 0, &t));
  REQUIRE_FALSE(ProxyTrigger::encode(TriggerPut, 512, 0, 2, 0, 16, 0, &t));
  REQUIRE_FALSE(ProxyTrigger::encode(TriggerPut, 1, 0, 2, 0, 16, 1024, &t));
  REQUIRE_FALSE(ProxyTrigger::encode(0, 1, 0, 2, 0, 16, 0, &t));
}

TEST_CASE("FIFO: a push reads the tail replica before the real tail", "[device][fifo]") {
  Ring ring(4);
  uint64_t replica = 0;
  FifoDeviceHandle h = ring.handle();
  h.tailReplica = &replica;
  ProxyTrigger t{0, 0};
  REQUIRE(ProxyTrigger::encode(TriggerSignal, 0, 0, 0, 0, 0, 0, &t));
  // Room by the replica: the consumer's tail is not consulted (it claims a full ring here).
  ring.tail = 0;
  ring.head = 2;
  replica = 1;
  uint64_t index = 0;
  REQUIRE(h.push(t, deadlineAfter(kSecond), nullptr, &index) == SpinStatus::Ok);
  REQUIRE(index == 2);
  REQUIRE(replica == 1);
  // Full by the replica: the real tail is read and the replica raised to it.
  ring.head = 5;
  ring.tail = 3;
  REQUIRE(h.push(t, deadlineAfter(kSecond), nullptr, &index) == SpinStatus::Ok);
  REQUIRE(index == 5);
  REQUIRE(replica == 3);
  // Full by both: the push waits, and gives up at its deadline.
  ring.head = 7;
  REQUIRE(h.push(t, deadlineAfter(kSecond / 100), nullptr, &index) == SpinStatus::Timeout);
  REQUIRE(replica == 3);
}

TEST_CASE("FIFO: a consumer gets every producer's requests in order", "[device][fifo]") {
  Ring ring(8);  // much smaller than the request count: producers wait for free slots
  FifoDeviceHandle h = ring.handle();
  uint64_t replica = 0;  // as Fifo builds them: the producers share a tail replica
  h.tailReplica = &replica;
  constexpr int kProducers = 3, kPerProducer = 2000;
  std::vector<std::vector<uint64_t>> seen(kProducers);
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    FifoConsumer c(ring.slots.data(), &ring.tail, 8);
    int got = 0;
    ProxyTrigger t{0, 0};
    while (got < kProducers * kPerProducer) {
      if (!c.poll(&t)) {
        std::this_thread::yield();
        continue;
      }
      TriggerFields f = t.decode();
      seen[f.channelId].push_back(f.size);
      c.pop();
      ++got;
    }
    done = true;
  });
  // Catch2 assertions are not thread-safe: threads count failures, the test checks them after join.
  std::atomic<int> encodeFailures{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        ProxyTrigger t{0, 0};
        encodeFailures +=
            !ProxyTrigger::encode(TriggerPut, 0, 0, 0, 0, static_cast<uint64_t>(i), static_cast<uint32_t>(p), &t);
        uint64_t idx = h.push(t);
        if (i % 500 == 0) h.sync(idx);  // waits until the consumer completed it
      }
    });
  }
  for (auto& t : producers) t.join();
  consumer.join();
  REQUIRE(encodeFailures == 0);
  REQUIRE(done);
  REQUIRE(ring.head == kProducers * kPerProducer);
  REQUIRE(ring.tail == kProducers * kPerProducer);
  for (int p = 0; p < kProducers; ++p) {
    REQUIRE(seen[p].size() == kPerProducer);
    for (int i = 0; i < kPerProducer; ++i) REQUIRE(seen[p][i] == static_cast<uint64_t>(i));  // per-producer order
  }
}

TEST_CASE("FIFO: a full ring without a consumer times out", "[device][fifo]") {
  Ring ring(2);
  FifoDeviceHandle h = ring.handle(20000000);
  ProxyTrigger t{0, 0};
  REQUIRE(ProxyTrigger::encode(TriggerSignal, 0, 0, 0, 0, 0, 0, &t));
  h.push(t);
  h.push(t);
  uint64_t idx = 0;
  REQUIRE(h.push(t, deadlineAfter(20000000), nullptr, &idx) == SpinStatus::Timeout);
  REQUIRE(idx == 2);
  REQUIRE(h.sync(0, deadlineAfter(10000000), nullptr) == SpinStatus::Timeout);
  REQUIRE_THROWS_AS(h.sync(0), TimeoutError);
}

TEST_CASE("port channel: put, signal, flush and wait through a proxy", "[device][port_channel]") {
  Ring ring(16);
  std::vector<char> mem[2] = {std::vector<char>(4096, 1), std::vector<char>(4096, 0)};
  uint64_t inbound = 0, expected = 0;
  PortChannelDeviceHandle ch{};
  ch.channelId_ = 5;
  ch.dst_ = 1;
  ch.src_ = 0;
  ch.fifo_ = ring.handle();
  ch.semaphore_ = {&inbound, &expected, kSecond};
  std::atomic<bool> stop{false};
  std::vector<TriggerFields> requests;
  std::thread proxy([&] {
    FifoConsumer c(ring.slots.data(), &ring.tail, 16);
    ProxyTrigger t{0, 0};
    while (!stop) {
      if (!c.poll(&t)) {
        std::this_thread::yield();
        continue;
      }
      TriggerFields f = t.decode();
      requests.push_back(f);
      if ((f.type & TriggerPut) && f.size <= 4096)
        std::memcpy(mem[f.dstMemoryId].data() + f.dstOffset, mem[f.srcMemoryId].data() + f.srcOffset, f.size);
      if (f.type & TriggerSignal) atomicFetchAdd<uint64_t>(&inbound, 1, memoryOrderRelease);
      c.pop();
    }
  });
  for (int i = 0; i < 4096; ++i) mem[0][i] = static_cast<char>(i % 100);
  ch.put(0, 1024);
  ch.putWithSignal(1024, 1024, 1024);
  ch.wait();  // our own proxy signals our inbound counter here (loopback)
  ch.putWithSignalAndFlush(2048, 2048, 2048);
  ch.flush();
  ch.wait();
  REQUIRE(std::memcmp(mem[0].data(), mem[1].data(), 4096) == 0);
  // A 9 GiB request splits into 16-byte-aligned pieces below 4 GiB; only the last signals.
  REQUIRE(ch.push(TriggerPut | TriggerSignal, 1, 0, 0, 0, 9ull << 30, deadlineAfter(kSecond), nullptr) ==
          SpinStatus::Ok);
  ch.flush();
  stop = true;
  proxy.join();
  // put, pws, pwsf, flush, three pieces, flush.
  REQUIRE(requests.size() == 8);
  uint64_t total = 0;
  for (size_t i = 4; i < 7; ++i) {
    total += requests[i].size;
    REQUIRE(requests[i].size % 16 == 0);
    REQUIRE(requests[i].type == (i == 6 ? (TriggerPut | TriggerSignal) : TriggerPut));
  }
  REQUIRE(total == (9ull << 30));
  REQUIRE(requests[5].dstOffset == requests[4].size);
  REQUIRE(requests[3].type == TriggerFlush);
  REQUIRE(ch.put(1, (5ull << 30) + 4, 0, 0, 16, deadlineAfter(kSecond), nullptr) == SpinStatus::Invalid);
}
