// bench_runtime_proxy: latency of the port-channel
// path, with host threads as the device side.
//
//   bench_runtime_proxy [--iters 20000]
//
//   flush        the bare FIFO and proxy round trip: push a flush trigger,
//                the proxy pops it and advances the tail, the pusher sees it
//   ping-pong    rank 0 signals, rank 1 waits and signals back, rank 0 waits:
//                two proxy hops and two signals, over SHM and over TCP
//   put+flush    putWithSignalAndFlush of 4 KiB over TCP, with its ACK
// Prints the median and 99th percentile in microseconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mscclpp/core.hpp"
#include "support/args.hpp"

using Clock = std::chrono::steady_clock;
using namespace mscclpp;

namespace {

struct Stats {
  double median, p99;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)]};
}

double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

// n ranks as threads, each with a proxy and a port
// channel over transport to its peer, rank ^ 1.
struct Ring {
  std::vector<std::shared_ptr<Communicator>> comms;
  std::vector<std::unique_ptr<ProxyService>> proxies;
  std::vector<std::shared_ptr<char>> bufs;
  std::vector<PortChannel> channels;
};

Ring makePair(Transport transport) {
  Ring ring;
  auto group = InProcessBootstrap::createGroup(2);
  ring.comms.resize(2);
  ring.proxies.resize(2);
  ring.channels.resize(2);
  ring.bufs = {allocSharedHost<char>(1 << 20), allocSharedHost<char>(1 << 20)};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r]() {
      ring.comms[r] = std::make_shared<Communicator>(std::make_shared<InProcessBootstrap>(group, r), kHostDevice);
      Communicator& c = *ring.comms[r];
      auto f = c.connect(1 - r, 0, transport);
      RegisteredMemory mine = c.registerMemory(ring.bufs[r].get(), 1 << 20, transport);
      c.sendMemory(mine, 1 - r, 0);
      RegisteredMemory theirs = c.recvMemory(1 - r, 0).get();
      ring.proxies[r] = std::make_unique<ProxyService>();
      SemaphoreId sem = ring.proxies[r]->buildAndAddSemaphore(c, f.get());
      ring.channels[r] =
          ring.proxies[r]->portChannel(sem, ring.proxies[r]->addMemory(theirs), ring.proxies[r]->addMemory(mine));
      ring.proxies[r]->startProxy();
    });
  }
  for (auto& t : threads) t.join();
  return ring;
}

void report(const char* name, const std::vector<double>& samples) {
  Stats s = stats(samples);
  std::printf("  %-34s median %8.2f us   p99 %8.2f us\n", name, s.median, s.p99);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20000;
  mscclpp::tools::ArgParser args("bench_runtime_proxy",
                                 "usage: bench_runtime_proxy [--iters N]\n"
                                 "  --iters: round trips per measurement, 100 to 10000000 (default 20000)\n");
  args.integer("--iters", &iters, 100, 10000000);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  std::printf("# host threads stand in for device threads; %d iterations each\n", iters);

  {
    Ring ring = makePair(Transport::HostShm);
    PortChannelDeviceHandle ch = ring.channels[0].deviceHandle();
    std::vector<double> v;
    for (int i = 0; i < iters + iters / 10; ++i) {
      auto t0 = Clock::now();
      ch.flush();
      if (i >= iters / 10) v.push_back(us(t0, Clock::now()));
    }
    report("flush (FIFO + proxy round trip)", v);
  }
  for (Transport transport : {Transport::HostShm, Transport::Tcp}) {
    Ring ring = makePair(transport);
    std::vector<double> v;
    std::thread peer([&]() {
      PortChannelDeviceHandle ch = ring.channels[1].deviceHandle();
      for (int i = 0; i < iters + iters / 10; ++i) {
        ch.wait();
        ch.signal();
      }
    });
    PortChannelDeviceHandle ch = ring.channels[0].deviceHandle();
    for (int i = 0; i < iters + iters / 10; ++i) {
      auto t0 = Clock::now();
      ch.signal();
      ch.wait();
      if (i >= iters / 10) v.push_back(us(t0, Clock::now()));
    }
    peer.join();
    report((std::string("ping-pong over ") + transportName(transport) + " (round trip)").c_str(), v);
  }
  {
    Ring ring = makePair(Transport::Tcp);
    PortChannelDeviceHandle ch = ring.channels[0].deviceHandle();
    std::vector<double> v;
    for (int i = 0; i < iters + iters / 10; ++i) {
      auto t0 = Clock::now();
      ch.putWithSignalAndFlush(0, 0, 4096);
      if (i >= iters / 10) v.push_back(us(t0, Clock::now()));
    }
    report("put 4 KiB + signal + flush over TCP", v);
  }
  return 0;
}
