// A program outside the mscclpp tree, built against the INSTALLED library only:
//   c++ -std=c++17 hello.cc $(pkg-config --cflags --libs mscclpp) -pthread -o hello
// Two ranks as threads on the CPU backend. A memory channel over shared
// memory puts, signals and waits in a launched kernel; a port channel over
// TCP does putWithSignal and wait through a ProxyService.
// Prints one line per rank; exits 0 when every word arrived intact.
#include <cstdio>
#include <memory>
#include <mscclpp/mscclpp.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kWords = 256;

struct SendKernel {
  mscclpp::SmChannelDeviceHandle* channel;
  MSCCLPP_HOST_DEVICE void operator()() const {
    channel->put(0, 0, kWords * sizeof(uint32_t), mscclpp::threadIndex(), mscclpp::blockThreads());
    mscclpp::syncBlockThreads();
    if (mscclpp::threadIndex() == 0) channel->signal();
  }
};

struct WaitKernel {
  mscclpp::SmChannelDeviceHandle* channel;
  MSCCLPP_HOST_DEVICE void operator()() const {
    if (mscclpp::threadIndex() == 0) channel->wait();
    mscclpp::syncBlockThreads();
  }
};

// Returns the number of wrong words this rank saw.
size_t runRank(const mscclpp::UniqueId& id, int rank) {
  using namespace mscclpp;
  auto comm = createCommunicator(id, rank, 2, kHostDevice);
  const int peer = 1 - rank;
  auto send = allocSharedHost<uint32_t>(kWords), recvShm = allocSharedHost<uint32_t>(kWords),
       recvTcp = allocSharedHost<uint32_t>(kWords);
  for (size_t i = 0; i < kWords; ++i) send.get()[i] = static_cast<uint32_t>(rank * 1000 + i);

  // Memory channel: our send buffer -> the peer's recvShm.
  // Registrations live while the peer writes; the last copy deregisters.
  auto shm = comm->connect(peer, 0, Transport::HostShm);
  RegisteredMemory recvShmMem = comm->registerMemory(recvShm.get(), kWords * 4, Transport::HostShm);
  comm->sendMemory(recvShmMem, peer, 0);
  RegisteredMemory peerShm = comm->recvMemory(peer, 0).get();
  auto sem = std::make_shared<SmDevice2DeviceSemaphore>(*comm, shm.get());
  SmChannel memoryChannel(sem, peerShm, send.get());
  DeviceHandle<SmChannel> mh = memoryChannel.deviceHandle();
  if (rank == 0) {
    launchKernel(comm->device(), SendKernel{&mh});
  } else {
    launchKernel(comm->device(), WaitKernel{&mh});
  }

  // Port channel: our send buffer -> the peer's recvTcp, by our proxy over TCP.
  auto tcp = comm->connect(peer, 1, Transport::Tcp);
  RegisteredMemory sendMem = comm->registerMemory(send.get(), kWords * 4, Transport::Tcp);
  RegisteredMemory recvTcpMem = comm->registerMemory(recvTcp.get(), kWords * 4, Transport::Tcp);
  comm->sendMemory(recvTcpMem, peer, 1);
  RegisteredMemory peerTcp = comm->recvMemory(peer, 1).get();
  ProxyService proxy;
  SemaphoreId sid = proxy.buildAndAddSemaphore(*comm, tcp.get());
  ProxyChannel portChannel = proxy.portChannel(sid, proxy.addMemory(peerTcp), proxy.addMemory(sendMem));
  DeviceHandle<ProxyChannel> ph = portChannel.deviceHandle();
  proxy.startProxy();
  ph.putWithSignal(0, kWords * 4);
  ph.wait();
  ph.flush();
  comm->bootstrap()->barrier();
  proxy.stopProxy();

  size_t wrong = 0;
  for (size_t i = 0; i < kWords; ++i) {
    uint32_t expected = static_cast<uint32_t>(peer * 1000 + i);
    if (recvTcp.get()[i] != expected) ++wrong;
    // Only rank 1 receives over the memory channel.
    if (rank == 1 && recvShm.get()[i] != expected) ++wrong;
  }
  return wrong;
}

}  // namespace

int main() {
  mscclpp::UniqueId id = mscclpp::TcpBootstrap::createUniqueId();
  std::vector<size_t> wrong(2, 0);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        wrong[r] = runRank(id, r);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  int status = 0;
  for (int r = 0; r < 2; ++r) {
    if (!errors[r].empty()) {
      std::printf("external: rank %d: FAILED: %s\n", r, errors[r].c_str());
      status = 1;
    } else if (wrong[r] != 0) {
      std::printf("external: rank %d: FAILED: %zu wrong words\n", r, wrong[r]);
      status = 1;
    } else {
      std::printf("external: rank %d: memory channel (SHM) and port channel (TCP) delivered %zu words: OK\n", r,
                  kWords);
    }
  }
  return status;
}
