// Fifo: the memory behind the trigger ring (see mscclpp/proxy.hpp for where it lives).
#include <cstdlib>
#include <cstring>

#include "core/enforce.hpp"
#include "core/params.hpp"
#include "core/visibility.hpp"
#include "mscclpp/proxy.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp {

struct MSCCLPP_INTERNAL Fifo::Impl {
  int size = 0;
  int device = kHostDevice;
  ProxyTrigger* hostRing = nullptr;    // what the consumer reads
  uint64_t* hostTail = nullptr;        // what the consumer writes
  ProxyTrigger* deviceRing = nullptr;  // the same memory as producers address it
  uint64_t* deviceTail = nullptr;
  uint64_t* head = nullptr;         // producers only
  uint64_t* tailReplica = nullptr;  // producers only (device memory on a GPU: no host read per push)
  uint64_t timeoutNs = 0;
  uint32_t timeoutSource = kTimeoutFromEnvironment;
  FifoConsumer consumer;
  std::shared_ptr<void> ringMemory, tailMemory, headMemory, replicaMemory;
};

namespace {

std::shared_ptr<void> hostZeroed(size_t bytes) {
  // 64-byte alignment keeps the counters on their own cache lines (and satisfies the 16-byte
  // alignment of triggers).
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) MSCCLPP_THROW(ErrorCode::SystemError, "Fifo: cannot allocate %zu bytes", rounded);
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

#if MSCCLPP_HAVE_CUDA
void cudaCheck(cudaError_t e, const char* what) {
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "Fifo: %s: %s", what, cudaGetErrorString(e));
}

// Makes `device` current for the scope and puts the caller's device back (the current device is
// per host thread and belongs to the caller).
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    cudaCheck(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) cudaCheck(cudaSetDevice(device), "cudaSetDevice");
  }
  ~CurrentDevice() { cudaSetDevice(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

std::shared_ptr<void> mappedZeroed(size_t bytes, void** devicePtr) {
  void* p = nullptr;
  cudaCheck(cudaHostAlloc(&p, bytes, cudaHostAllocMapped), "cudaHostAlloc(mapped)");
  std::memset(p, 0, bytes);
  std::shared_ptr<void> owner(p, [](void* q) { cudaFreeHost(q); });
  cudaCheck(cudaHostGetDevicePointer(devicePtr, p, 0), "cudaHostGetDevicePointer");
  return owner;
}
#endif

}  // namespace

Fifo::Fifo(int size, int device) : Fifo(size, device, params::timeoutSeconds(), "MSCCLPP_TIMEOUT_S") {}

Fifo::Fifo(int size, int device, double timeoutSeconds, const char* timeoutSetting) : pimpl_(std::make_unique<Impl>()) {
  MSCCLPP_ENFORCE(size > 0 && size <= (1 << 20), ErrorCode::InvalidArgument, "Fifo: size %d is not in 1..%d", size,
                  1 << 20);
  Impl& m = *pimpl_;
  m.size = size;
  m.device = device;
  m.timeoutNs = timeoutSeconds > 0 ? static_cast<uint64_t>(timeoutSeconds * 1e9) : kNoDeadline;
  const bool fromCommunicator =
      timeoutSetting != nullptr && std::strcmp(timeoutSetting, timeoutSourceName(kTimeoutFromCommunicator)) == 0;
  m.timeoutSource = fromCommunicator ? kTimeoutFromCommunicator : kTimeoutFromEnvironment;
  const size_t ringBytes = static_cast<size_t>(size) * sizeof(ProxyTrigger);
  if (device < 0) {
    m.ringMemory = hostZeroed(ringBytes);
    m.tailMemory = hostZeroed(sizeof(uint64_t));
    m.headMemory = hostZeroed(sizeof(uint64_t));
    m.hostRing = m.deviceRing = static_cast<ProxyTrigger*>(m.ringMemory.get());
    m.hostTail = m.deviceTail = static_cast<uint64_t*>(m.tailMemory.get());
    m.head = static_cast<uint64_t*>(m.headMemory.get());
    m.replicaMemory = hostZeroed(sizeof(uint64_t));
    m.tailReplica = static_cast<uint64_t*>(m.replicaMemory.get());
  } else {
#if MSCCLPP_HAVE_CUDA
    CurrentDevice current(device);
    void* d = nullptr;
    m.ringMemory = mappedZeroed(ringBytes, &d);
    m.deviceRing = static_cast<ProxyTrigger*>(d);
    m.hostRing = static_cast<ProxyTrigger*>(m.ringMemory.get());
    m.tailMemory = mappedZeroed(sizeof(uint64_t), &d);
    m.deviceTail = static_cast<uint64_t*>(d);
    m.hostTail = static_cast<uint64_t*>(m.tailMemory.get());
    // head and the tail replica: two device counters in one allocation, zeroed.
    void* counters = nullptr;
    cudaCheck(cudaMalloc(&counters, 64), "cudaMalloc(head, tail replica)");
    m.headMemory = std::shared_ptr<void>(counters, [](void* q) { cudaFree(q); });
    cudaCheck(cudaMemset(counters, 0, 64), "cudaMemset(head, tail replica)");
    m.head = static_cast<uint64_t*>(counters);
    m.tailReplica = static_cast<uint64_t*>(counters) + 4;  // its own 32-byte sector
#else
    MSCCLPP_THROW(ErrorCode::NotSupported, "Fifo on CUDA device %d: this build has no CUDA support", device);
#endif
  }
  m.consumer = FifoConsumer(m.hostRing, m.hostTail, static_cast<uint32_t>(size));
}

Fifo::~Fifo() = default;

int Fifo::size() const { return pimpl_->size; }

FifoDeviceHandle Fifo::deviceHandle() const {
  FifoDeviceHandle h{};
  h.triggers = pimpl_->deviceRing;
  h.head = pimpl_->head;
  h.tail = pimpl_->deviceTail;
  h.size = static_cast<uint32_t>(pimpl_->size);
  h.timeoutNs = pimpl_->timeoutNs;
  h.timeoutSource = pimpl_->timeoutSource;
  h.tailReplica = pimpl_->tailReplica;
  return h;
}

FifoConsumer& Fifo::consumer() { return pimpl_->consumer; }

}  // namespace mscclpp
