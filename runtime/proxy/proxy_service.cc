// ProxyService: the registration tables and the proxy thread.
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "core/visibility.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp/proxy.hpp"

namespace mscclpp {

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
  // Entries below the published counts never change; the proxy reads counts with acquire.
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
  // The connection performs operations in order, so the signal follows the put above and every
  // earlier one on this channel.
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
      // Spin for latency, then yield (a CPU-backend job runs more threads than cores), then the
      // host backoff's sleeps, growing to 1 ms: an idle proxy (between calls, or waiting for a
      // slow peer) wakes about a thousand times a second instead of burning a core.
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
