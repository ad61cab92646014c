// The public device headers on host threads: semaphores, memory channels, the
// grid barrier, switch-channel emulation and the bounded spin.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "mscclpp/device_syncer.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/switch_channel_device.hpp"

using namespace mscclpp;

namespace {

constexpr uint64_t kSecond = 1000000000ull;

// Two memory channels pointing at each other, each with its own counters and buffers.
struct ChannelPair {
  uint64_t inbound[2] = {0, 0};
  uint64_t expected[2] = {0, 0};
  std::vector<float> buf[2] = {std::vector<float>(256, 0.f), std::vector<float>(256, 0.f)};
  std::vector<LL16Packet> pkts[2] = {std::vector<LL16Packet>(256), std::vector<LL16Packet>(256)};
  MemoryChannelDeviceHandle ch[2];
  ChannelPair() {
    for (int s = 0; s < 2; ++s) {
      int p = 1 - s;
      ch[s].semaphore_ = {&inbound[s], &inbound[p], &expected[s], kSecond};
      ch[s].dst_ = buf[p].data();
      ch[s].src_ = buf[s].data();
      ch[s].packetBuffer_ = pkts[s].data();
    }
  }
};

}  // namespace

TEST_CASE("spinUntil reports Ok, Timeout and Aborted", "[device][spin]") {
  int calls = 0;
  REQUIRE(spinUntil([&] { return ++calls == 5; }, deadlineAfter(kSecond), nullptr) == SpinStatus::Ok);
  REQUIRE(calls == 5);
  auto t0 = clockNs();
  REQUIRE(spinUntil([] { return false; }, deadlineAfter(30000000), nullptr) == SpinStatus::Timeout);
  REQUIRE(clockNs() - t0 >= 30000000);
  uint32_t abortFlag = 1;
  REQUIRE(spinUntil([] { return false; }, kNoDeadline, &abortFlag) == SpinStatus::Aborted);
  REQUIRE(std::string(spinStatusName(SpinStatus::Timeout)) == "timeout");
}

TEST_CASE("memory channel: put, signal and wait between two threads", "[device][memory_channel]") {
  ChannelPair cp;
  for (int i = 0; i < 256; ++i) cp.buf[0][i] = static_cast<float>(i);
  int peerErrors = 0;  // Catch2 assertions are not thread-safe: the peer counts, the test checks
  std::thread peer([&] {
    for (int round = 0; round < 100; ++round) {
      peerErrors += cp.ch[1].wait(deadlineAfter(10 * kSecond), nullptr) != SpinStatus::Ok;
      peerErrors += cp.buf[1][round] != static_cast<float>(round) + round;
      cp.ch[1].signal();
    }
  });
  for (int round = 0; round < 100; ++round) {
    cp.buf[0][round] += round;
    cp.ch[0].put(round * 4, round * 4, 4, 0, 1);
    cp.ch[0].signal();
    cp.ch[0].wait();  // convenience form
  }
  peer.join();
  REQUIRE(peerErrors == 0);
  REQUIRE(cp.inbound[0] == 100);
  REQUIRE(cp.inbound[1] == 100);
  REQUIRE(cp.expected[0] == 100);
  // get reads the peer's buffer into ours; read/write touch the peer's elements.
  cp.buf[1][7] = 3.5f;
  cp.ch[0].get(28, 0, 4, 0, 1);
  REQUIRE(cp.buf[0][0] == 3.5f);
  cp.ch[0].write<float>(9, 1.25f);
  REQUIRE(cp.buf[1][9] == 1.25f);
  REQUIRE(cp.ch[0].read<float>(9) == 1.25f);
}

TEST_CASE("semaphore: poll takes one signal; timeouts name the counters", "[device][semaphore]") {
  ChannelPair cp;
  REQUIRE_FALSE(cp.ch[1].poll());
  cp.ch[0].relaxedSignal();
  cp.ch[0].signal();
  REQUIRE(cp.ch[1].poll());
  REQUIRE(cp.ch[1].poll());
  REQUIRE_FALSE(cp.ch[1].poll());
  uint64_t expected = 0, observed = 0;
  REQUIRE(cp.ch[1].semaphore_.wait(deadlineAfter(10000000), nullptr, &expected, &observed) == SpinStatus::Timeout);
  REQUIRE(expected == 3);
  REQUIRE(observed == 2);
  cp.ch[1].semaphore_.timeoutNs = 10000000;
  REQUIRE_THROWS_AS(cp.ch[1].wait(), TimeoutError);
}

TEST_CASE("memory channel: putPackets lands in the peer's packet buffer", "[device][memory_channel]") {
  ChannelPair cp;
  for (int i = 0; i < 64; ++i) cp.buf[0][i] = i * 0.5f;
  // Our src_ -> the peer's dst_ packets: point the sender's dst_ at the receiver's packet buffer.
  cp.ch[0].dst_ = cp.pkts[1].data();
  std::thread receiver([&] { cp.ch[1].getPackets(0, 0, 256, 0, 1, 6); });
  cp.ch[0].putPackets(0, 0, 256, 0, 1, 6);
  receiver.join();
  for (int i = 0; i < 64; ++i) REQUIRE(cp.buf[1][i] == i * 0.5f);
}

TEST_CASE("DeviceSyncer: a grid barrier of host threads, many rounds", "[device][syncer]") {
  DeviceSyncer syncer{0, 0};
  constexpr int kBlocks = 6, kRounds = 200;
  std::vector<int> slots(kBlocks, 0);
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int b = 0; b < kBlocks; ++b) {
    threads.emplace_back([&, b] {
      for (int r = 0; r < kRounds; ++r) {
        slots[b] = r;
        syncer.sync(kBlocks, 10 * kSecond);
        for (int o = 0; o < kBlocks; ++o) errors += slots[o] != r;  // everyone wrote round r
        syncer.sync(kBlocks, 10 * kSecond);
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(errors == 0);
  REQUIRE(syncer.generation == 2 * kRounds);
  DeviceSyncer lonely{0, 0};
  REQUIRE(lonely.sync(2, deadlineAfter(10000000), nullptr) == SpinStatus::Timeout);
  DeviceSyncer alone{0, 0};
  REQUIRE_THROWS_AS(alone.sync(2, 10000000), TimeoutError);
}

TEST_CASE("switch channel emulation: reduce and broadcast to members", "[device][switch]") {
  std::vector<float> m[3] = {std::vector<float>(32), std::vector<float>(32), std::vector<float>(32)};
  void* members[3] = {m[0].data(), m[1].data(), m[2].data()};
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 32; ++i) m[r][i] = static_cast<float>(r * 100 + i);
  SwitchChannelDeviceHandle h{m[1].data(), nullptr, 128, members, 3, 1};
  REQUIRE(h.reduce<float>(5) == 0 + 100 + 200 + 15.f);
  REQUIRE(h.reduceMembers<float>(4 * 6, [](float a, float b) { return a > b ? a : b; }) == 206.f);
  h.broadcast<float>(2, -1.f);
  for (int r = 0; r < 3; ++r) REQUIRE(m[r][2] == -1.f);
  float src[4] = {9, 8, 7, 6};
  h.broadcastBytes(16 * 4, src, 16, 0, 1);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 4; ++i) REQUIRE(m[r][16 + i] == src[i]);
}
