// Configuration, per-thread state, errors and reports of the CUDA double; the
// error API (cudaGetLastError, cudaPeekAtLastError, cudaGetErrorString,
// cudaGetErrorName), the device selection API (cudaGetDeviceCount,
// cudaSetDevice, cudaGetDevice) and the per-thread tally of API calls.
#include "core.hpp"

#include <time.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuda_double.h"

namespace cudadouble {
namespace {

struct Sticky {
  std::atomic<int> error{cudaSuccess};
  std::string why;
};

struct Reports {
  std::mutex m;
  std::string lastMisuse, lastFault;
  std::vector<Sticky> sticky;
};

Reports& reports() {
  static Reports* r = [] {
    auto* p = new Reports();
    p->sticky = std::vector<Sticky>(static_cast<size_t>(config().devices));
    return p;
  }();
  return *r;
}

// CUDA Runtime API, "Device Management": the current device is per host thread,
// device 0 until cudaSetDevice; "Error Handling": the last error is per host
// thread.
thread_local int tCurrentDevice = 0;
thread_local cudaError_t tLastError = cudaSuccess;
thread_local bool tCallbackThread = false;

// The calling thread's API calls since its last reset. Fixed-size, so
// counting allocates nothing; names beyond the table are counted as one.
struct Tally {
  int depth = 0;
  uint64_t start = 0;
  cudadouble_tally counts{};
};
thread_local Tally tTally;

uint64_t nowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

void countCall(cudadouble_tally& c, const char* name) {
  c.calls += 1;
  for (int i = 0; i < c.names; ++i) {
    if (c.name[i] == name || std::strcmp(c.name[i], name) == 0) {
      c.count[i] += 1;
      return;
    }
  }
  const int last = CUDADOUBLE_TALLY_NAMES - 1;
  if (c.names < last) {
    c.name[c.names] = name;
    c.count[c.names++] = 1;
    return;
  }
  c.name[last] = "(other)";
  c.names = CUDADOUBLE_TALLY_NAMES;
  c.count[last] += 1;
}

}  // namespace

ApiCall::ApiCall(const char* name) {
  Tally& t = tTally;
  if (t.depth++ != 0) return;
  countCall(t.counts, name);
  t.start = nowNs();
}

ApiCall::~ApiCall() {
  Tally& t = tTally;
  if (--t.depth == 0) t.counts.ns += nowNs() - t.start;
}

uint64_t envInt(const char* name, uint64_t def, uint64_t lo, uint64_t hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return def;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (end == v || *end != 0 || x < lo || x > hi) {
    std::fprintf(stderr, "cuda-double: %s=%s is not an integer in [%llu, %llu]; using %llu\n", name, v,
                 static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi),
                 static_cast<unsigned long long>(def));
    return def;
  }
  return x;
}

Config& config() {
  static Config* c = [] {
    auto* p = new Config();
    p->devices = static_cast<int>(envInt("CUDA_DOUBLE_DEVICES", 8, 1, 64));
    p->sms = static_cast<int>(envInt("CUDA_DOUBLE_SMS", 132, 1, 1024));
    // CUDA Programming Guide, "Concurrent Kernel Execution"/Hyper-Q:
    // CUDA_DEVICE_MAX_CONNECTIONS sets the hardware work queues (default 8, at
    // most 32).
    p->queues = static_cast<int>(envInt("CUDA_DEVICE_MAX_CONNECTIONS", 8, 1, 32));
    p->streamMemOps = envInt("CUDA_DOUBLE_STREAM_MEM_OPS", 1, 0, 1) != 0;
    p->cooperative = envInt("CUDA_DOUBLE_COOPERATIVE", 1, 0, 1) != 0;
    p->multicast = envInt("CUDA_DOUBLE_MULTICAST", 1, 0, 1) != 0;
    p->multicastObjects = static_cast<int>(envInt("CUDA_DOUBLE_MULTICAST_OBJECTS", 1024, 0, 1 << 20));
    p->adversarialSyncMs.store(static_cast<int>(envInt("CUDA_DOUBLE_ADVERSARIAL_SYNC_MS", 0, 0, 600000)));
    p->adversarialLegacyMs.store(static_cast<int>(envInt("CUDA_DOUBLE_ADVERSARIAL_LEGACY_MS", 0, 0, 600000)));
    p->nullKernels = envInt("CUDA_DOUBLE_NULL_KERNELS", 0, 0, 1) != 0;
    return p;
  }();
  return *c;
}

int currentDevice() { return tCurrentDevice; }
void setCurrentDevice(int device) { tCurrentDevice = device; }
bool validDevice(int device) { return device >= 0 && device < config().devices; }

cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) tLastError = e;
  return e;
}

cudaError_t lastError(bool reset) {
  // A sticky error stays: every call returns it, as the context is lost.
  cudaError_t s = stickyOf(tCurrentDevice);
  if (s != cudaSuccess) return s;
  cudaError_t e = tLastError;
  if (reset) tLastError = cudaSuccess;
  return e;
}

void setSticky(int device, cudaError_t e, const std::string& why) {
  if (!validDevice(device)) return;
  Reports& r = reports();
  std::lock_guard<std::mutex> lock(r.m);
  Sticky& s = r.sticky[static_cast<size_t>(device)];
  int none = cudaSuccess;
  if (s.error.compare_exchange_strong(none, e)) s.why = why;
}

cudaError_t stickyOf(int device) {
  if (!validDevice(device)) return cudaSuccess;
  return static_cast<cudaError_t>(reports().sticky[static_cast<size_t>(device)].error.load());
}

void markCallbackThread() { tCallbackThread = true; }

cudaError_t enter(int device) {
  if (tCallbackThread) {
    misuse("a CUDA API call from a user object's destructor (cudaUserObjectCreate forbids it)");
    return fail(cudaErrorNotPermitted);
  }
  cudaError_t s = stickyOf(device < 0 ? tCurrentDevice : device);
  if (s != cudaSuccess) return fail(s);
  return cudaSuccess;
}

void misuse(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  counters().misuses.fetch_add(1);
  {
    Reports& r = reports();
    std::lock_guard<std::mutex> lock(r.m);
    r.lastMisuse = buf;
  }
  std::fprintf(stderr, "cuda-double: MISUSE: %s\n", buf);
}

void fault(int device, const std::string& what) {
  counters().faults.fetch_add(1);
  {
    Reports& r = reports();
    std::lock_guard<std::mutex> lock(r.m);
    r.lastFault = what;
  }
  std::fprintf(stderr, "cuda-double: FAULT on device %d: %s (cudaErrorIllegalAddress, sticky)\n", device, what.c_str());
  setSticky(device, cudaErrorIllegalAddress, what);
}

Counters& counters() {
  static Counters* c = new Counters();
  return *c;
}

std::string lastMisuseText() {
  Reports& r = reports();
  std::lock_guard<std::mutex> lock(r.m);
  return r.lastMisuse;
}

std::string lastFaultText() {
  Reports& r = reports();
  std::lock_guard<std::mutex> lock(r.m);
  return r.lastFault;
}

void setAdversarialSync(int ms) { config().adversarialSyncMs.store(ms < 0 ? 0 : ms); }
void setAdversarialLegacy(int ms) { config().adversarialLegacyMs.store(ms < 0 ? 0 : ms); }
bool active() { return true; }

}  // namespace cudadouble

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

extern "C" {

cudaError_t cudaGetLastError(void) {
  CD_TALLY();
  return lastError(true);
}

cudaError_t cudaPeekAtLastError(void) {
  CD_TALLY();
  return lastError(false);
}

const char* cudaGetErrorName(cudaError_t e) {
  CD_TALLY();
  switch (e) {
#define CD_NAME(x) \
  case x:          \
    return #x;
    CD_NAME(cudaSuccess)
    CD_NAME(cudaErrorInvalidValue)
    CD_NAME(cudaErrorMemoryAllocation)
    CD_NAME(cudaErrorInitializationError)
    CD_NAME(cudaErrorInvalidConfiguration)
    CD_NAME(cudaErrorInvalidDevice)
    CD_NAME(cudaErrorInvalidDevicePointer)
    CD_NAME(cudaErrorInvalidResourceHandle)
    CD_NAME(cudaErrorInvalidDeviceFunction)
    CD_NAME(cudaErrorNotReady)
    CD_NAME(cudaErrorIllegalAddress)
    CD_NAME(cudaErrorLaunchFailure)
    CD_NAME(cudaErrorLaunchOutOfResources)
    CD_NAME(cudaErrorPeerAccessAlreadyEnabled)
    CD_NAME(cudaErrorPeerAccessNotEnabled)
    CD_NAME(cudaErrorNotSupported)
    CD_NAME(cudaErrorNotPermitted)
    CD_NAME(cudaErrorStreamCaptureUnsupported)
    CD_NAME(cudaErrorStreamCaptureInvalidated)
    CD_NAME(cudaErrorStreamCaptureWrongThread)
    CD_NAME(cudaErrorIllegalState)
    CD_NAME(cudaErrorMapBufferObjectFailed)
    CD_NAME(cudaErrorStreamCaptureImplicit)
    CD_NAME(cudaErrorNoDevice)
#undef CD_NAME
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  CD_TALLY();
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorInvalidDeviceFunction:
      return "invalid device function";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorLaunchOutOfResources:
      return "too many resources requested for launch";
    case cudaErrorPeerAccessAlreadyEnabled:
      return "peer access is already enabled";
    case cudaErrorNotSupported:
      return "operation not supported";
    case cudaErrorNotPermitted:
      return "operation not permitted";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread:
      return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorIllegalState:
      return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    default:
      return "unrecognized error code";
  }
}

cudaError_t cudaGetDeviceCount(int* count) {
  CD_TALLY();
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = config().devices;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  CD_TALLY();
  if (!validDevice(device)) return fail(cudaErrorInvalidDevice);
  if (cudaError_t e = enter(device); e != cudaSuccess) return e;
  setCurrentDevice(device);
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  CD_TALLY();
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = currentDevice();
  return cudaSuccess;
}

void cudadouble_api_tally(cudadouble_tally* out, int reset) {
  if (out != nullptr) *out = tTally.counts;
  if (reset) tTally.counts = cudadouble_tally{};
}

int cudadouble_inside_api(void) { return tTally.depth > 0; }

}  // extern "C"
