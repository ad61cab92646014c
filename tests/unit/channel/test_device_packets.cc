// The public device headers compiled by g++ and run on host threads: packets and copies.
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "mscclpp/copy_device.hpp"
#include "mscclpp/packet_device.hpp"

using namespace mscclpp;

namespace {

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + 1) & 0xff);
  return v;
}

template <class Packet>
void roundTrip(size_t bytes, uint32_t nThreads, uint32_t flag) {
  auto src = pattern(bytes, 3);
  std::vector<Packet> pkts(packetCount<Packet>(bytes) + 1);
  std::memset(pkts.data(), 0, pkts.size() * sizeof(Packet));
  for (uint32_t t = 0; t < nThreads; ++t) putPackets<Packet>(pkts.data(), src.data(), bytes, t, nThreads, flag);
  std::vector<unsigned char> dst(bytes + 8, 0xEE);
  for (uint32_t t = 0; t < nThreads; ++t) {
    REQUIRE(getPackets<Packet>(dst.data(), pkts.data(), bytes, t, nThreads, flag, deadlineAfter(1000000000), nullptr) ==
            SpinStatus::Ok);
  }
  REQUIRE(std::memcmp(dst.data(), src.data(), bytes) == 0);
  for (size_t i = bytes; i < dst.size(); ++i) REQUIRE(dst[i] == 0xEE);  // tails write exactly their bytes
  // The packet after the last one was never written: flag 0 is not the flag.
  typename Packet::Payload v;
  REQUIRE_FALSE(pkts.back().readOnce(flag, &v));
}

}  // namespace

TEST_CASE("LL16 and LL8 packets carry any byte count, tails included", "[device][packets]") {
  for (size_t bytes : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 100, 1000}) {
    for (uint32_t threads : {1u, 3u}) {
      roundTrip<LL16Packet>(bytes, threads, 5);
      roundTrip<LL8Packet>(bytes, threads, 0xFFFFFFFFu);
    }
  }
  REQUIRE(packetCount<LL16Packet>(17) == 3);
  REQUIRE(packetCount<LL8Packet>(17) == 5);
}

TEST_CASE("an LL16 packet is valid only when both halves carry the flag", "[device][packets]") {
  LL16Packet p{};
  p.write(0x1122334455667788ull, 9);
  uint64_t v = 0;
  uint32_t observed = 0;
  REQUIRE(p.readOnce(9, &v, &observed));
  REQUIRE(v == 0x1122334455667788ull);
  // Corrupt the flag of the second half only: the packet must not be accepted.
  p.halves[1] = packHalf(0x11223344u, 7);
  REQUIRE_FALSE(p.readOnce(9, &v, &observed));
  REQUIRE(observed == 7);
  // A stale packet of an earlier launch is rejected too.
  p.write(1, 8);
  REQUIRE_FALSE(p.readOnce(9, &v, &observed));
  REQUIRE(observed == 8);
}

TEST_CASE("a packet wait ends in Timeout or Aborted, naming the packet", "[device][packets]") {
  std::vector<LL16Packet> pkts(4);
  std::memset(pkts.data(), 0, sizeof(LL16Packet) * pkts.size());
  char buf[64];
  for (int i = 0; i < 2; ++i) pkts[i].write(i, 3);
  pkts[2].write(77, 4);  // corrupted flag
  PacketWaitInfo info;
  auto t0 = clockNs();
  REQUIRE(getPackets<LL16Packet>(buf, pkts.data(), 32, 0, 1, 3, deadlineAfter(20000000), nullptr, &info) ==
          SpinStatus::Timeout);
  REQUIRE(clockNs() - t0 >= 20000000);
  REQUIRE(info.packetIndex == 2);
  REQUIRE(info.observedFlag == 4);
  uint32_t abortFlag = 1;
  REQUIRE(getPackets<LL16Packet>(buf, pkts.data(), 32, 0, 1, 3, kNoDeadline, &abortFlag, &info) == SpinStatus::Aborted);
}

TEST_CASE("packets cross threads: a reader waits for a writer", "[device][packets]") {
  std::vector<LL8Packet> pkts(1000);
  std::memset(pkts.data(), 0, sizeof(LL8Packet) * pkts.size());
  auto src = pattern(4000, 1);
  std::vector<unsigned char> dst(4000);
  SpinStatus st = SpinStatus::Invalid;
  std::thread reader([&] {
    st = getPackets<LL8Packet>(dst.data(), pkts.data(), 4000, 0, 1, 42, deadlineAfter(10000000000ull), nullptr);
  });
  putPackets<LL8Packet>(pkts.data(), src.data(), 4000, 0, 1, 42);
  reader.join();
  REQUIRE(st == SpinStatus::Ok);
  REQUIRE(dst == src);
}

TEST_CASE("copy handles every alignment, size and thread split", "[device][copy]") {
  auto src = pattern(300, 2);
  for (size_t srcOff = 0; srcOff < 17; srcOff += 3) {
    for (size_t dstOff = 0; dstOff < 17; dstOff += 5) {
      for (size_t bytes : {0, 1, 7, 15, 16, 17, 33, 64, 100, 250}) {
        for (uint32_t threads : {1u, 2u, 5u}) {
          std::vector<unsigned char> dst(300, 0);
          for (uint32_t t = 0; t < threads; ++t) copy(dst.data() + dstOff, src.data() + srcOff, bytes, t, threads);
          REQUIRE(std::memcmp(dst.data() + dstOff, src.data() + srcOff, bytes) == 0);
          for (size_t i = 0; i < dstOff; ++i) REQUIRE(dst[i] == 0);
          for (size_t i = dstOff + bytes; i < dst.size(); ++i) REQUIRE(dst[i] == 0);
        }
      }
    }
  }
}
