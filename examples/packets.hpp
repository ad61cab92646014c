// LL packets, as in MSCCL++'s design document.
// Rank 0 sends 1 KB with putPackets and a flag; rank 1 reads it with
// getPackets and the same flag. Data and flag travel in one store,
// so no signal, wait or fence is needed: a matching flag means arrived.
// Each iteration uses a new flag, so the buffer is reused uncleared:
// old packets carry an old flag and are never taken for new ones.
#ifndef MSCCLPP_EXAMPLES_PACKETS_HPP_
#define MSCCLPP_EXAMPLES_PACKETS_HPP_

#include "common/example_support.hpp"

namespace mscclpp {
namespace examples {

constexpr uint64_t kPacketsBytes = 1024;

MSCCLPP_HOST_DEVICE_INLINE uint32_t packetsWord(int iteration, uint64_t i) {
  return static_cast<uint32_t>(0x5a000000u + static_cast<uint32_t>(iteration) * 0x10000u + static_cast<uint32_t>(i));
}

// Rank 0: each thread writes its share of packets into rank 1's buffer.
template <class Packet>
struct PutPacketsKernel {
  SmChannelDeviceHandle* smChans;
  uint64_t bytes;
  uint32_t flag;

  MSCCLPP_HOST_DEVICE void operator()() const {
    smChans[0].putPackets<Packet>(/*dstOffset=*/0, /*srcOffset=*/0, /*size=*/bytes, /*threadId=*/threadIndex(),
                                  /*numThreads=*/blockThreads(), /*flag=*/flag);
  }
};

// Rank 1: each thread polls its share of our packet buffer until the
// flags match, then unpacks the data into our data buffer.
template <class Packet>
struct GetPacketsKernel {
  SmChannelDeviceHandle* smChans;
  uint64_t bytes;
  uint32_t flag;

  MSCCLPP_HOST_DEVICE void operator()() const {
    smChans[0].getPackets<Packet>(/*packetOffset=*/0, /*dstOffset=*/0, /*size=*/bytes, /*threadId=*/threadIndex(),
                                  /*numThreads=*/blockThreads(), /*flag=*/flag);
    // Data is ready to use.
  }
};

struct PacketsResult {
  std::vector<uint32_t> received;  // rank 1: the words of every iteration, in order
  std::string summary;
  std::string mismatch;
};

// Packet: LL16Packet, 8 data bytes per 16 (the default), or LL8Packet, 4 per 8.
template <class Packet = LL16Packet>
PacketsResult runPackets(RankContext& ctx) {
  ctx.requireRanks("packets", 2);
  Communicator& comm = *ctx.comm;
  const int peer = 1 - ctx.rank();
  const int device = ctx.device();
  const Transport transport = ctx.mappingTransport();
  const uint64_t bytes = kPacketsBytes;
  const uint64_t packetBytes = packetCount<Packet>(bytes) * sizeof(Packet);  // twice the data

  // Rank 0 registers its data, the source; rank 1 its packet buffer,
  // where rank 0's putPackets land. A channel's dst is the peer's buffer,
  // its src our data, its packet buffer ours.
  Buffer<uint32_t> data(device, bytes / 4);
  Buffer<uint8_t> packets(device, ctx.rank() == 1 ? packetBytes : 0);
  void* exported = ctx.rank() == 0 ? static_cast<void*>(data.data()) : static_cast<void*>(packets.data());
  uint64_t exportedBytes = ctx.rank() == 0 ? bytes : packetBytes;
  auto connection = comm.connect(peer, 0, transport);
  RegisteredMemory local = comm.registerMemory(exported, exportedBytes, transport);  // alive while the peer uses it
  comm.sendMemory(local, peer, 0);
  RegisteredMemory remote = comm.recvMemory(peer, 0).get();
  auto semaphore = std::make_shared<MemoryDevice2DeviceSemaphore>(comm, connection.get());
  SmChannel channel(semaphore, remote, data.data(), ctx.rank() == 1 ? packets.data() : nullptr);
  Buffer<SmChannelDeviceHandle> handles(device, std::vector<SmChannelDeviceHandle>{channel.deviceHandle()});

  PacketsResult result;
  for (int it = 0; it < ctx.options.iterations; ++it) {
    const uint32_t flag = static_cast<uint32_t>(it) + 1;  // the same on both sides; never 0
    if (ctx.rank() == 0) {
      std::vector<uint32_t> payload(bytes / 4);
      for (uint64_t i = 0; i < payload.size(); ++i) payload[i] = packetsWord(it, i);
      data.upload(payload);
      launchKernel(device, PutPacketsKernel<Packet>{handles.data(), bytes, flag}, {1, 256});
    } else {
      launchKernel(device, GetPacketsKernel<Packet>{handles.data(), bytes, flag}, {1, 256});
      std::vector<uint32_t> got = data.download();
      for (uint64_t i = 0; i < got.size() && result.mismatch.empty(); ++i) {
        if (got[i] != packetsWord(it, i)) {
          result.mismatch =
              "iteration " + std::to_string(it) + ": " + firstMismatch("word", i, got[i], packetsWord(it, i));
        }
      }
      result.received.insert(result.received.end(), got.begin(), got.end());
    }
    // Rank 0 writes the next flag's packets only after rank 1 read these.
    comm.bootstrap()->barrier();
  }
  const char* kind = sizeof(Packet) == 16 ? "LL16" : "LL8";
  result.summary = ctx.rank() == 0
                       ? "put " + std::to_string(bytes) + " bytes as " + std::to_string(packetBytes) + " bytes of " +
                             kind + " packets, flags 1.." + std::to_string(ctx.options.iterations)
                       : "got " + std::to_string(bytes) + " correct bytes from " + kind + " packets, flags 1.." +
                             std::to_string(ctx.options.iterations);
  return result;
}

}  // namespace examples
}  // namespace mscclpp

#endif  // MSCCLPP_EXAMPLES_PACKETS_HPP_
