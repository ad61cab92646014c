// The host side of port channels: the FIFO's memory and the
// proxy thread. Device code pushes triggers; the ProxyService
// thread pops each one and performs it as connection writes,
// signals and flushes, in FIFO order. The protocol and its
// failure rules: docs/runtime.md, "The proxy".
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "core/visibility.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp/proxy.hpp"
#include "mscclpp_config.h"
#include "transport/device_memory.hpp"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp {

// ---- Fifo: the ring and its counters ----------------------------------------------------------
struct MSCCLPP_INTERNAL Fifo::Impl {
  int size = 0;
  int device = kHostDevice;
  ProxyTrigger* hostRing = nullptr;    // what the consumer reads
  uint64_t* hostTail = nullptr;        // what the consumer writes
  ProxyTrigger* deviceRing = nullptr;  // the same memory as producers address it
  uint64_t* deviceTail = nullptr;
  uint64_t* head = nullptr;         // producers only
  uint64_t* tailReplica = nullptr;  // producers only; device memory on a GPU
  uint64_t timeoutNs = 0;
  uint32_t timeoutSource = kTimeoutFromEnvironment;
  FifoConsumer consumer;
  std::shared_ptr<void> ringMemory, tailMemory, headMemory, replicaMemory;
};

namespace {

std::shared_ptr<void> hostZeroed(size_t bytes) {
  // 64-byte alignment gives each counter its own cache line; triggers need 16.
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

// Makes `device` current for the scope, then restores the caller's.
// The current device is per host thread and belongs to the caller.
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
    // head and the tail replica: two device counters in one allocation, zeroed
    // before the constructor returns (on a stream of ours, not the legacy one).
    void* counters = nullptr;
    cudaCheck(cudaMalloc(&counters, 64), "cudaMalloc(head, tail replica)");
    m.headMemory = std::shared_ptr<void>(counters, [](void* q) { cudaFree(q); });
    transport::zeroDeviceMemory(device, counters, 64, "Fifo: the head and tail replica counters");
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

// ---- ProxyService: the tables and the proxy thread -------------------------------------------
namespace {
constexpr size_t kMaxMemories = kTriggerMaxMemoryId + 1;
constexpr size_t kMaxSemaphores = kTriggerMaxChannelId + 1;

std::string describeTrigger(const TriggerFields& f) {
  std::string ops;
  if (f.type & TriggerPut) ops += "put";
  if (f.type & TriggerSignal) ops += ops.empty() ? "signal" : "+signal";
  if (f.type & TriggerFlush) ops += ops.empty() ? "flush" : "+flush";
  std::string s = ops;
  if (f.type & TriggerPut) {
    s += strFormat(" of %llu bytes from memory %u offset %llu to memory %u offset %llu", (unsigned long long)f.size,
                   f.srcMemoryId, (unsigned long long)f.srcOffset, f.dstMemoryId, (unsigned long long)f.dstOffset);
  }
  return s;
}
}  // namespace

struct MSCCLPP_INTERNAL ProxyService::Impl {
  Impl(int fifoSize, int device, double timeoutSeconds, const char* timeoutSetting)
      : fifo(fifoSize, device, timeoutSeconds, timeoutSetting), memories(kMaxMemories), semaphores(kMaxSemaphores) {}

  Fifo fifo;
  std::mutex addMutex;  // writers of the tables
  // Entries below the published counts never
  // change; the proxy reads counts with acquire.
  std::vector<RegisteredMemory> memories;
  std::atomic<uint32_t> memoryCount{0};
  std::vector<std::shared_ptr<Host2DeviceSemaphore>> semaphores;
  std::atomic<uint32_t> semaphoreCount{0};

  std::thread thread;
  std::atomic<bool> stopRequested{false};
  std::function<void(const Error&)> handler;
  ProxyRequestHandler requestHandler;
  uint32_t* failureFlag = nullptr;
  std::atomic<bool> failed{false};
  mutable std::mutex errorMutex;
  std::string error;
  std::atomic<uint64_t> handled{0};

  void loop();
  void perform(const TriggerFields& f);
  void fail(const Error& e, const TriggerFields& f, uint64_t index);
};

void ProxyService::Impl::perform(const TriggerFields& f) {
  if (requestHandler) {
    std::string problem = requestHandler(f);
    MSCCLPP_ENFORCE(problem.empty(), ErrorCode::RemoteError, "%s", problem.c_str());
    return;
  }
  uint32_t nSem = semaphoreCount.load(std::memory_order_acquire);
  MSCCLPP_ENFORCE(f.channelId < nSem, ErrorCode::InvalidArgument, "unknown channel id %u (%u registered)", f.channelId,
                  nSem);
  Host2DeviceSemaphore& sem = *semaphores[f.channelId];
  Connection& conn = *sem.connection();
  if (f.type & TriggerPut) {
    uint32_t nMem = memoryCount.load(std::memory_order_acquire);
    MSCCLPP_ENFORCE(f.dstMemoryId < nMem && f.srcMemoryId < nMem, ErrorCode::InvalidArgument,
                    "unknown memory id %u (%u registered)", f.dstMemoryId < nMem ? f.srcMemoryId : f.dstMemoryId, nMem);
    conn.write(memories[f.dstMemoryId], f.dstOffset, memories[f.srcMemoryId], f.srcOffset, f.size);
  }
  // Connections keep order: the signal follows this put and every earlier one.
  if (f.type & TriggerSignal) sem.signal();
  if (f.type & TriggerFlush) conn.flush();
}

void ProxyService::Impl::fail(const Error& e, const TriggerFields& f, uint64_t index) {
  std::string place;
  uint32_t nSem = semaphoreCount.load(std::memory_order_acquire);
  if (f.channelId < nSem) place = " = " + semaphores[f.channelId]->connection()->describe();
  std::string msg = strFormat("proxy: trigger #%llu (%s, channel %u%s): %s", (unsigned long long)index,
                              describeTrigger(f).c_str(), f.channelId, place.c_str(), e.what());
  {
    std::lock_guard<std::mutex> lock(errorMutex);
    error = msg;
  }
  failed.store(true, std::memory_order_release);
  if (failureFlag) atomicStore<uint32_t>(failureFlag, 1u, memoryOrderRelease);
  MSCCLPP_WARN(LogProxy, "%s; later triggers are skipped", msg.c_str());
  if (handler) {
    try {
      handler(Error(e.code(), msg));
    } catch (...) {
      // The handler is the caller's; nothing may escape the proxy thread.
    }
  }
}

void ProxyService::Impl::loop() {
  FifoConsumer& consumer = fifo.consumer();
  unsigned idle = 0;
  while (!stopRequested.load(std::memory_order_relaxed)) {
    ProxyTrigger t;
    if (!consumer.poll(&t)) {
      // Spin for latency, then yield, then sleep up to 1 ms a turn.
      // A CPU-backend job runs more threads than cores: an idle
      // proxy wakes about a thousand times a second, not burning a core.
      ++idle;
      if (idle > 500) hostBackoffPause(idle < 20000 ? 16u : 1024u + (idle - 20000));
      continue;
    }
    idle = 0;
    uint64_t index = consumer.position;
    TriggerFields f = t.decode();
    if (!failed.load(std::memory_order_relaxed)) {
      try {
        perform(f);
      } catch (const Error& e) {
        fail(e, f, index);
      } catch (const std::exception& e) {
        fail(Error(ErrorCode::InternalError, e.what()), f, index);
      }
    }
    handled.fetch_add(1, std::memory_order_relaxed);
    consumer.pop();  // after the work: a flush's sync returns only once the flush completed
  }
}

ProxyService::ProxyService(int fifoSize, int device)
    : ProxyService(fifoSize, device, params::timeoutSeconds(), "MSCCLPP_TIMEOUT_S") {}

ProxyService::ProxyService(const Communicator& communicator, int fifoSize)
    : ProxyService(fifoSize, communicator.device(), communicator.timeoutSeconds(), communicator.timeoutSetting()) {}

ProxyService::ProxyService(int fifoSize, int device, double timeoutSeconds, const char* timeoutSetting)
    : pimpl_(std::make_unique<Impl>(fifoSize, device, timeoutSeconds, timeoutSetting)) {}

ProxyService::~ProxyService() { stopProxy(); }

MemoryId ProxyService::addMemory(RegisteredMemory memory) {
  MSCCLPP_ENFORCE(memory.valid(), ErrorCode::InvalidArgument, "ProxyService::addMemory: empty registration");
  std::lock_guard<std::mutex> lock(pimpl_->addMutex);
  uint32_t n = pimpl_->memoryCount.load(std::memory_order_relaxed);
  MSCCLPP_ENFORCE(n < kMaxMemories, ErrorCode::InvalidArgument,
                  "ProxyService::addMemory: %zu memories already (a trigger's memory id has 9 bits)", kMaxMemories);
  pimpl_->memories[n] = std::move(memory);
  pimpl_->memoryCount.store(n + 1, std::memory_order_release);
  return n;
}

SemaphoreId ProxyService::addSemaphore(std::shared_ptr<Host2DeviceSemaphore> semaphore) {
  MSCCLPP_ENFORCE(semaphore != nullptr, ErrorCode::InvalidArgument, "ProxyService::addSemaphore: null semaphore");
  std::lock_guard<std::mutex> lock(pimpl_->addMutex);
  uint32_t n = pimpl_->semaphoreCount.load(std::memory_order_relaxed);
  MSCCLPP_ENFORCE(n < kMaxSemaphores, ErrorCode::InvalidArgument,
                  "ProxyService::addSemaphore: %zu semaphores already (a trigger's channel id has 10 bits)",
                  kMaxSemaphores);
  pimpl_->semaphores[n] = std::move(semaphore);
  pimpl_->semaphoreCount.store(n + 1, std::memory_order_release);
  return n;
}

SemaphoreId ProxyService::buildAndAddSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection) {
  return addSemaphore(std::make_shared<Host2DeviceSemaphore>(communicator, std::move(connection)));
}

std::shared_ptr<Host2DeviceSemaphore> ProxyService::semaphore(SemaphoreId id) const {
  uint32_t n = pimpl_->semaphoreCount.load(std::memory_order_acquire);
  MSCCLPP_ENFORCE(id < n, ErrorCode::InvalidArgument, "ProxyService: no semaphore %u (%u registered)", id, n);
  return pimpl_->semaphores[id];
}

RegisteredMemory ProxyService::memory(MemoryId id) const {
  uint32_t n = pimpl_->memoryCount.load(std::memory_order_acquire);
  MSCCLPP_ENFORCE(id < n, ErrorCode::InvalidArgument, "ProxyService: no memory %u (%u registered)", id, n);
  return pimpl_->memories[id];
}

PortChannel ProxyService::portChannel(SemaphoreId id, MemoryId dst, MemoryId src) {
  memory(dst);
  memory(src);
  return PortChannel(id, semaphore(id), fifoDeviceHandle(), dst, src);
}

BasePortChannel ProxyService::basePortChannel(SemaphoreId id) {
  return BasePortChannel(id, semaphore(id), fifoDeviceHandle());
}

FifoDeviceHandle ProxyService::fifoDeviceHandle() const { return pimpl_->fifo.deviceHandle(); }

void ProxyService::startProxy() {
  MSCCLPP_ENFORCE(!pimpl_->thread.joinable(), ErrorCode::InvalidUsage, "ProxyService::startProxy: already running");
  pimpl_->stopRequested.store(false);
  Impl* m = pimpl_.get();
  int logRank = currentLogRank();
  pimpl_->thread = std::thread([m, logRank]() {
    ScopedLogRank scoped(logRank);
    m->loop();
  });
}

void ProxyService::stopProxy() {
  if (!pimpl_->thread.joinable()) return;
  pimpl_->stopRequested.store(true);
  pimpl_->thread.join();
}

bool ProxyService::running() const { return pimpl_->thread.joinable(); }

void ProxyService::setErrorHandler(std::function<void(const Error&)> handler) {
  MSCCLPP_ENFORCE(!running(), ErrorCode::InvalidUsage, "ProxyService::setErrorHandler: set it before startProxy");
  pimpl_->handler = std::move(handler);
}

void ProxyService::setRequestHandler(ProxyRequestHandler handler) {
  MSCCLPP_ENFORCE(!running(), ErrorCode::InvalidUsage, "ProxyService::setRequestHandler: set it before startProxy");
  pimpl_->requestHandler = std::move(handler);
}

void ProxyService::setFailureFlag(uint32_t* flag) {
  MSCCLPP_ENFORCE(!running(), ErrorCode::InvalidUsage, "ProxyService::setFailureFlag: set it before startProxy");
  pimpl_->failureFlag = flag;
}

bool ProxyService::failed() const { return pimpl_->failed.load(std::memory_order_acquire); }

std::string ProxyService::errorMessage() const {
  std::lock_guard<std::mutex> lock(pimpl_->errorMutex);
  return pimpl_->error;
}

uint64_t ProxyService::triggersHandled() const { return pimpl_->handled.load(std::memory_order_relaxed); }

}  // namespace mscclpp
