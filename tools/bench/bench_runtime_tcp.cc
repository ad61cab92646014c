// bench_runtime_tcp: throughput of the TCP transport,
// writes and a flush applied into registered memory,
// against a plain socket copy of the same bytes. On
// loopback, between two ranks that are threads.
//
//   bench_runtime_tcp [--sizes 64K,1M,16M,64M] [--bytes-per-size 512M]
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/net/socket.hpp"
#include "mscclpp/communicator.hpp"
#include "support/args.hpp"

using Clock = std::chrono::steady_clock;
using namespace mscclpp;

namespace {

double gbps(uint64_t bytes, double seconds) { return bytes / seconds / 1e9; }

// The transport: rank 0 writes `size` bytes `reps`
// times into rank 1's buffer, then flushes.
double transportSeconds(Connection& conn, const RegisteredMemory& dst, const RegisteredMemory& src, size_t size,
                        int reps) {
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) conn.write(dst, 0, src, 0, size);
  conn.flush();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The baseline: one loopback socket. The receiver
// reads straight into its buffer and answers one
// byte at the end, as a flush is acknowledged.
double socketSeconds(size_t size, int reps) {
  net::SocketAddress addr = net::SocketAddress::parse("127.0.0.1:1");
  addr.setPort(0);
  net::Socket listener = net::Socket::listenOn(addr);
  addr = listener.localAddress();
  std::vector<char> src(size, 1), dst(size, 0);
  std::thread receiver([&]() {
    net::Socket s;
    Deadline d(60);
    while (!(s = listener.accept()).valid()) std::this_thread::yield();
    for (int i = 0; i < reps; ++i) s.recvAll(dst.data(), size, d, "baseline recv");
    char ack = 1;
    s.sendAll(&ack, 1, d, "baseline ack");
  });
  net::Socket out = net::Socket::connectTo(addr, Deadline(10), "baseline", false);
  auto t0 = Clock::now();
  Deadline d(60);
  for (int i = 0; i < reps; ++i) out.sendAll(src.data(), size, d, "baseline send");
  char ack;
  out.recvAll(&ack, 1, d, "baseline ack");
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  receiver.join();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> sizes = {64 << 10, 1 << 20, 16 << 20, 64 << 20};
  uint64_t perSize = 512ull << 20;
  mscclpp::tools::ArgParser args(
      "bench_runtime_tcp",
      "usage: bench_runtime_tcp [--sizes 64K,1M,16M,64M] [--bytes-per-size 512M]\n"
      "  --sizes: the write sizes to time; --bytes-per-size: bytes moved per trial of a size\n"
      "  (sizes as every tool reads them: 65536, 64K, 1MiB, ...)\n");
  args.sizeList("--sizes", &sizes, 1).size("--bytes-per-size", &perSize, 1);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  size_t maxSize = *std::max_element(sizes.begin(), sizes.end());
  auto group = InProcessBootstrap::createGroup(2);
  std::vector<std::shared_ptr<Communicator>> comms(2);
  std::vector<std::shared_ptr<Connection>> conns(2);
  std::vector<std::vector<char>> bufs(2, std::vector<char>(maxSize, 7));
  std::vector<RegisteredMemory> local(2), remote(2);
  std::vector<std::thread> setup;
  for (int r = 0; r < 2; ++r) {
    setup.emplace_back([&, r]() {
      comms[r] = std::make_shared<Communicator>(std::make_shared<InProcessBootstrap>(group, r), kHostDevice);
      auto f = comms[r]->connect(1 - r, 0, Transport::Tcp);
      local[r] = comms[r]->registerMemory(bufs[r].data(), maxSize, Transport::Tcp);
      comms[r]->sendMemory(local[r], 1 - r, 0);
      remote[r] = comms[r]->recvMemory(1 - r, 0).get();
      conns[r] = f.get();
    });
  }
  for (auto& t : setup) t.join();
  std::printf("# loopback, one connection, %llu MiB per trial, median of 3 trials; GB/s = 1e9 bytes/s\n",
              (unsigned long long)(perSize >> 20));
  std::printf("# %12s  %16s  %16s  %8s\n", "write size", "transport GB/s", "plain socket GB/s", "ratio");
  for (size_t size : sizes) {
    int reps = static_cast<int>(std::max<uint64_t>(1, perSize / size));
    transportSeconds(*conns[0], remote[0], local[0], size, std::max(1, reps / 8));  // warm up
    socketSeconds(size, std::max(1, reps / 8));
    // Alternate the two, three times each, and keep
    // the medians: loopback on a small VM is noisy.
    std::vector<double> ts, ss;
    for (int k = 0; k < 3; ++k) {
      ts.push_back(transportSeconds(*conns[0], remote[0], local[0], size, reps));
      ss.push_back(socketSeconds(size, reps));
    }
    std::sort(ts.begin(), ts.end());
    std::sort(ss.begin(), ss.end());
    double tg = gbps(uint64_t(size) * reps, ts[1]), sg = gbps(uint64_t(size) * reps, ss[1]);
    std::printf("  %12zu  %16.2f  %16.2f  %8.2f\n", size, tg, sg, tg / sg);
    std::fflush(stdout);
  }
  return 0;
}
