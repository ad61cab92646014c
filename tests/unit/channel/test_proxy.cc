// The FIFO's host side and ProxyService: triggers pushed by "device" code (host
// threads on the CPU backend) become writes, signals and flushes on real
// connections; failures are reported with their place and never leave the
// device side hanging.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>

#include "../bootstrap/rank_threads.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/proxy.hpp"

using namespace mscclpp;
using Clock = std::chrono::steady_clock;
using mscclpp::test::runRanks;

namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

ProxyTrigger trigger(TriggerType type, uint32_t dst, uint64_t dstOff, uint32_t src, uint64_t srcOff, uint64_t size,
                     uint32_t channel) {
  ProxyTrigger t;
  REQUIRE(ProxyTrigger::encode(type, dst, dstOff, src, srcOff, size, channel, &t));
  return t;
}

// Two ranks, each with a proxy, a connection of `transport`, and a port channel
// whose destination is the peer's buffer.
struct PortSetup {
  std::vector<std::shared_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<ProxyService>> proxies;
  std::vector<std::shared_ptr<uint64_t>> bufs;  // shared host memory, 4096 words
  std::vector<PortChannel> channels;
  std::vector<std::shared_ptr<Connection>> conns;
};

std::unique_ptr<PortSetup> makePortSetup(Transport transport) {
  auto s = std::make_unique<PortSetup>();
  auto bs = test::makeTcpBootstraps(2);
  s->comms.resize(2);
  s->proxies.resize(2);
  s->channels.resize(2);
  s->conns.resize(2);
  s->bufs = {allocSharedHost<uint64_t>(4096), allocSharedHost<uint64_t>(4096)};
  runRanks(2, [&](int r) {
    s->comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice);
    Communicator& c = *s->comms[r];
    int peer = 1 - r;
    auto f = c.connect(peer, 0, transport);
    RegisteredMemory mine = c.registerMemory(s->bufs[r].get(), 4096 * 8, transport);
    c.sendMemory(mine, peer, 0);
    RegisteredMemory theirs = c.recvMemory(peer, 0).get();
    s->conns[r] = f.get();
    s->proxies[r] = std::make_unique<ProxyService>();
    ProxyService& proxy = *s->proxies[r];
    SemaphoreId sem = proxy.buildAndAddSemaphore(c, s->conns[r]);
    MemoryId dst = proxy.addMemory(theirs);
    MemoryId src = proxy.addMemory(mine);
    s->channels[r] = proxy.portChannel(sem, dst, src);
    proxy.startProxy();
  });
  return s;
}

}  // namespace

TEST_CASE("the host FIFO keeps trigger order and reports a full ring", "[proxy][fifo]") {
  Fifo fifo(4);
  FifoDeviceHandle h = fifo.deviceHandle();
  CHECK(h.size == 4);
  FifoConsumer& c = fifo.consumer();
  ProxyTrigger out{};
  CHECK_FALSE(c.poll(&out));
  for (uint32_t i = 0; i < 4; ++i) h.push(trigger(TriggerPut, i, 8 * i, 0, 0, 100 + i, 1));
  // Full: a fifth push waits for the consumer and gives up at its deadline.
  uint64_t idx = 0;
  auto start = Clock::now();
  CHECK(h.push(trigger(TriggerSignal, 0, 0, 0, 0, 0, 1), clockNs() + 50000000ull, nullptr, &idx) ==
        SpinStatus::Timeout);
  CHECK(secondsSince(start) < 2.0);
  for (uint32_t i = 0; i < 4; ++i) {
    REQUIRE(c.poll(&out));
    TriggerFields f = out.decode();
    CHECK(f.dstMemoryId == i);
    CHECK(f.dstOffset == 8 * i);
    CHECK(f.size == 100 + i);
    c.pop();
  }
  CHECK_FALSE(c.poll(&out));
  CHECK(*h.tail == 4);
  CHECK_THROWS_WITH(Fifo(0), "Fifo: size 0 is not in 1..1048576");
}

TEST_CASE("port channels move data through the proxy over TCP and SHM", "[proxy]") {
  for (Transport transport : {Transport::Tcp, Transport::HostShm}) {
    DYNAMIC_SECTION(transportName(transport)) {
      auto s = makePortSetup(transport);
      runRanks(2, [&](int r) {
        PortChannelDeviceHandle ch = s->channels[r].deviceHandle();
        uint64_t* mine = s->bufs[r].get();
        // Words [0, 1024) are ours to send; the peer puts its words into our [1024, 2048).
        for (int i = 0; i < 1024; ++i) mine[i] = (uint64_t(r) << 32) | uint64_t(i);
        ch.putWithSignal(1024 * 8, 0, 1024 * 8);
        ch.wait();  // the peer's data is here
        for (int i = 0; i < 1024; ++i) REQUIRE(mine[1024 + i] == ((uint64_t(1 - r) << 32) | uint64_t(i)));
        // put + signal + flush: when it returns, the copy left our source (we may overwrite it).
        for (int i = 0; i < 16; ++i) mine[2048 + i] = 5000 + i;
        ch.putWithSignalAndFlush(3072 * 8, 2048 * 8, 16 * 8);
        for (int i = 0; i < 16; ++i) mine[2048 + i] = 0;
        ch.wait();
        for (int i = 0; i < 16; ++i) REQUIRE(mine[3072 + i] == uint64_t(5000 + i));
        // Separate put, signal and flush triggers.
        ch.put(4000 * 8, 0, 8);
        ch.signal();
        ch.flush();
        ch.wait();
        CHECK(mine[4000] == (uint64_t(1 - r) << 32));
      });
      for (auto& p : s->proxies) {
        CHECK_FALSE(p->failed());
        CHECK(p->triggersHandled() == 5);
      }
    }
  }
}

TEST_CASE("a bad trigger is reported in place; later ones do not hang", "[proxy][faults]") {
  auto s = makePortSetup(Transport::Tcp);
  std::string reported;
  s->proxies[0]->stopProxy();
  s->proxies[0]->setErrorHandler([&](const Error& e) { reported = e.what(); });
  s->proxies[0]->startProxy();
  FifoDeviceHandle fifo = s->proxies[0]->fifoDeviceHandle();
  fifo.push(trigger(TriggerPut | TriggerSignal, 0, 0, 1, 0, 8, 5));  // no channel 5
  PortChannelDeviceHandle ch = s->channels[0].deviceHandle();
  ch.putWithSignalAndFlush(0, 0, 8);  // skipped, but the sync returns
  s->proxies[0]->stopProxy();
  CHECK(s->proxies[0]->failed());
  const std::string expected =
      "proxy: trigger #0 (put+signal of 8 bytes from memory 1 offset 0 to memory 0 offset 0, channel 5): unknown "
      "channel id 5 (1 registered)";
  CHECK(s->proxies[0]->errorMessage() == expected);
  CHECK(reported == expected);
  CHECK(s->proxies[0]->triggersHandled() == 2);

  // An unknown memory id on a known channel, on a fresh proxy.
  ProxyService fresh;
  fresh.addSemaphore(s->proxies[1]->semaphore(0));
  fresh.addMemory(s->proxies[1]->memory(0));
  fresh.startProxy();
  FifoDeviceHandle f2 = fresh.fifoDeviceHandle();
  f2.sync(f2.push(trigger(TriggerPut, 50, 0, 0, 0, 8, 0)));
  fresh.stopProxy();
  CHECK(fresh.errorMessage() ==
        "proxy: trigger #0 (put of 8 bytes from memory 0 offset 0 to memory 50 offset 0, channel 0 = rank 1 -> rank 0 "
        "over TCP): unknown memory id 50 (1 registered)");
}

TEST_CASE("a departed peer is the proxy's error, naming the connection", "[proxy][faults]") {
  auto s = makePortSetup(Transport::Tcp);
  ErrorCode code;
  std::string message;
  s->proxies[0]->stopProxy();
  Communicator* comm = s->comms[0].get();
  s->proxies[0]->setErrorHandler([comm](const Error& e) { comm->setAsyncError(e.code(), e.what()); });
  s->proxies[0]->startProxy();
  s->proxies[1].reset();
  s->conns[1].reset();
  s->channels[1] = PortChannel();
  s->comms[1].reset();
  auto start = Clock::now();
  PortChannelDeviceHandle ch = s->channels[0].deviceHandle();
  ch.putWithSignalAndFlush(0, 0, 64);
  CHECK(secondsSince(start) < 10.0);
  s->proxies[0]->stopProxy();
  REQUIRE(comm->asyncError(&code, &message));
  CHECK(code == ErrorCode::RemoteError);
  CHECK_THAT(message, Catch::StartsWith("proxy: trigger #0 (put+signal+flush of 64 bytes from memory 1 offset 0 to "
                                        "memory 0 offset 0, channel 0 = rank 0 -> rank 1 over TCP): ") &&
                          Catch::Contains("rank 1 closed its TCP connection"));
}

TEST_CASE("registration limits and ids are checked", "[proxy]") {
  ProxyService proxy;
  CHECK_THROWS_WITH(proxy.semaphore(0), "ProxyService: no semaphore 0 (0 registered)");
  CHECK_THROWS_WITH(proxy.portChannel(0, 0, 0), "ProxyService: no memory 0 (0 registered)");
  CHECK_THROWS_WITH(proxy.addMemory(RegisteredMemory()), "ProxyService::addMemory: empty registration");
  proxy.startProxy();
  CHECK(proxy.running());
  CHECK_THROWS_WITH(proxy.startProxy(), "ProxyService::startProxy: already running");
  auto start = Clock::now();
  proxy.stopProxy();
  CHECK_FALSE(proxy.running());
  CHECK(secondsSince(start) < 1.0);
  proxy.stopProxy();
}

TEST_CASE("a custom handler replaces dispatch; failures raise the flag", "[proxy]") {
  ProxyService proxy(8);
  std::vector<TriggerFields> seen;
  uint32_t failureFlag = 0;
  proxy.setRequestHandler([&](const TriggerFields& f) -> std::string {
    seen.push_back(f);
    return f.size == 13 ? "rank 3 refused 13 bytes" : "";
  });
  proxy.setFailureFlag(&failureFlag);
  proxy.startProxy();
  FifoDeviceHandle fifo = proxy.fifoDeviceHandle();
  fifo.sync(fifo.push(trigger(TriggerPut, 7, 64, 2, 32, 100, 9)));
  CHECK(failureFlag == 0);
  fifo.sync(fifo.push(trigger(TriggerPut | TriggerFlush, 1, 0, 0, 0, 13, 4)));
  // A device-side wait that passes the flag stops at once.
  uint64_t never = 0, expected = 0;
  Host2DeviceSemaphoreDeviceHandle sem{&never, &expected, 0};
  CHECK(sem.wait(kNoDeadline, &failureFlag) == SpinStatus::Aborted);
  proxy.stopProxy();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].dstMemoryId == 7);
  CHECK(seen[0].srcOffset == 32);
  CHECK(seen[0].channelId == 9);
  CHECK(proxy.errorMessage() ==
        "proxy: trigger #1 (put+flush of 13 bytes from memory 0 offset 0 to memory 1 offset 0, channel 4): rank 3 "
        "refused 13 bytes");
  CHECK(failureFlag == 1);
}

TEST_CASE("a proxy FIFO waits the communicator's timeout, naming it", "[proxy][fifo]") {
  // The suite's MSCCLPP_TIMEOUT_S (60 s), if any, is later than the communicator's own 0.3 s.
  auto bs = test::makeTcpBootstraps(1, 0.3);
  Communicator comm(bs[0], kHostDevice);
  ProxyService proxy(comm, 4);  // never started: no request completes
  FifoDeviceHandle fifo = proxy.fifoDeviceHandle();
  REQUIRE(fifo.timeoutNs == 300000000ull);
  CHECK(fifo.timeoutSource == kTimeoutFromCommunicator);
  uint64_t index = fifo.push(trigger(TriggerFlush, 0, 0, 0, 0, 0, 0));
  auto start = Clock::now();
  std::string error = test::errorOf([&] { fifo.sync(index); });
  CHECK(error ==
        "FIFO sync (the proxy did not complete a request) did not complete within its timeout (the communicator's "
        "timeout)");
  CHECK(secondsSince(start) < 2.0);
  // A port channel on it waits as long for the FIFO, and says so too.
  for (int i = 0; i < 3; ++i) fifo.push(trigger(TriggerFlush, 0, 0, 0, 0, 0, 0));  // the ring is full
  PortChannelDeviceHandle channel{};
  channel.fifo_ = fifo;
  start = Clock::now();
  error = test::errorOf([&] { channel.signal(); });
  CHECK(error == "PortChannel::signal did not complete within its timeout (the communicator's timeout)");
  CHECK(secondsSince(start) < 2.0);
  // Without a communicator: MSCCLPP_TIMEOUT_S, named as such.
  ProxyService plain(4);
  CHECK(plain.fifoDeviceHandle().timeoutSource == kTimeoutFromEnvironment);
  Fifo explicitTimeout(4, kHostDevice, 0.5, "MSCCLPP_TIMEOUT_S");
  CHECK(explicitTimeout.deviceHandle().timeoutNs == 500000000ull);
  CHECK(explicitTimeout.deviceHandle().timeoutSource == kTimeoutFromEnvironment);
}
