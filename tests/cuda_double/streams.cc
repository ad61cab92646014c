// Streams, hardware queues and synchronisation of the CUDA double (see
// streams.hpp), and the stream API: cudaStreamCreate*, cudaStreamDestroy,
// cudaStreamSynchronize, cudaStreamQuery, cudaDeviceSynchronize,
// cudaLaunchHostFunc, cudaStreamGetFlags.
#include "streams.hpp"

#include <chrono>
#include <cstdio>
#include <list>
#include <map>
#include <set>

#include "core.hpp"
#include "cuda_double.h"
#include "graphs.hpp"

namespace cudadouble {
namespace {

struct Queue {
  std::mutex m;
  std::condition_variable cv;
  std::list<OpPtr> pending;  // a list: one allocation per operation, always
  OpPtr newest;              // the last operation pushed (possibly still running)
  std::thread worker;
};

struct Device {
  int ordinal = 0;
  std::mutex m;  // streams' `last`, the blocking list, the creation counter
  std::vector<std::unique_ptr<Queue>> queues;
  CUstream_st legacy;
  std::vector<CUstream_st*> blocking;
  uint64_t created = 0;
  std::mutex runningMutex;
  std::multiset<std::thread::id> running;  // launchers of the kernels running now
  // The driver's lock: held by a page-table change while it waits for the device.
  std::mutex lockMutex;
  std::condition_variable lockCv;
  bool locked = false;
  std::thread::id lockHolder;
  const char* lockWhat = "";
};

void queueLoop(Queue* q) {
  for (;;) {
    OpPtr op;
    {
      std::unique_lock<std::mutex> lock(q->m);
      q->cv.wait(lock, [&] { return !q->pending.empty(); });
      op = q->pending.front();
      q->pending.pop_front();
    }
    op->execute();
  }
}

struct Streams {
  std::vector<std::unique_ptr<Device>> devices;
  std::mutex registryMutex;
  std::set<CUstream_st*> live, destroyed;
  uint64_t nextId = 1;
};

Streams& streams() {
  static Streams* s = [] {
    auto* p = new Streams();
    for (int d = 0; d < config().devices; ++d) {
      auto dev = std::make_unique<Device>();
      dev->ordinal = d;
      dev->legacy.device = d;
      dev->legacy.legacy = true;
      dev->legacy.queue = 0;
      dev->created = 1;
      for (int q = 0; q < config().queues; ++q) {
        auto queue = std::make_unique<Queue>();
        queue->worker = std::thread(queueLoop, queue.get());
        queue->worker.detach();
        dev->queues.push_back(std::move(queue));
      }
      p->devices.push_back(std::move(dev));
    }
    return p;
  }();
  return *s;
}

Device& deviceOf(int d) { return *streams().devices.at(static_cast<size_t>(d)); }

thread_local std::map<int, CUstream_st*> tPerThreadStreams;

CUstream_st* createStream(int device, unsigned flags, int priority) {
  Device& dev = deviceOf(device);
  auto* s = new CUstream_st();
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  {
    std::lock_guard<std::mutex> lock(dev.m);
    s->queue = static_cast<int>(dev.created++ % static_cast<uint64_t>(config().queues));
    if ((flags & cudaStreamNonBlocking) == 0) dev.blocking.push_back(s);
  }
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.registryMutex);
  s->id = all.nextId++;
  all.live.insert(s);
  counters().streamsCreated.fetch_add(1);
  return s;
}

bool pending(const OpPtr& op) { return op != nullptr && !op->done(); }

}  // namespace

Op::Op(int device, std::function<void()> work, std::vector<std::shared_ptr<Op>> after, bool kernel)
    : device_(device),
      work_(std::move(work)),
      after_(std::move(after)),
      kernel_(kernel),
      launcher_(std::this_thread::get_id()) {}

void Op::execute() {
  for (const OpPtr& a : after_) a->wait();
  after_.clear();
  if (stickyOf(device_) == cudaSuccess && work_) work_();
  work_ = nullptr;  // releases what the work captured (argument copies, staged bytes)
  std::lock_guard<std::mutex> lock(m_);
  done_ = true;
  cv_.notify_all();
}

void Op::wait() {
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [&] { return done_; });
}

bool Op::waitFor(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_);
  return cv_.wait_for(lock, timeout, [&] { return done_; });
}

bool Op::done() {
  std::lock_guard<std::mutex> lock(m_);
  return done_;
}

cudaError_t resolveStream(cudaStream_t stream, CUstream_st** out) {
  const int cur = currentDevice();
  if (stream == nullptr || stream == cudaStreamLegacy) {
    *out = &deviceOf(cur).legacy;
    return cudaSuccess;
  }
  if (stream == cudaStreamPerThread) {
    CUstream_st*& s = tPerThreadStreams[cur];
    if (s == nullptr) s = createStream(cur, cudaStreamDefault, 0);
    *out = s;
    return cudaSuccess;
  }
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.registryMutex);
  if (all.live.count(stream) != 0) {
    *out = stream;
    return cudaSuccess;
  }
  if (all.destroyed.count(stream) != 0) {
    misuse("stream %p (id %llu) used after cudaStreamDestroy", static_cast<void*>(stream),
           static_cast<unsigned long long>(stream->id));
  } else {
    misuse("%p is not a stream of this process", static_cast<void*>(stream));
  }
  return fail(cudaErrorInvalidResourceHandle);
}

OpPtr submit(CUstream_st* s, std::function<void()> work, bool kernel) {
  awaitDriverLock(s->device, "an operation enqueued on a stream");
  Device& dev = deviceOf(s->device);
  Queue& q = *dev.queues.at(static_cast<size_t>(s->queue));
  const int legacyDelay = config().adversarialLegacyMs.load();
  if (s->legacy && legacyDelay > 0) {
    // Adversarial ordering: the legacy stream's work starts late, as it may
    // when queued work runs there; non-blocking streams overtake it.
    work = [legacyDelay, inner = std::move(work)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(legacyDelay));
      if (inner) inner();
    };
  }
  OpPtr op;
  {
    std::lock_guard<std::mutex> lock(dev.m);
    std::vector<OpPtr> after;
    if (s->legacy) {
      for (CUstream_st* b : dev.blocking)
        if (pending(b->last)) after.push_back(b->last);
    } else if ((s->flags & cudaStreamNonBlocking) == 0 && pending(dev.legacy.last)) {
      after.push_back(dev.legacy.last);
    }
    op = std::make_shared<Op>(s->device, std::move(work), std::move(after), kernel);
    s->last = op;
    // Pushed under the device mutex: the queue order agrees with the dependencies just taken.
    std::lock_guard<std::mutex> qlock(q.m);
    q.pending.push_back(op);
    q.newest = op;
    q.cv.notify_one();
  }
  return op;
}

cudaError_t enqueue(CUstream_st* s, std::function<void()> work, bool kernel, OpPtr* out) {
  if (out != nullptr) *out = nullptr;
  Device& dev = deviceOf(s->device);
  {
    std::lock_guard<std::mutex> lock(dev.m);
    if (s->capture) {
      captureAppend(*s->capture, std::move(work), kernel);
      return cudaSuccess;
    }
    if (s->legacy) {
      for (CUstream_st* b : dev.blocking) {
        if (b->capture) {
          b->capture->invalidated = true;
          return fail(cudaErrorStreamCaptureImplicit);
        }
      }
    }
  }
  OpPtr op = submit(s, std::move(work), kernel);
  if (out != nullptr) *out = op;
  return cudaSuccess;
}

void streamWait(CUstream_st* s) {
  OpPtr last;
  {
    std::lock_guard<std::mutex> lock(deviceOf(s->device).m);
    last = s->last;
  }
  if (last) last->wait();
}

void kernelStarted(int device, std::thread::id launcher) {
  Device& dev = deviceOf(device);
  std::lock_guard<std::mutex> lock(dev.runningMutex);
  dev.running.insert(launcher);
}

void kernelFinished(int device, std::thread::id launcher) {
  Device& dev = deviceOf(device);
  std::lock_guard<std::mutex> lock(dev.runningMutex);
  auto it = dev.running.find(launcher);
  if (it != dev.running.end()) dev.running.erase(it);
}

std::vector<CUstream_st*> blockingStreams(int device) {
  Device& dev = deviceOf(device);
  std::lock_guard<std::mutex> lock(dev.m);
  return dev.blocking;
}

namespace {

// Adversarial scheduling: gives a kernel another thread is about to launch the
// time to start, so that a synchronisation it would deadlock with deadlocks
// now rather than by chance.
void adversarialWait(Device& dev) {
  const int adversarial = config().adversarialSyncMs.load();
  if (adversarial <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(adversarial);
  const std::thread::id me = std::this_thread::get_id();
  while (std::chrono::steady_clock::now() < until) {
    {
      std::lock_guard<std::mutex> lock(dev.runningMutex);
      bool other = false;
      for (const std::thread::id& t : dev.running) other = other || t != me;
      if (other) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Waits for all work issued on the device so far. A wait that lasts is usually
// a deadlock in the making (a running kernel waits for work this thread has
// not issued yet): say so while it lasts.
void waitForDevice(Device& dev, const char* what) {
  counters().deviceSyncs.fetch_add(1);
  std::vector<OpPtr> newest;
  for (auto& q : dev.queues) {
    std::lock_guard<std::mutex> lock(q->m);
    if (q->newest) newest.push_back(q->newest);
  }
  const auto start = std::chrono::steady_clock::now();
  for (const OpPtr& op : newest) {
    while (!op->waitFor(std::chrono::seconds(1))) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "cuda-double: %s on device %d has waited %.0f s for earlier work of the device\n", what,
                   dev.ordinal, s);
    }
  }
}

}  // namespace

cudaError_t deviceSync(int device, const char* what, bool duringCapture) {
  if (!duringCapture)
    if (cudaError_t e = checkUnsafeDuringCapture(what); e != cudaSuccess) return e;
  Device& dev = deviceOf(device);
  adversarialWait(dev);
  waitForDevice(dev, what);
  return stickyOf(device) != cudaSuccess ? fail(stickyOf(device)) : cudaSuccess;
}

namespace {

// Waits, lock held, until no other thread holds the device's driver lock.
void waitUnlocked(Device& dev, std::unique_lock<std::mutex>& lock, const char* what) {
  const std::thread::id me = std::this_thread::get_id();
  const auto start = std::chrono::steady_clock::now();
  while (dev.locked && dev.lockHolder != me) {
    if (!dev.lockCv.wait_for(lock, std::chrono::seconds(1), [&] { return !dev.locked || dev.lockHolder == me; })) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr,
                   "cuda-double: %s on device %d has waited %.0f s for %s on another thread (a page-table change "
                   "holds the driver's lock while it waits for the device)\n",
                   what, dev.ordinal, s, dev.lockWhat);
    }
  }
}

}  // namespace

PageTableChange::PageTableChange(int device, const char* what) : device_(device) {
  if (cudaError_t e = checkUnsafeDuringCapture(what); e != cudaSuccess) {
    result_ = e;
    return;
  }
  Device& dev = deviceOf(device);
  // The adversarial wait comes before the lock: a kernel launched meanwhile is
  // on the device when the lock is taken, as it may be on a GPU.
  adversarialWait(dev);
  {
    std::unique_lock<std::mutex> lock(dev.lockMutex);
    waitUnlocked(dev, lock, what);
    dev.locked = true;
    dev.lockHolder = std::this_thread::get_id();
    dev.lockWhat = what;
  }
  held_ = true;
  counters().pageTableChanges.fetch_add(1);
  waitForDevice(dev, what);
  if (stickyOf(device) != cudaSuccess) result_ = fail(stickyOf(device));
}

PageTableChange::~PageTableChange() {
  if (!held_) return;
  Device& dev = deviceOf(device_);
  std::lock_guard<std::mutex> lock(dev.lockMutex);
  dev.locked = false;
  dev.lockCv.notify_all();
}

void awaitDriverLock(int device, const char* what) {
  if (!validDevice(device)) return;
  Device& dev = deviceOf(device);
  std::unique_lock<std::mutex> lock(dev.lockMutex);
  waitUnlocked(dev, lock, what);
}

std::shared_ptr<Capture> captureOf(CUstream_st* s) {
  std::lock_guard<std::mutex> lock(deviceOf(s->device).m);
  return s->capture;
}

void setCapture(CUstream_st* s, std::shared_ptr<Capture> capture) {
  std::lock_guard<std::mutex> lock(deviceOf(s->device).m);
  s->capture = std::move(capture);
}

int queueOf(cudaStream_t stream) {
  CUstream_st* s = nullptr;
  if (resolveStream(stream, &s) != cudaSuccess) return -1;
  return s->queue;
}

}  // namespace cudadouble

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  CD_ENTER();
  if (stream == nullptr || (flags & ~1u) != 0) return fail(cudaErrorInvalidValue);
  awaitDriverLock(currentDevice(), "cudaStreamCreate");
  *stream = createStream(currentDevice(), flags, priority);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  CD_TALLY();
  return cudaStreamCreateWithPriority(stream, flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithPriority(stream, 0, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    misuse("cudaStreamDestroy of a default stream");
    return fail(cudaErrorInvalidResourceHandle);
  }
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  awaitDriverLock(s->device, "cudaStreamDestroy");
  // CUDA Runtime API, cudaStreamDestroy: returns at once; work already in the
  // stream completes. The object stays (never reused) so later uses of the
  // handle are caught as misuses.
  Device& dev = deviceOf(s->device);
  {
    std::lock_guard<std::mutex> lock(dev.m);
    s->destroyed = true;
    for (size_t i = 0; i < dev.blocking.size(); ++i) {
      if (dev.blocking[i] == s) {
        dev.blocking.erase(dev.blocking.begin() + static_cast<long>(i));
        break;
      }
    }
  }
  Streams& all = streams();
  std::lock_guard<std::mutex> lock(all.registryMutex);
  all.live.erase(s);
  all.destroyed.insert(s);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  awaitDriverLock(s->device, "cudaStreamSynchronize");
  {
    std::lock_guard<std::mutex> lock(deviceOf(s->device).m);
    if (s->capture) {
      s->capture->invalidated = true;
      return fail(cudaErrorStreamCaptureUnsupported);
    }
  }
  streamWait(s);
  cudaError_t sticky = stickyOf(s->device);
  return sticky != cudaSuccess ? fail(sticky) : cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  awaitDriverLock(s->device, "cudaStreamQuery");
  OpPtr last;
  {
    std::lock_guard<std::mutex> lock(deviceOf(s->device).m);
    if (s->capture) {
      s->capture->invalidated = true;
      return fail(cudaErrorStreamCaptureUnsupported);
    }
    last = s->last;
  }
  if (last && !last->done()) return cudaErrorNotReady;  // not an error: the last error is left alone
  cudaError_t sticky = stickyOf(s->device);
  return sticky != cudaSuccess ? fail(sticky) : cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (flags == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  *flags = s->flags;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  CD_ENTER();
  return deviceSync(currentDevice(), "cudaDeviceSynchronize");
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (fn == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  return enqueue(
      s, [fn, userData] { fn(userData); }, false);
}

}  // extern "C"
