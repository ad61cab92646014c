// The public API's shape: MSCCL++'s spellings (SmChannel, ProxyChannel,
// DeviceHandle<T>), handles copied to a device as bytes, communicators from a
// unique id or a bootstrap, connections over each transport, and switch
// channels driven by a launched kernel.
#include <catch2/catch.hpp>
#include <type_traits>

#include "api_test_util.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

// MSCCL++'s names are the same types, not look-alikes.
static_assert(std::is_same<SmChannel, MemoryChannel>::value, "SmChannel is MemoryChannel");
static_assert(std::is_same<ProxyChannel, PortChannel>::value, "ProxyChannel is PortChannel");
static_assert(std::is_same<DeviceHandle<SmChannel>, SmChannelDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<MemoryChannel>, MemoryChannelDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<ProxyChannel>, ProxyChannelDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<PortChannel>, PortChannelDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<BasePortChannel>, PortChannelDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<SwitchChannel>, SwitchChannelDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<Host2DeviceSemaphore>, Host2DeviceSemaphoreDeviceHandle>::value, "");
static_assert(std::is_same<DeviceHandle<SmDevice2DeviceSemaphore>, MemoryDevice2DeviceSemaphoreDeviceHandle>::value,
              "");
// Everything a kernel receives is copied to the device as bytes.
static_assert(std::is_trivially_copyable<MemoryChannelDeviceHandle>::value, "");
static_assert(std::is_trivially_copyable<PortChannelDeviceHandle>::value, "");
static_assert(std::is_trivially_copyable<SwitchChannelDeviceHandle>::value, "");
static_assert(std::is_trivially_copyable<FifoDeviceHandle>::value, "");
static_assert(std::is_trivially_copyable<DeviceSyncer>::value, "");
static_assert(std::is_trivially_copyable<LL16Packet>::value && sizeof(LL16Packet) == 16, "");
static_assert(std::is_trivially_copyable<LL8Packet>::value && sizeof(LL8Packet) == 8, "");

TEST_CASE("communicators from a unique id or an existing bootstrap", "[api][communicator]") {
  const int n = 3;
  UniqueId id = TcpBootstrap::createUniqueId();
  std::vector<std::shared_ptr<Communicator>> comms(n);
  runRanks(n, [&](int r) { comms[r] = createCommunicator(id, r, n, kHostDevice); });
  std::vector<int> gathered(n, -1);
  runRanks(n, [&](int r) {
    REQUIRE(comms[r]->rank() == r);
    REQUIRE(comms[r]->size() == n);
    REQUIRE(comms[r]->nRanksPerNode() == n);
    REQUIRE(comms[r]->device() == kHostDevice);
    int mine = 100 + r;
    std::vector<int> all(n);
    all[r] = mine;
    comms[r]->bootstrap()->allGather(all.data(), sizeof(int));
    if (r == 0) gathered = all;
  });
  CHECK(gathered == std::vector<int>({100, 101, 102}));

  auto group = InProcessBootstrap::createGroup(2);
  std::vector<std::shared_ptr<Communicator>> local(2);
  runRanks(2, [&](int r) {
    local[r] = std::make_shared<Communicator>(std::make_shared<InProcessBootstrap>(group, r), kHostDevice);
  });
  CHECK(local[1]->rank() == 1);
  CHECK(local[0]->localRanks() == std::vector<int>({0, 1}));
}

TEST_CASE("connect: SHM and TCP work on CPU; CUDA IPC says why not", "[api][communicator]") {
  auto comms = test::makeHostComms(2);
  std::vector<std::string> shm(2), tcp(2), ipc(2);
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    auto s = c.connect(1 - r, 0, Transport::HostShm);
    auto t = c.connect(1 - r, 1, Transport::Tcp);
    shm[r] = s.get()->getTransportName();
    tcp[r] = t.get()->describe();
  });
  CHECK(shm[0] == "SHM -> SHM");
  CHECK(tcp[0] == "rank 0 -> rank 1 over TCP");
  CHECK(tcp[1] == "rank 1 -> rank 0 over TCP");
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    ipc[r] = test::errorOf([&] { c.connect(1 - r, 2, Transport::CudaIpc).get(); });
  });
#if !EXAMPLES_BUILT_WITH_NVCC
  CHECK(ipc[0] == "communicator rank 0/2: connect to rank 1 over IPC (tag 2): this build has no CUDA support");
  CHECK(ipc[1] == "communicator rank 1/2: connect to rank 0 over IPC (tag 2): this build has no CUDA support");
#else
  CHECK_THAT(ipc[0], Catch::StartsWith("communicator rank 0/2: connect to rank 1 over IPC (tag 2): "));
#endif
}

namespace {

// Each block reduces (sum) its share of the elements across all members and broadcasts the result.
struct SwitchAllReduceKernel {
  DeviceHandle<SwitchChannel>* channel;
  uint32_t count;
  uint32_t rank;
  uint32_t nRanks;

  MSCCLPP_HOST_DEVICE void operator()() const {
    uint32_t worker = rank * gridBlocks() + blockIndex(), workers = nRanks * gridBlocks();
    for (uint32_t i = worker; i < count; i += workers) channel->broadcast<float>(i, channel->reduce<float>(i));
  }
};

}  // namespace

TEST_CASE("a switch channel handle serves a launched all-reduce", "[api][switch_channel]") {
  const int n = 3;
  const uint32_t count = 300;
  auto comms = test::makeHostComms(n);
  std::vector<std::shared_ptr<float>> bufs;
  for (int r = 0; r < n; ++r) bufs.push_back(allocSharedHost<float>(count));
  std::vector<std::string> errors(n);
  runRanks(n, [&](int r) {
    for (uint32_t i = 0; i < count; ++i) bufs[r].get()[i] = float(r + 1) * float(i);
    SwitchChannel sw = SwitchChannel::create(*comms[r], {0, 1, 2}, bufs[r].get(), count * sizeof(float), 0);
    DeviceHandle<SwitchChannel> h = sw.deviceHandle();
    comms[r]->bootstrap()->barrier();
    launchKernel(comms[r]->device(), SwitchAllReduceKernel{&h, count, uint32_t(r), uint32_t(n)}, {4, 1});
    comms[r]->bootstrap()->barrier();
    for (uint32_t i = 0; i < count && errors[r].empty(); ++i) {
      if (bufs[r].get()[i] != 6.0f * float(i)) errors[r] = "element " + std::to_string(i);
    }
    comms[r]->bootstrap()->barrier();
  });
  for (int r = 0; r < n; ++r) CHECK(errors[r] == "");
}
