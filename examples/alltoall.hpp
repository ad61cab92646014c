// The custom all-to-all of MSCCL++'s design document, over port channels.
// Block b of rank r owns the channel to rank b (b < r) or b + 1.
// In step i each rank sends its chunk for rank r + i with
// putWithSignalAndFlush and waits for rank r - i's; a DeviceSyncer keeps
// the blocks in step. Chunk p of the send buffer is for rank p; chunk p
// of the receive buffer ends holding what rank p sent.
// The syncer is a kernel argument, not a __device__ global as in MSCCL++'s
// listing: ranks that are threads of one process would share a global.
#ifndef MSCCLPP_EXAMPLES_ALLTOALL_HPP_
#define MSCCLPP_EXAMPLES_ALLTOALL_HPP_

#include "common/example_support.hpp"

namespace mscclpp {
namespace examples {

constexpr size_t kAlltoallElements = 1024;  // ints per chunk

// The int rank `from` sends to rank `to` at position i of the chunk.
MSCCLPP_HOST_DEVICE_INLINE int alltoallValue(int from, int to, size_t i) {
  return from * 0x1000000 + to * 0x10000 + static_cast<int>(i);
}

// MSCCL++'s localAlltoall, but for the syncer argument and the grid position.
MSCCLPP_HOST_DEVICE_INLINE void localAlltoall(DeviceHandle<ProxyChannel>* proxyChans, DeviceSyncer* deviceSyncer,
                                              int rank, int nRanksPerNode, size_t nElements) {
  int remoteRank =
      (static_cast<int>(blockIndex()) < rank) ? static_cast<int>(blockIndex()) : static_cast<int>(blockIndex()) + 1;
  for (int i = 1; i < nRanksPerNode; i++) {
    DeviceHandle<ProxyChannel> proxyChan = proxyChans[blockIndex()];
    if (threadIndex() == 0 && remoteRank % nRanksPerNode == (rank + i) % nRanksPerNode) {
      proxyChan.putWithSignalAndFlush(rank * nElements * sizeof(int), remoteRank * nElements * sizeof(int),
                                      nElements * sizeof(int));
    }
    // wait for the data from GPU (rank-i) % nranksPerNode to arrive
    if (threadIndex() == 0 && remoteRank % nRanksPerNode == (rank - i + nRanksPerNode) % nRanksPerNode) {
      proxyChan.wait();
    }
    deviceSyncer->sync(nRanksPerNode - 1);
  }
}

// nRanks - 1 blocks. Block 0 also copies our own chunk, which does not travel.
struct AlltoallKernel {
  DeviceHandle<ProxyChannel>* proxyChans;
  DeviceSyncer* deviceSyncer;
  const int* send;
  int* recv;
  int rank;
  int nRanksPerNode;
  size_t nElements;

  MSCCLPP_HOST_DEVICE void operator()() const {
    if (blockIndex() == 0) {
      mscclpp::copy(recv + rank * nElements, send + rank * nElements, nElements * sizeof(int), threadIndex(),
                    blockThreads());
    }
    localAlltoall(proxyChans, deviceSyncer, rank, nRanksPerNode, nElements);
  }
};

struct AlltoallResult {
  std::vector<int> received;  // nRanks chunks
  std::string summary;
  std::string mismatch;
};

inline AlltoallResult runAlltoall(RankContext& ctx) {
  Communicator& comm = *ctx.comm;
  const int rank = ctx.rank(), nRanks = ctx.nRanks();
  const int device = ctx.device();
  const size_t nElements = kAlltoallElements;
  if (nRanks < 2 || comm.nRanksPerNode() != nRanks) {
    throw Error(ErrorCode::InvalidArgument, "alltoall (localAlltoall) needs at least 2 ranks, all on one node (got " +
                                                std::to_string(nRanks) + " ranks, " +
                                                std::to_string(comm.nRanksPerNode()) + " on this node)");
  }

  std::vector<int> sendValues(nRanks * nElements);
  for (int to = 0; to < nRanks; ++to) {
    for (size_t i = 0; i < nElements; ++i) sendValues[to * nElements + i] = alltoallValue(rank, to, i);
  }
  Buffer<int> send(device, sendValues), recv(device, nRanks * nElements);
  Buffer<DeviceSyncer> syncer(device, 1);  // zeroed, as DeviceSyncer requires

  // Post every connect and exchange before waiting: no ordering deadlock.
  ProxyService proxy(kDefaultFifoSize, device);
  proxy.setErrorHandler([&comm](const Error& e) { comm.setAsyncError(e.code(), e.what()); });
  std::vector<int> peers;
  for (int p = 0; p < nRanks; ++p) {
    if (p != rank) peers.push_back(p);  // block b serves peers[b], as localAlltoall computes
  }
  std::vector<std::shared_future<std::shared_ptr<Connection>>> connections;
  std::vector<std::shared_future<RegisteredMemory>> peerRecvs;
  // Registrations stay alive while peers write into them:
  // dropping the last copy deregisters the buffer (a TCP key, an IB region).
  std::vector<RegisteredMemory> sendMems, recvMems;
  for (int p : peers) {
    Transport t = ctx.portTransport(p);
    connections.push_back(comm.connect(p, 0, t));
    sendMems.push_back(comm.registerMemory(send.data(), send.bytes(), t));
    recvMems.push_back(comm.registerMemory(recv.data(), recv.bytes(), t));
    comm.sendMemory(recvMems.back(), p, 0);
    peerRecvs.push_back(comm.recvMemory(p, 0));
  }
  // Semaphores are built pairwise; ascending peer order forms no wait cycle.
  std::vector<DeviceHandle<ProxyChannel>> handles;
  for (size_t b = 0; b < peers.size(); ++b) {
    SemaphoreId sem = proxy.buildAndAddSemaphore(comm, connections[b].get());
    ProxyChannel ch = proxy.portChannel(sem, proxy.addMemory(peerRecvs[b].get()), proxy.addMemory(sendMems[b]));
    handles.push_back(ch.deviceHandle());
  }
  Buffer<DeviceHandle<ProxyChannel>> proxyChans(device, handles);
  proxy.startProxy();
  // Every rank's channels and proxy are ready before any kernel waits on them.
  comm.bootstrap()->barrier();

  launchKernel(
      device,
      AlltoallKernel{proxyChans.data(), syncer.data(), send.data(), recv.data(), rank, comm.nRanksPerNode(), nElements},
      {static_cast<uint32_t>(nRanks - 1), 256});
  comm.bootstrap()->barrier();  // every peer's transfers into our buffer are complete
  proxy.stopProxy();
  throwIfAsyncError(comm);

  AlltoallResult result;
  result.received = recv.download();
  for (int from = 0; from < nRanks && result.mismatch.empty(); ++from) {
    for (size_t i = 0; i < nElements; ++i) {
      int expected = alltoallValue(from, rank, i);
      int got = result.received[from * nElements + i];
      if (got != expected) {
        result.mismatch = "chunk from rank " + std::to_string(from) + ": " +
                          firstMismatch("int", i, static_cast<uint32_t>(got), static_cast<uint32_t>(expected));
        break;
      }
    }
  }
  result.summary = "all-to-all of " + std::to_string(nElements) + " ints per rank pair among " +
                   std::to_string(nRanks) + " ranks (" + std::to_string(nRanks - 1) + " blocks, DeviceSyncer) correct";
  return result;
}

}  // namespace examples
}  // namespace mscclpp

#endif  // MSCCLPP_EXAMPLES_ALLTOALL_HPP_
