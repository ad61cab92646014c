// Overlapping communication with computation, from MSCCL++'s design document.
// One thread hands a 1 KB transfer to the host proxy with putWithSignal
// over a port channel (ProxyChannel). The kernel computes a matrix product
// while the proxy moves the data by cudaMemcpy, RDMA, TCP or a host copy.
// At the end it flushes, so the source may be reused, and waits for the
// peer's data. Both ranks do the same towards each other.
#ifndef MSCCLPP_EXAMPLES_OVERLAP_HPP_
#define MSCCLPP_EXAMPLES_OVERLAP_HPP_

#include "common/example_support.hpp"

namespace mscclpp {
namespace examples {

constexpr uint64_t kOverlapBytes = 1024;
constexpr uint32_t kOverlapMatrixDim = 48;

MSCCLPP_HOST_DEVICE_INLINE uint32_t overlapWord(int rank, uint64_t i) {
  return static_cast<uint32_t>(rank) * 0x01000000u + 0xc0000u + static_cast<uint32_t>(i);
}
MSCCLPP_HOST_DEVICE_INLINE uint32_t overlapA(uint32_t i, uint32_t k) { return (i + 2 * k) % 17; }
MSCCLPP_HOST_DEVICE_INLINE uint32_t overlapB(uint32_t k, uint32_t j, int rank) {
  return (3 * k + j + static_cast<uint32_t>(rank)) % 13;
}

struct OverlapKernel {
  ProxyChannelDeviceHandle* proxyChannel;
  const uint32_t* a;
  const uint32_t* b;
  uint32_t* c;
  uint32_t n;
  uint64_t bytes;

  MSCCLPP_HOST_DEVICE void operator()() const {
    uint32_t tid = threadIndex() + blockIndex() * blockThreads();
    uint32_t nThreads = gridBlocks() * blockThreads();
    // Send a trigger to the CPU.
    if (tid == 0) {
      proxyChannel[0].putWithSignal(/*dstOffset=*/0, /*srcOffset=*/0, /*size=*/bytes);
    }
    // Continue computation: c = a * b, independent of the transfer in flight.
    for (uint32_t idx = tid; idx < n * n; idx += nThreads) {
      uint32_t i = idx / n, j = idx % n, sum = 0;
      for (uint32_t k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
      c[idx] = sum;
    }
    // Before the kernel ends: flush, so our source may be overwritten after it;
    // wait, which acquires the peer's data.
    if (tid == 0) {
      proxyChannel[0].flush();
      proxyChannel[0].wait();
    }
  }
};

struct OverlapResult {
  std::vector<uint32_t> received;  // the peer's words
  std::vector<uint32_t> product;   // the matrix computed meanwhile
  std::string summary;
  std::string mismatch;
};

// The product the kernel must compute on `rank` (checked on the host).
inline std::vector<uint32_t> overlapExpectedProduct(int rank) {
  const uint32_t n = kOverlapMatrixDim;
  std::vector<uint32_t> c(n * n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < n; ++j) {
      uint32_t sum = 0;
      for (uint32_t k = 0; k < n; ++k) sum += overlapA(i, k) * overlapB(k, j, rank);
      c[i * n + j] = sum;
    }
  }
  return c;
}

inline OverlapResult runOverlap(RankContext& ctx) {
  ctx.requireRanks("overlap", 2);
  Communicator& comm = *ctx.comm;
  const int peer = 1 - ctx.rank();
  const int device = ctx.device();
  const Transport transport = ctx.portTransport(peer);
  const uint64_t bytes = kOverlapBytes;
  const uint32_t n = kOverlapMatrixDim;

  std::vector<uint32_t> words(bytes / 4), av(n * n), bv(n * n);
  for (uint64_t i = 0; i < words.size(); ++i) words[i] = overlapWord(ctx.rank(), i);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t k = 0; k < n; ++k) {
      av[i * n + k] = overlapA(i, k);
      bv[i * n + k] = overlapB(i, k, ctx.rank());
    }
  }
  Buffer<uint32_t> send(device, words), recv(device, bytes / 4);
  Buffer<uint32_t> a(device, av), b(device, bv), c(device, n * n);

  // The proxy needs our source and the peer's destination registered.
  auto connection = comm.connect(peer, 0, transport);
  RegisteredMemory sendMem = comm.registerMemory(send.data(), bytes, transport);
  RegisteredMemory recvMem = comm.registerMemory(recv.data(), bytes, transport);
  comm.sendMemory(recvMem, peer, 0);
  RegisteredMemory peerRecv = comm.recvMemory(peer, 0).get();

  ProxyService proxy(kDefaultFifoSize, device);
  proxy.setErrorHandler([&comm](const Error& e) { comm.setAsyncError(e.code(), e.what()); });
  SemaphoreId semaphore = proxy.buildAndAddSemaphore(comm, connection.get());
  ProxyChannel channel = proxy.portChannel(semaphore, proxy.addMemory(peerRecv), proxy.addMemory(sendMem));
  Buffer<ProxyChannelDeviceHandle> handles(device, std::vector<ProxyChannelDeviceHandle>{channel.deviceHandle()});
  proxy.startProxy();
  comm.bootstrap()->barrier();  // both proxies run before either kernel waits on the other

  launchKernel(device, OverlapKernel{handles.data(), a.data(), b.data(), c.data(), n, bytes}, {4, 128});
  // Keep the proxy and our memory until the peer's transfers are done too.
  comm.bootstrap()->barrier();
  proxy.stopProxy();
  throwIfAsyncError(comm);

  OverlapResult result;
  result.received = recv.download();
  result.product = c.download();
  for (uint64_t i = 0; i < result.received.size() && result.mismatch.empty(); ++i) {
    if (result.received[i] != overlapWord(peer, i)) {
      result.mismatch = firstMismatch("received word", i, result.received[i], overlapWord(peer, i));
    }
  }
  std::vector<uint32_t> expected = overlapExpectedProduct(ctx.rank());
  for (uint64_t i = 0; i < expected.size() && result.mismatch.empty(); ++i) {
    if (result.product[i] != expected[i]) result.mismatch = firstMismatch("product", i, result.product[i], expected[i]);
  }
  result.summary = "putWithSignal of " + std::to_string(bytes) + " bytes over " + transportName(transport) +
                   " overlapped with a " + std::to_string(n) + "x" + std::to_string(n) +
                   " matrix product; both correct (" + std::to_string(proxy.triggersHandled()) +
                   " triggers handled by the proxy)";
  return result;
}

}  // namespace examples
}  // namespace mscclpp

#endif  // MSCCLPP_EXAMPLES_OVERLAP_HPP_
