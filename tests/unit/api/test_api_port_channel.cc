// Every method of the port channel's device handle (ProxyChannelDeviceHandle)
// against a running ProxyService, over shared memory and TCP: put in its three
// forms, signal, putWithSignal, putWithSignalAndFlush, flush, wait, poll, and
// how each ends when it cannot complete.
#include <catch2/catch.hpp>

#include "api_test_util.hpp"

using namespace mscclpp;
using mscclpp::test::kMs;

namespace {

// Rank 0's words [from, from + n) as they arrived at rank 1 at [to, to + n).
bool arrived(const test::PortChannelPair& s, int from, int to, int n) {
  for (int i = 0; i < n; ++i) {
    if (s.buf(1)[to + i] != s.buf(0)[from + i]) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("port channel moves data and signals through the proxy", "[api][port_channel]") {
  Transport transport = GENERATE(Transport::HostShm, Transport::Tcp);
  INFO(transportName(transport));
  auto s = test::makePortChannelPair(transport);
  ProxyChannelDeviceHandle p0 = s->channels[0].deviceHandle();
  ProxyChannelDeviceHandle p1 = s->channels[1].deviceHandle();
  CHECK(p0.dst_ == 0);  // the peer's buffer was added first
  CHECK(p0.src_ == 1);
  CHECK(p0.fifo_.timeoutNs == 60000 * kMs);  // MSCCLPP_TIMEOUT_S of the test environment
  for (int i = 0; i < 1024; ++i) s->buf(0)[i] = 0xa000 + i;

  // put(dstMemoryId, dstOffset, srcMemoryId, srcOffset, size), then signal / wait.
  p0.put(/*dst=*/0, /*dstOffset=*/100 * 8, /*src=*/1, /*srcOffset=*/1 * 8, /*size=*/2 * 8);
  p0.signal();
  p1.wait();
  CHECK(arrived(*s, 1, 100, 2));
  CHECK(s->buf(1)[102] == 0);

  // put(dstOffset, srcOffset, size) and put(offset, size) use the default memories.
  p0.put(/*dstOffset=*/200 * 8, /*srcOffset=*/10 * 8, /*size=*/5 * 8);
  p0.put(/*offset=*/300 * 8, /*size=*/3 * 8);
  p0.signal();
  p1.wait();
  CHECK(arrived(*s, 10, 200, 5));
  CHECK(arrived(*s, 300, 300, 3));

  // putWithSignal in both forms: one trigger each, the signal after its data.
  p0.putWithSignal(/*dstOffset=*/400 * 8, /*srcOffset=*/20 * 8, /*size=*/64 * 8);
  p1.wait();
  CHECK(arrived(*s, 20, 400, 64));
  p0.putWithSignal(/*offset=*/500 * 8, /*size=*/7 * 8);
  p1.wait();
  CHECK(arrived(*s, 500, 500, 7));

  // putWithSignalAndFlush: when it returns the source was read, so it may be overwritten at once.
  p0.putWithSignalAndFlush(/*dstOffset=*/600 * 8, /*srcOffset=*/30 * 8, /*size=*/16 * 8);
  for (int i = 30; i < 46; ++i) s->buf(0)[i] = 0;
  p1.wait();
  for (int i = 0; i < 16; ++i) REQUIRE(s->buf(1)[600 + i] == uint64_t(0xa000 + 30 + i));
  p0.putWithSignalAndFlush(/*offset=*/700 * 8, /*size=*/8);
  p1.wait();
  CHECK(s->buf(1)[700] == 0xa000 + 700);

  // flush(): every earlier request completed at the peer, even without a signal.
  p0.put(/*dstOffset=*/800 * 8, /*srcOffset=*/50 * 8, /*size=*/10 * 8);
  p0.flush();
  CHECK(arrived(*s, 50, 800, 10));

  // poll consumes a signal without blocking; the other direction works the same way.
  CHECK_FALSE(p1.poll());
  p0.signal();
  p0.flush();  // the signal was performed
  CHECK(p1.poll());
  CHECK_FALSE(p1.poll());
  p1.putWithSignal(/*offset=*/0, /*size=*/8);
  p0.wait();
  CHECK(s->buf(0)[0] == s->buf(1)[0]);
  CHECK(s->proxies[0]->errorMessage() == "");
  CHECK(s->proxies[1]->errorMessage() == "");
}

TEST_CASE("port channel: status variants return what the others throw", "[api][port_channel]") {
  auto s = test::makePortChannelPair(Transport::HostShm);
  ProxyChannelDeviceHandle p0 = s->channels[0].deviceHandle();
  ProxyChannelDeviceHandle p1 = s->channels[1].deviceHandle();
  uint64_t deadline = deadlineAfter(1000 * kMs);
  for (int i = 0; i < 8; ++i) s->buf(0)[i] = 77 + i;
  CHECK(p0.put(0, 0, 1, 0, 8 * 8, deadline, nullptr) == SpinStatus::Ok);
  CHECK(p0.signal(deadline, nullptr) == SpinStatus::Ok);
  CHECK(p1.wait(deadline, nullptr) == SpinStatus::Ok);
  CHECK(p0.putWithSignal(0, 8 * 8, 1, 0, 8, deadline, nullptr) == SpinStatus::Ok);
  CHECK(p1.wait(deadline, nullptr) == SpinStatus::Ok);
  CHECK(p0.putWithSignalAndFlush(0, 16 * 8, 1, 0, 8, deadline, nullptr) == SpinStatus::Ok);
  CHECK(p1.wait(deadline, nullptr) == SpinStatus::Ok);
  uint64_t index = 0, tail = 0;
  CHECK(p0.flush(deadline, nullptr, &index, &tail) == SpinStatus::Ok);
  CHECK(index == 4);  // the fifth trigger this FIFO carried (putWithSignalAndFlush pushed one)
  CHECK(tail == 5);
  for (int i = 0; i < 8; ++i) REQUIRE(s->buf(1)[i] == uint64_t(77 + i));
  CHECK(s->buf(1)[8] == 77);
  CHECK(s->buf(1)[16] == 77);

  // A memory id beyond the trigger's 9 bits cannot be encoded: Invalid, or an InvalidArgument throw.
  CHECK(p0.put(/*dst=*/600, 0, 1, 0, 8, deadline, nullptr) == SpinStatus::Invalid);
  try {
    p0.put(600, 0, 1, 0, 8);
    FAIL("put with memory id 600 did not fail");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK(std::string(e.what()) == "PortChannel::put: the request cannot be encoded");
  }

  // No signal comes: the timed wait times out, an abort flag ends it, the convenience wait throws.
  CHECK(p1.wait(deadlineAfter(20 * kMs), nullptr) == SpinStatus::Timeout);
  uint32_t abortFlag = 1;
  CHECK(p1.wait(kNoDeadline, &abortFlag) == SpinStatus::Aborted);
  ProxyChannelDeviceHandle quick = p1;
  quick.semaphore_.timeoutNs = 20 * kMs;
  CHECK_THROWS_WITH(quick.wait(), "port semaphore wait did not complete within its timeout (MSCCLPP_TIMEOUT_S)");

  // A stopped proxy completes nothing: flush ends at its deadline or at the abort flag.
  s->proxies[0]->stopProxy();
  CHECK(p0.flush(deadlineAfter(20 * kMs), nullptr) == SpinStatus::Timeout);
  CHECK(p0.flush(kNoDeadline, &abortFlag) == SpinStatus::Aborted);
  ProxyChannelDeviceHandle quick0 = p0;
  quick0.fifo_.timeoutNs = 20 * kMs;
  CHECK_THROWS_WITH(quick0.flush(), "PortChannel::flush did not complete within its timeout (MSCCLPP_TIMEOUT_S)");
}

TEST_CASE("a BasePortChannel names its memories in every put", "[api][port_channel]") {
  auto s = test::makePortChannelPair(Transport::HostShm);
  // Rank 0's proxy: memory 0 = rank 1's buffer, 1 = rank 0's. A base channel has no defaults.
  BasePortChannel base = s->proxies[0]->basePortChannel(0);
  DeviceHandle<BasePortChannel> h = base.deviceHandle();
  ProxyChannelDeviceHandle p1 = s->channels[1].deviceHandle();
  s->buf(0)[5] = 12345;
  h.putWithSignal(/*dst=*/0, /*dstOffset=*/9 * 8, /*src=*/1, /*srcOffset=*/5 * 8, /*size=*/8, deadlineAfter(1000 * kMs),
                  nullptr);
  p1.wait();
  CHECK(s->buf(1)[9] == 12345);
}
