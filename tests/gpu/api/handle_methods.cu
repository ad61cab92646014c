// Every device-handle method of the public API inside launched kernels, written once for both
// backends: nvcc builds run it on a GPU (--device gpu; exit 77, skipped, without a visible one);
// every build also runs the same text on the CPU backend (--device cpu) in CI, which checks the
// scenario logic and the expected values themselves.
//
// Two ranks (threads). Each rank's buffer `mem` (64 KiB) is laid out in 32-bit words:
//   [0, 1024) send | [1024, 2048) memory-channel put target | [2048, 3072) get target |
//   [3072, 3104) scratch for write/read | [4096, 5120) LL16 output | [5120, 6144) LL8 output |
//   [6144, 7168) port-channel target | bytes [32768, 40960) LL16 packets | [40960, 49152) LL8 packets
// Kernels count what they find wrong in `out` (one counter per check); the host prints each one.
#include "common/example_support.hpp"

namespace mscclpp {
namespace examples {
namespace {

constexpr uint64_t kWords = 16384;  // 64 KiB
constexpr uint64_t kChunk = 1024;   // words per area
constexpr uint64_t kRecv = 1024, kGetArea = 2048, kScratch = 3072, kLL16Out = 4096, kLL8Out = 5120, kPortRecv = 6144;
constexpr uint64_t kLL16Packets = 32768, kLL8Packets = 40960;  // byte offsets
constexpr uint64_t kMs = 1000000ull;

MSCCLPP_HOST_DEVICE_INLINE uint32_t sendWord(int rank, uint64_t i) {
  return static_cast<uint32_t>(rank + 1) * 0x100000u + static_cast<uint32_t>(i);
}

// Counters of `out`, one per check.
enum Check : uint32_t {
  kPutSignalWait,
  kGet,
  kWriteRead,
  kRelaxed,
  kPacketsLL16,
  kPacketsLL8,
  kPortChannel,
  kPortInvalid,
  kSyncer,
  kWaitForTimeout,
  kPollEmpty,
  kPortWaitTimeout,
  kNumChecks
};
const char* const kCheckNames[kNumChecks] = {
    "memory channel put + signal / wait",
    "memory channel get",
    "memory channel write / read",
    "memory channel relaxedSignal / relaxedWait",
    "getPackets (LL16)",
    "getPackets (LL8)",
    "port channel put / signal / putWithSignal / putWithSignalAndFlush / flush / wait",
    "port channel status variant refuses memory id 600",
    "DeviceSyncer::sync over 4 blocks, 10 rounds",
    "waitFor(20 ms) without a signal times out",
    "poll() without a signal is false",
    "port channel wait(deadline) without a signal times out"};

MSCCLPP_HOST_DEVICE_INLINE void bump(uint32_t* out, Check c, uint32_t n = 1) {
  atomicFetchAdd<uint32_t, scopeDevice>(out + c, n, memoryOrderRelaxed);
}

// Counts words of area [first, first + kChunk) of `mem` that differ from the peer's send words.
MSCCLPP_HOST_DEVICE_INLINE void checkArea(const uint32_t* mem, uint64_t first, int peer, uint32_t* out, Check c) {
  uint32_t wrong = 0;
  for (uint64_t i = threadIndex(); i < kChunk; i += blockThreads()) wrong += mem[first + i] != sendWord(peer, i);
  if (wrong != 0) bump(out, c, wrong);
}

struct MemoryChannelKernel {
  SmChannelDeviceHandle* ch;
  uint32_t* mem;
  uint32_t* out;
  int rank;

  MSCCLPP_HOST_DEVICE void operator()() const {
    const int peer = 1 - rank;
    const uint32_t tid = threadIndex(), n = blockThreads();
    // put + signal / wait, symmetric: both ranks put first, so neither waits for the other's wait.
    ch->put(/*dstOffset=*/kRecv * 4, /*srcOffset=*/0, kChunk * 4, tid, n);
    syncBlockThreads();
    if (tid == 0) {
      ch->signal();
      ch->wait();
    }
    syncBlockThreads();
    checkArea(mem, kRecv, peer, out, kPutSignalWait);
    // get: the peer's send area into our get area; the peer no longer writes it.
    ch->get(/*remoteOffset=*/0, /*localOffset=*/kGetArea * 4, kChunk * 4, tid, n);
    syncBlockThreads();
    checkArea(mem, kGetArea, peer, out, kGet);
    // write / read by element, published with signal / wait.
    if (tid == 0) {
      ch->write<uint32_t>(kScratch + rank, 0xabc0u + rank);
      ch->signal();
      ch->wait();
      if (mem[kScratch + peer] != 0xabc0u + peer) bump(out, kWriteRead);
      if (ch->read<uint32_t>(kScratch + rank) != 0xabc0u + rank) bump(out, kWriteRead);
      // relaxed: execution order only; both directions, then a status check.
      ch->relaxedSignal();
      if (ch->relaxedWait(deadlineAfter(10000 * kMs), nullptr) != SpinStatus::Ok) bump(out, kRelaxed);
    }
    syncBlockThreads();
    // LL packets: no signal needed, the flags say when each packet arrived.
    ch->putPackets<LL16Packet>(kLL16Packets, 0, kChunk * 4, tid, n, /*flag=*/1);
    ch->putPackets<LL8Packet>(kLL8Packets, 0, kChunk * 4, tid, n, /*flag=*/2);
    ch->getPackets<LL16Packet>(/*packetOffset=*/0, kLL16Out * 4, kChunk * 4, tid, n, /*flag=*/1);
    ch->getPackets<LL8Packet>(/*packetOffset=*/kLL8Packets - kLL16Packets, kLL8Out * 4, kChunk * 4, tid, n, 2);
    syncBlockThreads();
    checkArea(mem, kLL16Out, peer, out, kPacketsLL16);
    checkArea(mem, kLL8Out, peer, out, kPacketsLL8);
  }
};

struct PortChannelKernel {
  ProxyChannelDeviceHandle* ch;
  uint32_t* mem;
  uint32_t* out;
  int rank;

  MSCCLPP_HOST_DEVICE void operator()() const {
    if (threadIndex() == 0) {
      const uint64_t q = kChunk;  // bytes per quarter of the 4 KiB chunk
      ch->put(kPortRecv * 4, 0, q);
      ch->signal();
      ch->putWithSignal(kPortRecv * 4 + q, q, q);
      ch->putWithSignalAndFlush(kPortRecv * 4 + 2 * q, 2 * q, q);
      ch->put(kPortRecv * 4 + 3 * q, 3 * q, q);
      ch->flush();
      ch->signal();
      for (int i = 0; i < 4; ++i) ch->wait();
      if (ch->put(/*dst=*/600, 0, ch->src_, 0, 8, deadlineAfter(1000 * kMs), nullptr) != SpinStatus::Invalid) {
        bump(out, kPortInvalid);
      }
    }
    syncBlockThreads();
    checkArea(mem, kPortRecv, 1 - rank, out, kPortChannel);
  }
};

struct SyncerKernel {
  DeviceSyncer* syncer;
  uint32_t* slots;
  uint32_t* out;

  MSCCLPP_HOST_DEVICE void operator()() const {
    const uint32_t b = blockIndex(), nb = gridBlocks();
    for (uint32_t round = 1; round <= 10; ++round) {
      if (threadIndex() == 0) slots[b] = round;
      syncer->sync(nb);
      if (threadIndex() == 0) {
        for (uint32_t k = 0; k < nb; ++k) {
          if (atomicLoad<uint32_t, scopeDevice>(&slots[k], memoryOrderRelaxed) != round) bump(out, kSyncer);
        }
      }
      syncer->sync(nb);
    }
  }
};

// Last: waits that cannot succeed (they leave the semaphores unusable, which is why they come last).
struct TimeoutKernel {
  SmChannelDeviceHandle* ch;
  ProxyChannelDeviceHandle* port;
  uint32_t* out;

  MSCCLPP_HOST_DEVICE void operator()() const {
    if (threadIndex() != 0) return;
    if (ch->poll()) bump(out, kPollEmpty);
    if (ch->waitFor(20 * kMs) != SpinStatus::Timeout) bump(out, kWaitForTimeout);
    if (port->wait(deadlineAfter(20 * kMs), nullptr) != SpinStatus::Timeout) bump(out, kPortWaitTimeout);
  }
};

struct HandleMethodsResult {
  std::vector<uint32_t> counts;
  std::string summary;
  std::string mismatch;
};

HandleMethodsResult runHandleMethods(RankContext& ctx) {
  ctx.requireRanks("handle_methods", 2);
  Communicator& comm = *ctx.comm;
  const int rank = ctx.rank(), peer = 1 - rank, device = ctx.device();
  std::vector<uint32_t> init(kWords, 0);
  for (uint64_t i = 0; i < kChunk; ++i) init[i] = sendWord(rank, i);
  Buffer<uint32_t> mem(device, init), out(device, kNumChecks), slots(device, 4);
  Buffer<DeviceSyncer> syncer(device, 1);

  const Transport mapping = ctx.mappingTransport(), port = ctx.portTransport(peer);
  auto memConn = comm.connect(peer, 0, mapping);
  auto portConn = comm.connect(peer, 1, port);
  RegisteredMemory mine = comm.registerMemory(mem.data(), mem.bytes(), mapping | port);
  comm.sendMemory(mine, peer, 0);
  RegisteredMemory theirs = comm.recvMemory(peer, 0).get();
  auto sem = std::make_shared<SmDevice2DeviceSemaphore>(comm, memConn.get());
  SmChannel memoryChannel(sem, theirs, mem.data(), reinterpret_cast<char*>(mem.data()) + kLL16Packets);
  ProxyService proxy(kDefaultFifoSize, device);
  proxy.setErrorHandler([&comm](const Error& e) { comm.setAsyncError(e.code(), e.what()); });
  SemaphoreId sid = proxy.buildAndAddSemaphore(comm, portConn.get());
  ProxyChannel portChannel = proxy.portChannel(sid, proxy.addMemory(theirs), proxy.addMemory(mine));
  Buffer<SmChannelDeviceHandle> mh(device, std::vector<SmChannelDeviceHandle>{memoryChannel.deviceHandle()});
  Buffer<ProxyChannelDeviceHandle> ph(device, std::vector<ProxyChannelDeviceHandle>{portChannel.deviceHandle()});
  proxy.startProxy();
  comm.bootstrap()->barrier();  // both sides are set up before kernels wait on each other

  launchKernel(device, MemoryChannelKernel{mh.data(), mem.data(), out.data(), rank}, {1, 128});
  launchKernel(device, PortChannelKernel{ph.data(), mem.data(), out.data(), rank}, {1, 128});
  launchKernel(device, SyncerKernel{syncer.data(), slots.data(), out.data()}, {4, 64});
  comm.bootstrap()->barrier();  // every signal above was consumed before the timeouts run
  launchKernel(device, TimeoutKernel{mh.data(), ph.data(), out.data()}, {1, 32});
  comm.bootstrap()->barrier();
  proxy.stopProxy();
  throwIfAsyncError(comm);

  HandleMethodsResult result;
  result.counts = out.download();
  for (uint32_t c = 0; c < kNumChecks; ++c) {
    if (result.counts[c] != 0 && result.mismatch.empty()) {
      result.mismatch = std::string(kCheckNames[c]) + ": " + std::to_string(result.counts[c]) + " wrong";
    }
  }
  result.summary = std::to_string(kNumChecks) + " handle checks passed (memory channel over " + transportName(mapping) +
                   ", port channel over " + transportName(port) + ", on " +
                   (device == kHostDevice ? std::string("the CPU backend") : "GPU " + std::to_string(device)) + ")";
  return result;
}

}  // namespace
}  // namespace examples
}  // namespace mscclpp

int main(int argc, char** argv) {
  using namespace mscclpp::examples;
  return exampleMain<HandleMethodsResult>(argc, argv, "handle_methods", 2, runHandleMethods);
}
