// Every method of the memory channel's device handle (SmChannelDeviceHandle),
// driven by host threads as the CPU backend drives it: copies at any
// offset/size/thread split, read/write, signal/wait with acquire/release,
// relaxed variants, poll, timeouts and aborts, LL packets.
#include <catch2/catch.hpp>
#include <cstring>

#include "api_test_util.hpp"

using namespace mscclpp;
using mscclpp::test::kMs;
using mscclpp::test::runRanks;

TEST_CASE("memory channel copies any byte range with any thread split", "[api][memory_channel]") {
  auto s = test::makeMemoryChannelPair();
  SmChannelDeviceHandle h0 = s->channels[0].deviceHandle();  // rank 0 -> rank 1's buffer
  unsigned char* src = reinterpret_cast<unsigned char*>(s->buf(0));
  unsigned char* dst = reinterpret_cast<unsigned char*>(s->buf(1));
  for (int i = 0; i < 4096; ++i) src[i] = static_cast<unsigned char>(i * 3 + 1);
  CHECK(h0.src_ == s->buf(0));
  CHECK(h0.packetBuffer_ == s->packetBuffer(0));
  // dst_ is this process's mapping of rank 1's shared memory (its own mapping
  // even when ranks are threads): a store through it lands in rank 1's buffer.
  static_cast<uint64_t*>(h0.dst_)[4095] = 0x5eed;
  CHECK(s->buf(1)[4095] == 0x5eed);
  s->buf(1)[4095] = 0;

  SECTION("put with two offsets: three threads, odd offsets") {
    for (uint32_t t = 0; t < 3; ++t) h0.put(/*dstOffset=*/3, /*srcOffset=*/5, /*bytes=*/1001, t, 3);
    for (int i = 0; i < 1001; ++i) REQUIRE(dst[3 + i] == src[5 + i]);
    CHECK(dst[2] == 0);
    CHECK(dst[1004] == 0);
  }
  SECTION("put with one offset: one thread, same offset both sides") {
    h0.put(/*offset=*/64, /*bytes=*/256, 0, 1);
    for (int i = 0; i < 256; ++i) REQUIRE(dst[64 + i] == src[64 + i]);
    CHECK(dst[63] == 0);
    CHECK(dst[320] == 0);
  }
  SECTION("get in both forms reads the peer's buffer") {
    for (int i = 0; i < 512; ++i) dst[i] = static_cast<unsigned char>(255 - i);
    for (uint32_t t = 0; t < 2; ++t) h0.get(/*remoteOffset=*/7, /*localOffset=*/3000, /*bytes=*/300, t, 2);
    for (int i = 0; i < 300; ++i) REQUIRE(src[3000 + i] == static_cast<unsigned char>(255 - (7 + i)));
    CHECK(src[2999] == static_cast<unsigned char>(2999 * 3 + 1));
    h0.get(/*offset=*/16, /*bytes=*/8, 0, 1);
    for (int i = 0; i < 8; ++i) REQUIRE(src[16 + i] == static_cast<unsigned char>(255 - (16 + i)));
  }
  SECTION("write<T> and read<T> access the peer's buffer by element") {
    h0.write<uint64_t>(10, 0x1122334455667788ull);
    CHECK(s->buf(1)[10] == 0x1122334455667788ull);
    h0.write<uint32_t>(3, 0xdeadbeefu);
    CHECK(reinterpret_cast<uint32_t*>(s->buf(1))[3] == 0xdeadbeefu);
    CHECK(h0.read<uint32_t>(20) == 0x55667788u);  // the low half of word 10 (little-endian)
    CHECK(h0.read<uint64_t>(10) == 0x1122334455667788ull);
  }
}

TEST_CASE("memory channel: every signal and wait form counts signals", "[api][memory_channel]") {
  auto s = test::makeMemoryChannelPair();
  SmChannelDeviceHandle h0 = s->channels[0].deviceHandle();
  SmChannelDeviceHandle h1 = s->channels[1].deviceHandle();
  // The host side set the handles' timeout from MSCCLPP_TIMEOUT_S (60 s in the test environment).
  CHECK(h0.semaphore_.timeoutNs == 60000 * kMs);

  CHECK_FALSE(h1.poll());
  // Rank 0 increments rank 1's inbound counter through its mapping of it.
  h0.signal();
  h0.signal();
  CHECK(*h1.semaphore_.inboundCounter == 2);
  CHECK(*h0.semaphore_.outboundCounter == 2);
  CHECK(h1.poll());  // consumes the first
  h1.wait();         // the second is already there
  CHECK_FALSE(h1.poll());
  CHECK(*h1.semaphore_.expectedInboundCounter == 2);

  h0.relaxedSignal();
  CHECK(h1.relaxedWait(deadlineAfter(1000 * kMs), nullptr) == SpinStatus::Ok);
  h0.relaxedSignal();
  h1.relaxedWait();
  h0.signal();
  CHECK(h1.wait(deadlineAfter(1000 * kMs), nullptr) == SpinStatus::Ok);
  h0.signal();
  CHECK(h1.waitFor(1000 * kMs) == SpinStatus::Ok);
  CHECK(*h1.semaphore_.expectedInboundCounter == 6);

  // The other direction is independent.
  CHECK_FALSE(h0.poll());
  h1.signal();
  CHECK(h0.poll());
}

TEST_CASE("memory channel: timed waits return, convenience waits throw", "[api][memory_channel]") {
  auto s = test::makeMemoryChannelPair();
  SmChannelDeviceHandle h1 = s->channels[1].deviceHandle();
  // Nobody signals: each wait below gives up. (After a failed wait the counters
  // no longer match: a real program tears the channel down; the test only
  // checks how each wait ends.)
  CHECK(h1.waitFor(20 * kMs) == SpinStatus::Timeout);
  CHECK(h1.wait(deadlineAfter(20 * kMs), nullptr) == SpinStatus::Timeout);
  uint32_t abortFlag = 1;
  CHECK(h1.wait(kNoDeadline, &abortFlag) == SpinStatus::Aborted);
  CHECK(h1.relaxedWait(kNoDeadline, &abortFlag) == SpinStatus::Aborted);
  SmChannelDeviceHandle quick = h1;
  quick.semaphore_.timeoutNs = 20 * kMs;
  try {
    quick.wait();
    FAIL("wait() returned without a signal");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Timeout);
    CHECK(std::string(e.what()) == "semaphore wait did not complete within its timeout (MSCCLPP_TIMEOUT_S)");
  }
  CHECK_THROWS_WITH(quick.relaxedWait(),
                    "semaphore relaxedWait did not complete within its timeout (MSCCLPP_TIMEOUT_S)");
}

TEST_CASE("memory channel: a signal publishes the puts before it", "[api][memory_channel]") {
  auto s = test::makeMemoryChannelPair();
  const int rounds = 200;
  std::vector<std::string> errors(2);
  runRanks(2, [&](int r) {
    SmChannelDeviceHandle h = s->channels[r].deviceHandle();
    uint64_t* mine = s->buf(r);
    // Rank 0 starts. Each round: write 64 words (the round number) into the
    // peer, signal, wait for the peer's answer and check all of it arrived.
    for (int round = 0; round < rounds; ++round) {
      bool myTurn = (round % 2) == r;
      if (myTurn) {
        for (int i = 0; i < 64; ++i) mine[i] = uint64_t(round) * 1000 + uint64_t(i);
        h.put(/*dstOffset=*/512, /*srcOffset=*/0, /*bytes=*/64 * 8, 0, 1);
        h.signal();
      } else {
        h.wait();
        for (int i = 0; i < 64 && errors[r].empty(); ++i) {
          if (mine[64 + i] != uint64_t(round) * 1000 + uint64_t(i)) {
            errors[r] =
                "round " + std::to_string(round) + " word " + std::to_string(i) + " = " + std::to_string(mine[64 + i]);
          }
        }
      }
    }
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}

TEST_CASE("memory channel: putPackets/getPackets with LL16 and LL8", "[api][memory_channel][packets]") {
  auto s = test::makeMemoryChannelPair();
  SmChannelDeviceHandle h0 = s->channels[0].deviceHandle();
  SmChannelDeviceHandle h1 = s->channels[1].deviceHandle();
  unsigned char* src = reinterpret_cast<unsigned char*>(s->buf(0));
  unsigned char* got = reinterpret_cast<unsigned char*>(s->buf(1));            // rank 1's src_: getPackets lands here
  const uint64_t packetArea = test::MemoryChannelPair::kPacketWordOffset * 8;  // in rank 1's registered buffer
  for (int i = 0; i < 1024; ++i) src[i] = static_cast<unsigned char>(i ^ 0x5a);

  SECTION("LL16: 100 bytes, a partial last packet, two threads") {
    for (uint32_t t = 0; t < 2; ++t) h0.putPackets(/*dstOffset=*/packetArea, /*srcOffset=*/0, 100, t, 2, /*flag=*/5);
    const LL16Packet* pk = reinterpret_cast<const LL16Packet*>(s->packetBuffer(1));
    CHECK(pk[12].halves[0] >> 32 == 5);
    CHECK(pk[13].halves[0] == 0);  // nothing past the 13th packet
    for (uint32_t t = 0; t < 2; ++t) h1.getPackets(/*packetOffset=*/0, /*dstOffset=*/8, 100, t, 2, /*flag=*/5);
    for (int i = 0; i < 100; ++i) REQUIRE(got[8 + i] == static_cast<unsigned char>(i ^ 0x5a));
    CHECK(got[108] == 0);
    // The next flag has not been written: the status variant times out and names nothing else.
    CHECK(h1.getPackets(0, 8, 100, 0, 1, /*flag=*/6, deadlineAfter(20 * kMs), nullptr) == SpinStatus::Timeout);
    uint32_t abortFlag = 1;
    CHECK(h1.getPackets(0, 8, 100, 0, 1, 6, kNoDeadline, &abortFlag) == SpinStatus::Aborted);
    SmChannelDeviceHandle quick = h1;
    quick.semaphore_.timeoutNs = 20 * kMs;
    CHECK_THROWS_WITH(quick.getPackets(0, 8, 100, 0, 1, 6),
                      "MemoryChannel::getPackets: waiting for packet flags did not complete within its timeout "
                      "(MSCCLPP_TIMEOUT_S)");
    // Reusing the buffer with a new flag needs no clearing.
    for (int i = 0; i < 100; ++i) src[i] = static_cast<unsigned char>(i);
    h0.putPackets(packetArea, 0, 100, 0, 1, /*flag=*/6);
    h1.getPackets(0, 8, 100, 0, 1, /*flag=*/6);
    for (int i = 0; i < 100; ++i) REQUIRE(got[8 + i] == static_cast<unsigned char>(i));
  }
  SECTION("LL8: 1 KB at offsets, three threads") {
    for (uint32_t t = 0; t < 3; ++t) h0.putPackets<LL8Packet>(packetArea + 64, /*srcOffset=*/0, 1024, t, 3, /*flag=*/9);
    const LL8Packet* pk = reinterpret_cast<const LL8Packet*>(static_cast<char*>(s->packetBuffer(1)) + 64);
    CHECK(pk[255].word >> 32 == 9);
    CHECK(pk[256].word == 0);
    for (uint32_t t = 0; t < 3; ++t) h1.getPackets<LL8Packet>(/*packetOffset=*/64, /*dstOffset=*/0, 1024, t, 3, 9);
    for (int i = 0; i < 1024; ++i) REQUIRE(got[i] == static_cast<unsigned char>(i ^ 0x5a));
  }
}
