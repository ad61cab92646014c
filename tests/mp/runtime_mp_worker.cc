// runtime_mp_worker: one rank of a multi-process runtime test, started by
// runtime_launch with RANK, WORLD_SIZE and MSCCLPP_COMM_ID set. Scenarios:
//   bootstrap   all-gather, broadcast, barrier, split, tagged messages
//   transfer T  every rank writes a block to every other over transport T (shm, tcp, ib, ib0..ib7, auto)
//   kill V      tcp transfers in a loop; rank V is SIGKILLed midway
//   missing     one rank fewer than WORLD_SIZE: init fails naming it
//   garbage     strangers flood the rendezvous port while the job forms
//   abort V     rank V dies; the others' abort returns at once
// Exit 0 when the rank saw what it should; 1 with a message otherwise.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/format.hpp"
#include "core/net/socket.hpp"
#include "core/params.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/core.hpp"

using namespace mscclpp;
using Clock = std::chrono::steady_clock;

namespace {

int gRank = -1;
int gSize = 0;
uint32_t gFailureFlagStorage = 0;
const uint32_t* gFailureFlag = &gFailureFlagStorage;  // raised by our proxy when it fails

int envInt(const char* name) {
  const char* v = std::getenv(name);  // set by the launcher (not an MSCCLPP_ parameter)
  if (!v) {
    std::fprintf(stderr, "runtime_mp_worker: %s is not set (start it with runtime_launch)\n", name);
    std::exit(2);
  }
  return std::atoi(v);
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "rank %d: FAILED: %s\n", gRank, why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::shared_ptr<TcpBootstrap> joinJob(double timeout = 0) {
  auto b = std::make_shared<TcpBootstrap>(gRank, gSize);
  b->initialize(TcpBootstrap::createUniqueId(), timeout);  // the id comes from MSCCLPP_COMM_ID
  return b;
}

// ---- bootstrap ---------------------------------------------------------------------------------

int scenarioBootstrap() {
  auto b = joinJob();
  std::vector<int> all(gSize, -1);
  all[gRank] = gRank * 7;
  b->allGather(all.data(), sizeof(int));
  for (int r = 0; r < gSize; ++r) check(all[r] == r * 7, "allGather slot " + std::to_string(r));
  for (int root = 0; root < gSize; ++root) {
    uint64_t v = gRank == root ? 1000 + root : 0;
    b->broadcast(&v, sizeof(v), root);
    check(v == uint64_t(1000 + root), "broadcast from " + std::to_string(root));
  }
  int next = (gRank + 1) % gSize, prev = (gRank + gSize - 1) % gSize;
  for (int tag = 0; tag < 3; ++tag) {
    int v = gRank * 100 + tag;
    b->send(&v, sizeof(v), next, tag);
  }
  for (int tag = 2; tag >= 0; --tag) {
    int v = -1;
    b->recv(&v, sizeof(v), prev, tag);
    check(v == prev * 100 + tag, "p2p tag " + std::to_string(tag));
  }
  auto half = b->split(gRank % 2, gRank);
  std::vector<int> members(half->getNranks());
  members[half->getRank()] = gRank;
  half->allGather(members.data(), sizeof(int));
  for (int i = 0; i < half->getNranks(); ++i) check(members[i] % 2 == gRank % 2, "split member");
  b->barrier();
  std::printf("rank %d: bootstrap OK\n", gRank);
  return 0;
}

// ---- transfer ----------------------------------------------------------------------------------

constexpr size_t kBlockWords = 64 * 1024;  // 512 KiB per peer

struct Mesh {
  std::shared_ptr<Communicator> comm;
  std::vector<std::shared_ptr<Connection>> conns;  // by peer rank (null for ourselves)
  std::shared_ptr<uint64_t> recvBuf;               // shared memory: gSize blocks, block r from rank r
  std::vector<uint64_t> sendBuf;                   // private: our block
  RegisteredMemory sendMem;
  RegisteredMemory recvMem;                // kept: dropping the last copy unregisters it
  std::vector<RegisteredMemory> peerRecv;  // each peer's recvBuf
};

// The InfiniBand transport of modes ib0..ib7, and of ib: the HCA port
// nearest this rank. Unknown for the other modes.
Transport ibOf(const std::string& mode, Communicator& comm) {
  if (mode.size() == 3 && mode.compare(0, 2, "ib") == 0 && mode[2] >= '0' && mode[2] <= '7')
    return static_cast<Transport>(static_cast<int>(Transport::IB0) + (mode[2] - '0'));
  if (mode != "ib") return Transport::Unknown;
  std::string why;
  Transport t = comm.nearestIbTransport(&why);
  check(t != Transport::Unknown, "transfer ib: no nearest IB transport: " + why);
  return t;
}

Transport pick(const std::string& mode, Communicator& comm, int peer) {
  if (mode == "shm") return Transport::HostShm;
  if (mode == "tcp") return Transport::Tcp;
  if (ibOf(mode, comm) != Transport::Unknown) return ibOf(mode, comm);
  return comm.isSameHost(peer) ? Transport::HostShm : Transport::Tcp;
}

Mesh buildMesh(const std::string& mode) {
  Mesh m;
  m.comm = std::make_shared<Communicator>(joinJob(), kHostDevice);
  Communicator& c = *m.comm;
  m.conns.resize(gSize);
  m.peerRecv.resize(gSize);
  std::vector<std::shared_future<std::shared_ptr<Connection>>> pending(gSize);
  for (int p = 0; p < gSize; ++p)
    if (p != gRank) pending[p] = c.connect(p, 0, pick(mode, c, p));
  m.recvBuf = allocSharedHost<uint64_t>(kBlockWords * gSize);
  m.sendBuf.assign(kBlockWords, 0);
  const Transport ibMode = ibOf(mode, c);
  const TransportFlags ib = ibMode != Transport::Unknown ? TransportFlags(ibMode) : TransportFlags();
  m.recvMem = c.registerMemory(m.recvBuf.get(), kBlockWords * gSize * 8, Transport::HostShm | Transport::Tcp | ib);
  m.sendMem = c.registerMemory(m.sendBuf.data(), kBlockWords * 8, TransportFlags(Transport::Tcp) | ib);
  for (int p = 0; p < gSize; ++p)
    if (p != gRank) c.sendMemory(m.recvMem, p, 0);
  std::vector<std::shared_future<RegisteredMemory>> mems(gSize);
  for (int p = 0; p < gSize; ++p)
    if (p != gRank) mems[p] = c.recvMemory(p, 0);
  for (int p = 0; p < gSize; ++p) {
    if (p == gRank) continue;
    m.conns[p] = pending[p].get();
    m.peerRecv[p] = mems[p].get();
  }
  return m;
}

void fillBlock(Mesh& m, uint64_t round) {
  for (size_t i = 0; i < kBlockWords; ++i) m.sendBuf[i] = (round << 48) | (uint64_t(gRank) << 32) | i;
}

void checkBlocks(Mesh& m, uint64_t round, const char* phase) {
  for (int p = 0; p < gSize; ++p) {
    if (p == gRank) continue;
    const uint64_t* block = m.recvBuf.get() + p * kBlockWords;
    for (size_t i = 0; i < kBlockWords; ++i) {
      uint64_t want = (round << 48) | (uint64_t(p) << 32) | i;
      if (block[i] != want) {
        fail(std::string(phase) + ": block from rank " + std::to_string(p) + " word " + std::to_string(i) + " is " +
             std::to_string(block[i]) + ", expected " + std::to_string(want));
      }
    }
  }
}

// Round 1: connection writes and host-to-host semaphores.
void roundConnections(Mesh& m) {
  Communicator& c = *m.comm;
  std::vector<std::unique_ptr<Host2HostSemaphore>> sems(gSize);
  for (int p = 0; p < gSize; ++p)
    if (p != gRank) sems[p] = std::make_unique<Host2HostSemaphore>(c, m.conns[p]);
  fillBlock(m, 1);
  for (int p = 0; p < gSize; ++p) {
    if (p == gRank) continue;
    m.conns[p]->write(m.peerRecv[p], gRank * kBlockWords * 8, m.sendMem, 0, kBlockWords * 8);
    sems[p]->signal();  // after the write, then flush
  }
  for (int p = 0; p < gSize; ++p)
    if (p != gRank) sems[p]->wait();
  checkBlocks(m, 1, "connections");
  c.bootstrap()->barrier();  // everyone checked before the buffers are reused
}

// Round 2: port channels through a proxy, one "device" thread per peer,
// as in examples/alltoall.hpp.
void roundPortChannels(Mesh& m, ProxyService& proxy, std::vector<PortChannel>& channels) {
  fillBlock(m, 2);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::string firstError;
  std::mutex errorMutex;
  for (int p = 0; p < gSize; ++p) {
    if (p == gRank) continue;
    threads.emplace_back([&, p]() {
      // The status forms with the proxy's failure flag: a proxy failure (peer
      // gone) ends the waits at once; otherwise they end at MSCCLPP_TIMEOUT_S.
      PortChannelDeviceHandle ch = channels[p].deviceHandle();
      uint64_t deadline = deadlineAfter(ch.fifo_.timeoutNs);
      SpinStatus st = ch.putWithSignalAndFlush(ch.dst_, gRank * kBlockWords * 8, ch.src_, 0, kBlockWords * 8, deadline,
                                               gFailureFlag);
      const char* step = "putWithSignalAndFlush";
      if (st == SpinStatus::Ok) {
        st = ch.wait(deadline, gFailureFlag);
        step = "wait";
      }
      if (st != SpinStatus::Ok) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (failures++ == 0) {
          firstError = strFormat("port channel to rank %d: %s: %s", p, step, spinStatusName(st));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failures > 0)
    throw Error(ErrorCode::RemoteError, firstError + (proxy.failed() ? "; " + proxy.errorMessage() : ""));
  checkBlocks(m, 2, "port channels");
}

void setupPortChannels(Mesh& m, ProxyService& proxy, std::vector<PortChannel>& channels) {
  Communicator& c = *m.comm;
  MemoryId src = proxy.addMemory(m.sendMem);
  channels.resize(gSize);
  for (int p = 0; p < gSize; ++p) {
    if (p == gRank) continue;
    SemaphoreId sem = proxy.buildAndAddSemaphore(c, m.conns[p]);
    channels[p] = proxy.portChannel(sem, proxy.addMemory(m.peerRecv[p]), src);
  }
  proxy.setErrorHandler([&c](const Error& e) { c.setAsyncError(e.code(), e.what()); });
  proxy.setFailureFlag(&gFailureFlagStorage);
  proxy.startProxy();
}

// Round 3: memory channels between ranks of one host (direct access to the mapped peer buffer).
void roundMemoryChannels(Mesh& m) {
  Communicator& c = *m.comm;
  std::vector<std::unique_ptr<MemoryChannel>> channels(gSize);
  int local = 0;
  for (int p = 0; p < gSize; ++p) {
    if (p == gRank || m.conns[p]->transport() != Transport::HostShm) continue;
    auto sem = std::make_shared<MemoryDevice2DeviceSemaphore>(c, m.conns[p]);
    channels[p] = std::make_unique<MemoryChannel>(sem, m.peerRecv[p], m.sendBuf.data());
    ++local;
  }
  fillBlock(m, 3);
  for (int p = 0; p < gSize; ++p) {
    if (!channels[p]) continue;
    MemoryChannelDeviceHandle h = channels[p]->deviceHandle();
    h.put(gRank * kBlockWords * 8, 0, kBlockWords * 8, 0, 1);
    h.signal();
  }
  for (int p = 0; p < gSize; ++p) {
    if (!channels[p]) continue;
    channels[p]->deviceHandle().wait();
    const uint64_t* block = m.recvBuf.get() + p * kBlockWords;
    for (size_t i = 0; i < kBlockWords; i += 997) {
      check(block[i] == ((uint64_t(3) << 48) | (uint64_t(p) << 32) | i),
            "memory channel block from " + std::to_string(p));
    }
  }
  std::printf("rank %d: memory channels to %d same-host peers OK\n", gRank, local);
}

// transfer T: T is shm, tcp, ib0..ib7, ib (the nearest HCA port), or auto (shm
// on one host, tcp across hosts).
// Three rounds, each checked: connection writes with host semaphores, port
// channels through a ProxyService, memory channels where the peer shares
// the host.
int scenarioTransfer(const std::string& mode) {
  Mesh m = buildMesh(mode);
  roundConnections(m);
  ProxyService proxy;
  std::vector<PortChannel> channels;
  setupPortChannels(m, proxy, channels);
  roundPortChannels(m, proxy, channels);
  m.comm->bootstrap()->barrier();
  roundMemoryChannels(m);
  m.comm->bootstrap()->barrier();
  proxy.stopProxy();
  int tcp = 0, shm = 0, ib = 0;
  for (auto& conn : m.conns) {
    if (!conn) continue;
    (conn->transport() == Transport::Tcp ? tcp : isIbTransport(conn->transport()) ? ib : shm)++;
  }
  std::printf("rank %d (host %s): transfer %s OK (%d shm, %d tcp, %d ib connections)\n", gRank,
              m.comm->hostId().c_str(), mode.c_str(), shm, tcp, ib);
  return 0;
}

// ---- faults ------------------------------------------------------------------------------------

// kill V: every other rank must get an error within MSCCLPP_TIMEOUT_S and
// release everything.
int scenarioKill(int victim) {
  const double timeout = params::timeoutSeconds();
  Mesh m = buildMesh("tcp");
  ProxyService proxy;
  std::vector<PortChannel> channels;
  setupPortChannels(m, proxy, channels);
  Clock::time_point killedAround = Clock::now();
  try {
    for (uint64_t round = 0; round < 1000; ++round) {
      if (gRank == victim && round == 3) {
        // Mid-transfer: our puts of this round are queued at the proxy when we die.
        fillBlock(m, 2);
        for (int p = 0; p < gSize; ++p) {
          if (p == gRank) continue;
          PortChannelDeviceHandle ch = channels[p].deviceHandle();
          ch.put(gRank * kBlockWords * 8, 0, kBlockWords * 8);
        }
        std::fflush(stdout);
        raise(SIGKILL);
      }
      killedAround = Clock::now();
      roundPortChannels(m, proxy, channels);
      m.comm->bootstrap()->barrier();
    }
    fail("no error although rank " + std::to_string(victim) + " died");
  } catch (const Error& e) {
    double waited = since(killedAround);
    ErrorCode code;
    std::string async;
    bool hasAsync = m.comm->asyncError(&code, &async);
    std::printf("rank %d: error %.2f s after the last good round (%s): %s%s%s\n", gRank, waited,
                errorCodeName(e.code()), e.what(), hasAsync ? " | async: " : "", hasAsync ? async.c_str() : "");
    check(waited <= timeout + 5, "the error came after the deadline");
  }
  // Release everything; nothing here may wait for the dead rank.
  Clock::time_point t = Clock::now();
  proxy.stopProxy();
  channels.clear();
  m = Mesh();
  std::printf("rank %d: resources released in %.3f s\n", gRank, since(t));
  check(since(t) < 5, "releasing resources took too long");
  return 0;
}

int scenarioMissing() {
  const double timeout = params::timeoutSeconds();
  Clock::time_point t = Clock::now();
  try {
    joinJob();
    fail("init succeeded with a rank missing");
  } catch (const Error& e) {
    std::string msg = e.what();
    std::string missing = "ranks " + std::to_string(gSize - 1) + " (1 of " + std::to_string(gSize) + ") did not arrive";
    std::printf("rank %d: init failed after %.2f s: %s\n", gRank, since(t), msg.c_str());
    check(msg.find(missing) != std::string::npos, "the error does not name the missing rank: " + msg);
    check(since(t) <= timeout * 1.1 + 3, "init failed after the deadline");
  }
  return 0;
}

int scenarioGarbage() {
  std::atomic<bool> stop{false};
  std::thread stranger;
  if (gRank == 0) {
    // A stranger hammers the rendezvous port while the job forms.
    const char* commId = std::getenv("MSCCLPP_COMM_ID");
    net::SocketAddress root = net::SocketAddress::parse(commId);
    stranger = std::thread([&, root]() {
      std::vector<char> junk(1500, '\x7f');
      for (int k = 0; k < 200 && !stop.load(); ++k) {
        try {
          net::Socket s = net::Socket::connectTo(root, Deadline(2), "the root", true);
          s.sendAll(junk.data(), junk.size() - k, Deadline(2), "garbage");
        } catch (const Error&) {
          // The root may not listen yet, or may have dropped us already.
        }
      }
    });
  }
  auto b = joinJob();
  std::vector<int> all(gSize);
  all[gRank] = gRank + 1;
  b->allGather(all.data(), sizeof(int));
  for (int r = 0; r < gSize; ++r) check(all[r] == r + 1, "allGather after garbage");
  b->barrier();
  stop = true;
  if (stranger.joinable()) stranger.join();
  std::printf("rank %d: job formed despite garbage\n", gRank);
  return 0;
}

int scenarioAbort(int victim) {
  auto b = joinJob();
  Communicator comm(b, kHostDevice);
  auto conn =
      gRank != victim ? comm.connect(victim, 0, Transport::Tcp) : std::shared_future<std::shared_ptr<Connection>>();
  if (gRank == victim) {
    for (int p = 0; p < gSize; ++p)
      if (p != gRank) comm.connect(p, 0, Transport::Tcp).get();
    b->barrier();
    raise(SIGKILL);
  }
  for (int p = 0; p < gSize; ++p)
    if (p != gRank && p != victim) comm.connect(p, 0, Transport::Tcp).get();
  conn.get();
  b->barrier();
  // A call blocked on the dead rank, and abort from another thread: both return at once.
  std::atomic<bool> returned{false};
  std::string blockedError;
  std::thread blocked([&]() {
    try {
      b->recv(victim, 77, 8);
    } catch (const Error& e) {
      blockedError = e.what();
    }
    returned = true;
  });
  Clock::time_point t = Clock::now();
  comm.abort();
  double abortSeconds = since(t);
  blocked.join();
  std::printf("rank %d: abort returned in %.3f s; blocked call: %s\n", gRank, abortSeconds, blockedError.c_str());
  check(abortSeconds < 1.0, "abort took too long");
  check(!blockedError.empty(), "the blocked call did not fail");
  try {
    comm.connect(victim, 1, Transport::Tcp);
    fail("connect after abort did not fail");
  } catch (const Error& e) {
    check(e.code() == ErrorCode::Aborted, std::string("not Aborted: ") + e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: runtime_mp_worker bootstrap|transfer MODE|kill RANK|missing|garbage|abort RANK\n");
    return 2;
  }
  gRank = envInt("RANK");
  gSize = envInt("WORLD_SIZE");
  std::string scenario = argv[1];
  std::string arg = argc > 2 ? argv[2] : "";
  try {
    if (scenario == "bootstrap") return scenarioBootstrap();
    if (scenario == "transfer") return scenarioTransfer(arg.empty() ? "auto" : arg);
    if (scenario == "kill") return scenarioKill(std::atoi(arg.c_str()));
    if (scenario == "missing") return scenarioMissing();
    if (scenario == "garbage") return scenarioGarbage();
    if (scenario == "abort") return scenarioAbort(std::atoi(arg.c_str()));
  } catch (const std::exception& e) {
    fail(std::string("uncaught: ") + e.what());
  }
  std::fprintf(stderr, "runtime_mp_worker: unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
