// The kernel programming model of MSCCL++'s design document.
// Rank 0 puts 1 KB into rank 1's buffer with every thread of one block.
// Then one thread signals; rank 1 waits for it and uses the data.
// A memory channel (SmChannel) moves data by plain stores into a mapping
// of the peer's buffer: CUDA IPC between GPUs, shared memory on the CPU.
#ifndef MSCCLPP_EXAMPLES_PUT_SIGNAL_WAIT_HPP_
#define MSCCLPP_EXAMPLES_PUT_SIGNAL_WAIT_HPP_

#include "common/example_support.hpp"

namespace mscclpp {
namespace examples {

constexpr uint64_t kPutSignalWaitBytes = 1024;

// The byte rank 0 sends at position i in iteration `iteration`.
MSCCLPP_HOST_DEVICE_INLINE uint8_t putSignalWaitByte(int iteration, uint64_t i) {
  return static_cast<uint8_t>((i * 7 + static_cast<uint64_t>(iteration) * 13 + 1) & 0xff);
}

// Rank 0. Each thread copies a strided share. The block barrier orders
// the whole copy before the one signal, whose release publishes it.
struct PutSignalKernel {
  SmChannelDeviceHandle* smChannel;
  uint64_t bytes;

  MSCCLPP_HOST_DEVICE void operator()() const {
    smChannel[0].put(/*dstOffset=*/0, /*srcOffset=*/0, /*size=*/bytes, /*threadId=*/threadIndex(),
                     /*numThreads=*/blockThreads());
    syncBlockThreads();
    if (threadIndex() == 0) {
      smChannel[0].signal();
    }
  }
};

// Rank 1. One thread waits; its acquire pairs with the peer's release.
// After the block barrier every thread may read the data;
// the block copies it into `seen` to show that.
struct WaitKernel {
  SmChannelDeviceHandle* smChannel;
  const uint8_t* received;  // our buffer, which rank 0 writes into
  uint8_t* seen;
  uint64_t bytes;

  MSCCLPP_HOST_DEVICE void operator()() const {
    if (threadIndex() == 0) {
      smChannel[0].wait();
    }
    syncBlockThreads();
    // Data is ready to use.
    for (uint64_t i = threadIndex(); i < bytes; i += blockThreads()) seen[i] = received[i];
  }
};

struct PutSignalWaitResult {
  std::vector<uint8_t> seen;  // rank 1: what its kernel read after each wait
  std::string summary;
  std::string mismatch;
};

inline PutSignalWaitResult runPutSignalWait(RankContext& ctx) {
  ctx.requireRanks("put_signal_wait", 2);
  Communicator& comm = *ctx.comm;
  const int peer = 1 - ctx.rank();
  const int device = ctx.device();
  const Transport transport = ctx.mappingTransport();
  const uint64_t bytes = kPutSignalWaitBytes;

  // Rank 0's buffer is the source, rank 1's the destination.
  Buffer<uint8_t> data(device, bytes);
  Buffer<uint8_t> seen(device, bytes);
  auto connection = comm.connect(peer, 0, transport);
  RegisteredMemory local = comm.registerMemory(data.data(), bytes, transport);
  comm.sendMemory(local, peer, 0);
  RegisteredMemory remote = comm.recvMemory(peer, 0).get();
  auto semaphore = std::make_shared<MemoryDevice2DeviceSemaphore>(comm, connection.get());
  SmChannel channel(semaphore, remote, data.data());
  Buffer<SmChannelDeviceHandle> handles(device, std::vector<SmChannelDeviceHandle>{channel.deviceHandle()});

  PutSignalWaitResult result;
  for (int it = 0; it < ctx.options.iterations; ++it) {
    if (ctx.rank() == 0) {
      std::vector<uint8_t> payload(bytes);
      for (uint64_t i = 0; i < bytes; ++i) payload[i] = putSignalWaitByte(it, i);
      data.upload(payload);
      launchKernel(device, PutSignalKernel{handles.data(), bytes}, {/*blocks=*/1, /*threadsPerBlock=*/256});
    } else {
      launchKernel(device, WaitKernel{handles.data(), data.data(), seen.data(), bytes}, {1, 256});
      std::vector<uint8_t> got = seen.download();
      for (uint64_t i = 0; i < bytes && result.mismatch.empty(); ++i) {
        if (got[i] != putSignalWaitByte(it, i)) {
          result.mismatch =
              "iteration " + std::to_string(it) + ": " + firstMismatch("byte", i, got[i], putSignalWaitByte(it, i));
        }
      }
      result.seen.insert(result.seen.end(), got.begin(), got.end());
    }
    // Rank 0 overwrites rank 1's buffer only after rank 1 has read it.
    comm.bootstrap()->barrier();
  }
  std::string how = std::string(" over ") + transportName(transport) + " on " +
                    (device == kHostDevice ? std::string("the CPU backend") : "GPU " + std::to_string(device));
  result.summary = ctx.rank() == 0 ? "put " + std::to_string(bytes) + " bytes and signalled rank 1, " +
                                         std::to_string(ctx.options.iterations) + " times" + how
                                   : "waited, then read " + std::to_string(bytes) + " correct bytes from rank 0, " +
                                         std::to_string(ctx.options.iterations) + " times" + how;
  return result;
}

}  // namespace examples
}  // namespace mscclpp

#endif  // MSCCLPP_EXAMPLES_PUT_SIGNAL_WAIT_HPP_
