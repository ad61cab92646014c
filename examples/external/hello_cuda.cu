// The external program's CUDA flavour, built against the INSTALLED library only:
//   nvcc -std=c++17 --expt-relaxed-constexpr hello_cuda.cu $(pkg-config --cflags --libs mscclpp) -o hello_cuda
// Two ranks as threads. With a GPU, rank r uses device r % count: the
// kernels run on it and the memory channel maps peer memory over CUDA IPC.
// Without one the same kernels run on the CPU backend over shared memory.
// Prints one line per rank.
#include <cstdio>
#include <cstring>
#include <memory>
#include <mscclpp/mscclpp.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kWords = 4096;

// Rank 0: each of 2 blocks puts one half, every thread a share; then one
// thread per block signals. Rank 1's kernel waits for both signals.
struct SendKernel {
  mscclpp::SmChannelDeviceHandle* channel;
  MSCCLPP_HOST_DEVICE void operator()() const {
    uint64_t half = kWords * sizeof(uint32_t) / 2, offset = mscclpp::blockIndex() * half;
    channel->put(offset, offset, half, mscclpp::threadIndex(), mscclpp::blockThreads());
    mscclpp::syncBlockThreads();
    if (mscclpp::threadIndex() == 0) channel->signal();
  }
};

struct WaitKernel {
  mscclpp::SmChannelDeviceHandle* channel;
  uint32_t* doubled;  // what arrived, doubled: the data is usable after the wait
  const uint32_t* received;
  MSCCLPP_HOST_DEVICE void operator()() const {
    if (mscclpp::threadIndex() == 0) {
      channel->wait();
      channel->wait();
    }
    mscclpp::syncBlockThreads();
    for (size_t i = mscclpp::threadIndex(); i < kWords; i += mscclpp::blockThreads()) doubled[i] = 2 * received[i];
  }
};

int gpuCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw mscclpp::Error(mscclpp::ErrorCode::CudaError, std::string(what) + ": " + cudaGetErrorString(e));
}

// Memory the backend's kernels use: device memory, or shared host memory.
std::shared_ptr<void> allocate(int device, size_t bytes) {
  if (device == mscclpp::kHostDevice) return mscclpp::allocSharedHostBytes(bytes);
  void* p = nullptr;
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  check(cudaMemset(p, 0, bytes), "cudaMemset");
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

void copyBytes(void* dst, const void* src, size_t bytes, int device) {
  if (device == mscclpp::kHostDevice) {
    std::memcpy(dst, src, bytes);
  } else {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
  }
}

size_t runRank(const mscclpp::UniqueId& id, int rank, int gpus, std::string* where) {
  using namespace mscclpp;
  if (gpus > 0) check(cudaSetDevice(rank % gpus), "cudaSetDevice");
  // kDeviceAuto: the current device. A library built without CUDA, or
  // MSCCLPP_BACKEND=cpu, makes the communicator use the CPU backend.
  auto comm = createCommunicator(id, rank, 2);
  const int device = comm->device();
  Transport transport = device == kHostDevice ? Transport::HostShm : Transport::CudaIpc;
  *where = device == kHostDevice ? "the CPU backend" : "GPU " + std::to_string(device);
  const int peer = 1 - rank;
  const size_t bytes = kWords * sizeof(uint32_t);
  auto data = allocate(device, bytes), doubled = allocate(device, bytes);
  std::vector<uint32_t> host(kWords);
  for (size_t i = 0; i < kWords; ++i) host[i] = static_cast<uint32_t>(7 * i + 3);
  if (rank == 0) copyBytes(data.get(), host.data(), bytes, device);

  auto conn = comm->connect(peer, 0, transport);
  RegisteredMemory local = comm->registerMemory(data.get(), bytes, transport);  // alive while the peer uses it
  comm->sendMemory(local, peer, 0);
  RegisteredMemory remote = comm->recvMemory(peer, 0).get();
  auto sem = std::make_shared<SmDevice2DeviceSemaphore>(*comm, conn.get());
  SmChannel channel(sem, remote, data.get());
  auto handle = allocate(device, sizeof(SmChannelDeviceHandle));
  SmChannelDeviceHandle h = channel.deviceHandle();
  copyBytes(handle.get(), &h, sizeof(h), device);
  auto* hp = static_cast<SmChannelDeviceHandle*>(handle.get());
  if (rank == 0) {
    launchKernel(device, SendKernel{hp}, {2, 256});
  } else {
    launchKernel(device, WaitKernel{hp, static_cast<uint32_t*>(doubled.get()), static_cast<uint32_t*>(data.get())},
                 {1, 256});
  }
  comm->bootstrap()->barrier();
  if (rank == 0) return 0;
  std::vector<uint32_t> got(kWords);
  copyBytes(got.data(), doubled.get(), bytes, device);
  size_t wrong = 0;
  for (size_t i = 0; i < kWords; ++i) wrong += got[i] != 2 * host[i];
  return wrong;
}

}  // namespace

int main() {
  int gpus = gpuCount();
  mscclpp::UniqueId id = mscclpp::TcpBootstrap::createUniqueId();
  std::vector<size_t> wrong(2, 0);
  std::vector<std::string> errors(2), where(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        wrong[r] = runRank(id, r, gpus, &where[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  int status = 0;
  for (int r = 0; r < 2; ++r) {
    if (!errors[r].empty()) {
      std::printf("external_cuda: rank %d: FAILED: %s\n", r, errors[r].c_str());
      status = 1;
    } else if (wrong[r] != 0) {
      std::printf("external_cuda: rank %d: FAILED: %zu wrong words\n", r, wrong[r]);
      status = 1;
    } else {
      std::printf("external_cuda: rank %d: memory-channel kernels on %s: OK\n", r, where[r].c_str());
    }
  }
  return status;
}
