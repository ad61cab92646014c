// The CUDA double's own semantics, each against the rule of the CUDA
// documentation it follows (docs/cuda-double.md, "What it implements"):
// streams and queues, the legacy default stream, implicit synchronisation,
// residency, attributes per device, errors, memory reuse and poisoning, IPC
// across processes, graphs and user objects, events, the API tally and null
// kernels. Test kernels are host functions registered the way nvcc's
// generated code registers device kernels. This binary is also the child
// process of the IPC test, with its own main().
#include <cuda.h>
#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cuda_double.h"

extern "C" void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*,
                                       int*);
extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) FAIL(what << ": " << cudaGetErrorString(e));
}
#define CK(call) check((call), #call)

// A test kernel: its handle is the address of a static byte, as a host stub's address is.
// Not loaded on any device until its first use (lazy loading).
const void* defineKernel(const char* name, cudadouble::HostBlockFn body, std::vector<size_t> argSizes, int regs = 32,
                         size_t staticShared = 0) {
  static char handles[32];
  static int next = 0;
  const char* handle = &handles[next++];
  __cudaRegisterFunction(nullptr, handle, const_cast<char*>(name), name, -1, nullptr, nullptr, nullptr, nullptr,
                         nullptr);
  cudadouble::HostKernel k;
  k.body = body;
  k.argSizes = std::move(argSizes);
  k.numRegs = regs;
  k.staticSharedBytes = staticShared;
  cudadouble::registerHostKernel(name, k);
  return handle;
}

template <class T>
T arg(void* const* args, int i) {
  T v;
  std::memcpy(&v, args[i], sizeof(T));
  return v;
}

// gate(std::atomic<int>* gate, std::atomic<int>* started): counts itself
// started, then waits (at most 10 s) for the gate to open.
void gateBody(void* const* args, dim3, dim3, unsigned, size_t, const void*) {
  auto* gate = arg<std::atomic<int>*>(args, 0);
  auto* started = arg<std::atomic<int>*>(args, 1);
  started->fetch_add(1);
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (gate->load() == 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

// barrier(std::atomic<int>* arrived, int total, std::atomic<int>* failed, int
// timeoutMs): every block waits (bounded) for all `total` blocks to have
// started, as a plan's blocks wait on each other.
void barrierBody(void* const* args, dim3, dim3, unsigned, size_t, const void*) {
  auto* arrived = arg<std::atomic<int>*>(args, 0);
  const int total = arg<int>(args, 1);
  auto* failed = arg<std::atomic<int>*>(args, 2);
  const int timeoutMs = arg<int>(args, 3);
  arrived->fetch_add(1);
  const auto until = Clock::now() + std::chrono::milliseconds(timeoutMs);
  while (arrived->load() < total) {
    if (Clock::now() > until) {
      failed->store(1);
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// add(int* p, int v): p[block] += v.
void addBody(void* const* args, dim3, dim3, unsigned block, size_t, const void*) {
  int* p = arg<int*>(args, 0);
  p[block] += arg<int>(args, 1);
}

// Loads the kernel on every device, as a program does before kernels that
// must run concurrently (a first launch may synchronise the device).
const void* loadedEverywhere(const void* kernel) {
  int current = 0, n = 0;
  CK(cudaGetDevice(&current));
  CK(cudaGetDeviceCount(&n));
  for (int d = 0; d < n; ++d) {
    cudaFuncAttributes a{};
    CK(cudaSetDevice(d));
    CK(cudaFuncGetAttributes(&a, kernel));
  }
  CK(cudaSetDevice(current));
  return kernel;
}

const void* gateKernel() {
  static const void* k = loadedEverywhere(defineKernel("testGate", &gateBody, {sizeof(void*), sizeof(void*)}));
  return k;
}
const void* barrierKernel() {
  static const void* k = loadedEverywhere(
      defineKernel("testBarrier", &barrierBody, {sizeof(void*), sizeof(int), sizeof(void*), sizeof(int)}, 64));
  return k;
}
const void* addKernel() {
  static const void* k = loadedEverywhere(defineKernel("testAdd", &addBody, {sizeof(int*), sizeof(int)}));
  return k;
}

// Runs f on a thread of its own (device 0 current); done() tells whether it returned.
class Async {
 public:
  explicit Async(std::function<void()> f)
      : thread_([this, f = std::move(f)] {
          cudaSetDevice(0);
          f();
          done_.store(true);
        }) {}
  ~Async() { thread_.join(); }
  bool done() const { return done_.load(); }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

cudaError_t launchGate(cudaStream_t s, std::atomic<int>* gate, std::atomic<int>* started, unsigned blocks = 1) {
  void* args[] = {&gate, &started};
  return cudaLaunchKernel(gateKernel(), dim3(blocks), dim3(32), args, 0, s);
}

cudaError_t launchAdd(cudaStream_t s, int* p, int v, unsigned blocks = 1, size_t shared = 0) {
  void* args[] = {&p, &v};
  return cudaLaunchKernel(addKernel(), dim3(blocks), dim3(32), args, shared, s);
}

bool waitFor(const std::function<bool()>& f, int ms) {
  const auto until = Clock::now() + std::chrono::milliseconds(ms);
  while (!f()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Two streams of device 0 on the same hardware queue, and one on another.
struct QueuePair {
  cudaStream_t a = nullptr, sameQueue = nullptr, otherQueue = nullptr;
  std::vector<cudaStream_t> all;
  QueuePair() {
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    all.push_back(a);
    while (sameQueue == nullptr || otherQueue == nullptr) {
      cudaStream_t s;
      CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      all.push_back(s);
      if (cudadouble::queueOf(s) == cudadouble::queueOf(a)) {
        if (sameQueue == nullptr) sameQueue = s;
      } else if (otherQueue == nullptr) {
        otherQueue = s;
      }
    }
  }
  ~QueuePair() {
    for (cudaStream_t s : all) cudaStreamDestroy(s);
  }
};

}  // namespace

TEST_CASE("the double stands in for libcudart", "[double]") {
  REQUIRE(cudadouble::active());
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  REQUIRE(n >= 2);
}

TEST_CASE("streams run in issue order and asynchronously", "[double][streams]") {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::atomic<int> gate{0}, started{0};
  int* d = nullptr;
  CK(cudaMalloc(&d, sizeof(int)));
  CK(cudaMemsetAsync(d, 0, sizeof(int), s));
  CK(launchGate(s, &gate, &started));
  CK(launchAdd(s, d, 5));  // runs after the gate kernel, in issue order
  REQUIRE(waitFor([&] { return started.load() == 1; }, 2000));
  REQUIRE(cudaStreamQuery(s) == cudaErrorNotReady);  // the launch returned before the kernel ended
  REQUIRE(cudaGetLastError() == cudaSuccess);        // cudaErrorNotReady is not recorded as an error
  int host = -1;
  std::memcpy(&host, d, sizeof(int));  // device memory is host memory in the double
  REQUIRE(host == 0);
  gate.store(1);
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(&host, d, sizeof(int), cudaMemcpyDeviceToHost));
  REQUIRE(host == 5);
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
}

TEST_CASE("streams sharing a hardware queue serialise", "[double][queues]") {
  QueuePair q;
  std::atomic<int> gate{0}, started{0}, gate2{1}, started2{0}, started3{0};
  CK(launchGate(q.a, &gate, &started));
  CK(launchGate(q.sameQueue, &gate2, &started2));   // an independent stream, but the same queue
  CK(launchGate(q.otherQueue, &gate2, &started3));  // another queue: runs at once
  REQUIRE(waitFor([&] { return started.load() == 1 && started3.load() == 1; }, 2000));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(started2.load() == 0);  // a false dependency on the kernel ahead of it in the queue
  gate.store(1);
  CK(cudaStreamSynchronize(q.sameQueue));
  REQUIRE(started2.load() == 1);
}

TEST_CASE("the legacy stream syncs with blocking streams only", "[double][streams]") {
  CK(cudaSetDevice(0));
  cudaStream_t blocking, nonBlocking;
  CK(cudaStreamCreate(&blocking));
  CK(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking));
  std::atomic<int> gate{0}, started{0}, open{1}, s2{0}, s3{0};
  CK(launchGate(0, &gate, &started));       // legacy stream: held at the gate
  CK(launchGate(blocking, &open, &s2));     // waits for the legacy stream's work
  CK(launchGate(nonBlocking, &open, &s3));  // does not
  REQUIRE(waitFor([&] { return started.load() == 1 && s3.load() == 1; }, 2000));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  REQUIRE(s2.load() == 0);
  gate.store(1);
  CK(cudaStreamSynchronize(blocking));
  REQUIRE(s2.load() == 1);
  CK(cudaStreamDestroy(blocking));
  CK(cudaStreamDestroy(nonBlocking));
}

TEST_CASE("page-table changes wait for all streams", "[double][sync]") {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* d = nullptr;
  CK(cudaMalloc(&d, 64));
  for (int which = 0; which < 4; ++which) {
    std::atomic<int> gate{0}, started{0};
    void* p = nullptr;
    if (which == 1) CK(cudaMalloc(&p, 64));
    if (which == 3) CK(cudaHostAlloc(&p, 64, cudaHostAllocMapped));
    CK(launchGate(s, &gate, &started));
    REQUIRE(waitFor([&] { return started.load() == 1; }, 2000));
    {
      Async call([&] {
        if (which == 0) CK(cudaMalloc(&p, 64));
        if (which == 1) CK(cudaFree(p));
        if (which == 2) CK(cudaHostAlloc(&p, 64, cudaHostAllocMapped));
        if (which == 3) CK(cudaFreeHost(p));
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      INFO("call " << which);
      CHECK(!call.done());  // blocked behind the non-blocking stream's running kernel
      gate.store(1);
    }
    if (which == 0) CK(cudaFree(p));
    if (which == 2) CK(cudaFreeHost(p));
  }
  // Stream-ordered allocation does not synchronise the device.
  std::atomic<int> gate{0}, started{0};
  CK(launchGate(s, &gate, &started));
  cudaStream_t other;
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  void* p = nullptr;
  CK(cudaMallocAsync(&p, 4096, other));
  CK(cudaFreeAsync(p, other));
  CK(cudaStreamSynchronize(other));
  REQUIRE(cudaStreamQuery(s) == cudaErrorNotReady);
  gate.store(1);
  CK(cudaStreamSynchronize(s));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
  CK(cudaStreamDestroy(other));
}

TEST_CASE("a page-table change blocks other threads' calls", "[double][page-table]") {
  CK(cudaSetDevice(0));
  cudaStream_t s, other;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  int* d = nullptr;
  void* p = nullptr;
  CK(cudaMalloc(&d, 64));
  CK(cudaMalloc(&p, 64));
  std::atomic<int> gate{0}, started{0};
  CK(launchGate(s, &gate, &started));
  REQUIRE(waitFor([&] { return started.load() == 1; }, 2000));
  CK(launchAdd(other, d, 1));  // no page-table change in progress: returns at once
  CK(cudaStreamSynchronize(other));
  const uint64_t changes = cudadouble::stats().pageTableChanges;
  {
    Async freeing([&] { CK(cudaFree(p)); });  // waits for the gate kernel, holding the driver's lock
    REQUIRE(waitFor([&] { return cudadouble::stats().pageTableChanges == changes + 1; }, 2000));
    Async launch([&] { CK(launchAdd(other, d, 1)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(!freeing.done());
    CHECK(!launch.done());  // a launch on another stream waits for the lock too
    gate.store(1);
  }
  CK(cudaStreamSynchronize(other));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
  CK(cudaStreamDestroy(other));
}

TEST_CASE("cudaMalloc memory is not cleared", "[double][memory]") {
  CK(cudaSetDevice(0));
  unsigned char* d = nullptr;
  CK(cudaMalloc(reinterpret_cast<void**>(&d), 256));
  std::vector<unsigned char> host(256, 0);
  CK(cudaMemcpy(host.data(), d, host.size(), cudaMemcpyDeviceToHost));
  REQUIRE(host[0] != 0);
  REQUIRE(host[255] != 0);
  CK(cudaFree(d));
}

TEST_CASE("cudaMemset and cudaMemcpy are legacy-stream work", "[double][legacy]") {
  CK(cudaSetDevice(0));
  cudaStream_t nonBlocking, blocking;
  CK(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking));
  CK(cudaStreamCreate(&blocking));
  int* d = nullptr;
  CK(cudaMalloc(&d, 64));
  int host = 0;
  auto value = [&] {
    int v = 0;
    std::memcpy(&v, d, sizeof(v));  // device memory is host memory in the double
    return v;
  };
  {
    // A non-blocking stream's running kernel orders neither call.
    std::atomic<int> gate{0}, started{0};
    CK(launchGate(nonBlocking, &gate, &started));
    REQUIRE(waitFor([&] { return started.load() == 1; }, 2000));
    CK(cudaMemset(d, 0, sizeof(int)));
    REQUIRE(waitFor([&] { return value() == 0; }, 2000));
    CK(cudaMemcpy(&host, d, sizeof(int), cudaMemcpyDeviceToHost));
    gate.store(1);
    CK(cudaStreamSynchronize(nonBlocking));
  }
  {
    // A blocking stream's kernel orders both: cudaMemset returns at once and
    // lands after it; a copy to the host returns only once it ran.
    std::atomic<int> gate{0}, started{0};
    CK(launchGate(blocking, &gate, &started));
    REQUIRE(waitFor([&] { return started.load() == 1; }, 2000));
    CK(cudaMemset(d, 1, sizeof(int)));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(value() == 0);
    {
      Async copy([&] { CK(cudaMemcpy(&host, d, sizeof(int), cudaMemcpyDeviceToHost)); });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      CHECK(!copy.done());
      gate.store(1);
    }
    REQUIRE(host == 0x01010101);
  }
  {
    // Adversarial ordering: a non-blocking stream's kernel overtakes a
    // cudaMemset issued before it.
    cudadouble::setAdversarialLegacy(200);
    CK(cudaMemset(d, 0, sizeof(int)));
    CK(launchAdd(nonBlocking, d, 5));
    CK(cudaStreamSynchronize(nonBlocking));
    const int overtaken = value();
    CK(cudaDeviceSynchronize());
    cudadouble::setAdversarialLegacy(0);
    CHECK(overtaken == 0x01010101 + 5);
    CHECK(value() == 0);
  }
  CK(cudaFree(d));
  CK(cudaStreamDestroy(nonBlocking));
  CK(cudaStreamDestroy(blocking));
}

TEST_CASE("a kernel's first launch loads it, waiting for the device", "[double][lazy]") {
  CK(cudaSetDevice(0));
  const void* lazy = defineKernel("testLazyAdd", &addBody, {sizeof(int*), sizeof(int)});
  const void* queried = defineKernel("testQueriedAdd", &addBody, {sizeof(int*), sizeof(int)});
  cudaFuncAttributes a{};
  CK(cudaFuncGetAttributes(&a, queried));  // loads it now, while nothing runs
  cudaStream_t s, other;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  int* d = nullptr;
  CK(cudaMalloc(&d, 64));
  std::atomic<int> gate{0}, started{0};
  CK(launchGate(s, &gate, &started));
  REQUIRE(waitFor([&] { return started.load() == 1; }, 2000));
  const uint64_t loads = cudadouble::stats().loadsAtLaunch;
  int one = 1;
  void* args[] = {&d, &one};
  CK(cudaLaunchKernel(queried, dim3(1), dim3(32), args, 0, other));  // loaded: returns at once
  {
    Async first([&] { CK(cudaLaunchKernel(lazy, dim3(1), dim3(32), args, 0, other)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(!first.done());  // its loading waits for the gate kernel
    gate.store(1);
  }
  CK(cudaDeviceSynchronize());
  REQUIRE(cudadouble::stats().loadsAtLaunch == loads + 1);
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
  CK(cudaStreamDestroy(other));
}

TEST_CASE("an attribute the runtime lacks is asked of the driver", "[double][attributes]") {
  int v = -1;
  const auto memOps = static_cast<cudaDeviceAttr>(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
  REQUIRE(cudaDeviceGetAttribute(&v, memOps, 0) == cudaErrorInvalidValue);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidValue);
  using DeviceGetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult st{};
  CK(cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &fn, 12000, cudaEnableDefault, &st));
  REQUIRE(st == cudaDriverEntryPointSuccess);
  REQUIRE(reinterpret_cast<DeviceGetAttribute>(fn)(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0) ==
          CUDA_SUCCESS);
  REQUIRE(v == 1);
  CK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0));
  REQUIRE(v > 0);
}

TEST_CASE("blocks beyond resident capacity wait for earlier ones", "[double][blocks]") {
  CK(cudaSetDevice(0));
  int perSm = 0, sms = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, barrierKernel(), 1024, 0));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  REQUIRE(perSm == 1);  // 64 registers x 1024 threads fill an SM's register file
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Exactly as many blocks as fit all meet (the bound is generous: 132 host
  // threads must start); one more cannot be resident until an earlier block
  // gives up, so the first ones time out.
  for (int extra : {0, 1}) {
    std::atomic<int> arrived{0}, failed{0};
    int total = perSm * sms + extra;
    int timeoutMs = extra ? 500 : 20000;
    std::atomic<int>* arrivedPtr = &arrived;
    std::atomic<int>* failedPtr = &failed;
    void* args[] = {&arrivedPtr, &total, &failedPtr, &timeoutMs};
    CK(cudaLaunchKernel(barrierKernel(), dim3(total), dim3(1024), args, 0, s));
    CK(cudaStreamSynchronize(s));
    INFO(total << " blocks, " << perSm * sms << " resident at once");
    REQUIRE(failed.load() == extra);
  }
  CK(cudaStreamDestroy(s));
}

TEST_CASE("a cooperative grid starts only when all its blocks fit", "[double][blocks][cooperative]") {
  CK(cudaSetDevice(0));
  int cooperative = 0, sms = 0;
  CK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, 0));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  REQUIRE(cooperative == 1);
  REQUIRE(sms > 32);
  cudaStream_t s, other;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  // Gate blocks on all but 32 SMs: a barrier block needs a whole SM's registers.
  std::atomic<int> gate{0}, started{0};
  CK(launchGate(other, &gate, &started, static_cast<unsigned>(sms - 32)));
  REQUIRE(waitFor([&] { return started.load() == sms - 32; }, 10000));
  std::atomic<int> arrived{0}, failed{0};
  int total = 64, timeoutMs = 20000;
  std::atomic<int>* arrivedPtr = &arrived;
  std::atomic<int>* failedPtr = &failed;
  void* args[] = {&arrivedPtr, &total, &failedPtr, &timeoutMs};
  CK(cudaLaunchCooperativeKernel(barrierKernel(), dim3(total), dim3(1024), args, 0, s));
  // An ordinary launch would start 32 blocks now; the cooperative one starts none until 64 fit.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(arrived.load() == 0);
  gate.store(1);
  CK(cudaStreamSynchronize(s));
  CHECK(arrived.load() == total);
  CHECK(failed.load() == 0);
  // A grid larger than the device holds at once is refused at launch.
  int tooMany = sms + 1;
  void* args2[] = {&arrivedPtr, &tooMany, &failedPtr, &timeoutMs};
  CHECK(cudaLaunchCooperativeKernel(barrierKernel(), dim3(tooMany), dim3(1024), args2, 0, s) ==
        cudaErrorCooperativeLaunchTooLarge);
  CHECK(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge);
  CK(cudaStreamSynchronize(other));
  CK(cudaStreamDestroy(s));
  CK(cudaStreamDestroy(other));
}

TEST_CASE("over 48 KiB of dynamic smem needs the attribute per device", "[double][attributes]") {
  int* d = nullptr;
  for (int dev : {0, 1}) {
    CK(cudaSetDevice(dev));
    CK(cudaMalloc(&d, 4096));
    REQUIRE(launchAdd(0, d, 1, 1, 64 * 1024) == cudaErrorInvalidValue);
    REQUIRE(cudaGetLastError() == cudaErrorInvalidValue);
    if (dev == 0) CK(cudaFuncSetAttribute(addKernel(), cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    if (dev == 0) CK(launchAdd(0, d, 1, 1, 64 * 1024));  // allowed on device 0 only
    CK(cudaDeviceSynchronize());
    CK(cudaFree(d));
  }
  cudaFuncAttributes a{};
  CK(cudaSetDevice(1));
  CK(cudaFuncGetAttributes(&a, addKernel()));
  REQUIRE(a.maxDynamicSharedSizeBytes == 48 * 1024);
  CK(cudaSetDevice(0));
  CK(cudaFuncGetAttributes(&a, addKernel()));
  REQUIRE(a.maxDynamicSharedSizeBytes == 64 * 1024);
}

TEST_CASE("the current device is per thread and checked at launch", "[double][devices]") {
  CK(cudaSetDevice(1));
  int other = -1;
  std::thread([&] { cudaGetDevice(&other); }).join();
  REQUIRE(other == 0);
  cudaStream_t s1;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));  // on device 1
  int* d = nullptr;
  CK(cudaMalloc(&d, 64));
  CK(cudaSetDevice(0));
  REQUIRE(launchAdd(s1, d, 1) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  CK(cudaSetDevice(1));
  CK(launchAdd(s1, d, 1));
  CK(cudaStreamSynchronize(s1));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s1));
  CK(cudaSetDevice(0));
}

TEST_CASE("non-sticky errors: Peek keeps them, GetLastError resets", "[double][errors]") {
  CK(cudaSetDevice(0));
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaSetDevice(999) == cudaErrorInvalidDevice);
  int* d = nullptr;
  CK(cudaMalloc(&d, 64));  // a successful call leaves the last error alone
  REQUIRE(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  REQUIRE(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidDevice);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  CK(cudaFree(d));
}

TEST_CASE("a reused address gets a new buffer id and IPC handle", "[double][memory]") {
  CK(cudaSetDevice(0));
  using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult st{};
  CK(cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &fn, 12000, cudaEnableDefault, &st));
  REQUIRE(st == cudaDriverEntryPointSuccess);
  auto get = reinterpret_cast<PointerGetAttribute>(fn);
  void* a = nullptr;
  CK(cudaMalloc(&a, 3 << 20));
  unsigned long long idA = 0, idB = 0;
  REQUIRE(get(&idA, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(a) + 100) == CUDA_SUCCESS);
  cudaIpcMemHandle_t ha, hb;
  CK(cudaIpcGetMemHandle(&ha, a));
  REQUIRE(cudaIpcGetMemHandle(&hb, static_cast<char*>(a) + 256) == cudaErrorInvalidValue);  // not the base
  (void)cudaGetLastError();
  CK(cudaFree(a));
  void* b = nullptr;
  CK(cudaMalloc(&b, 3 << 20));
  REQUIRE(b == a);
  REQUIRE(get(&idB, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(b)) == CUDA_SUCCESS);
  REQUIRE(idB != idA);
  CK(cudaIpcGetMemHandle(&hb, b));
  REQUIRE(std::memcmp(&ha, &hb, sizeof(ha)) != 0);
  CK(cudaFree(b));
}

TEST_CASE("mapped host memory has one address for host and device", "[double][memory]") {
  CK(cudaSetDevice(0));
  int* h = nullptr;
  int* d = nullptr;
  CK(cudaHostAlloc(reinterpret_cast<void**>(&h), sizeof(int), cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), h, 0));
  *h = 1;
  CK(launchAdd(0, d, 41));
  CK(cudaDeviceSynchronize());
  REQUIRE(*h == 42);
  CK(cudaFreeHost(h));
}

TEST_CASE("graph replay; user objects outlive graphs and launches", "[double][graphs]") {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* d = nullptr;
  CK(cudaMalloc(&d, 4 * sizeof(int)));
  CK(cudaMemsetAsync(d, 0, 4 * sizeof(int), s));
  CK(cudaStreamSynchronize(s));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  CK(launchAdd(s, d, 2, 4));
  CK(launchAdd(s, d, 3, 2));
  cudaStreamCaptureStatus status{};
  cudaGraph_t g = nullptr;
  CK(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, nullptr, nullptr, nullptr));
  REQUIRE(status == cudaStreamCaptureStatusActive);
  static std::atomic<int> destroyed{0};
  cudaUserObject_t obj;
  CK(cudaUserObjectCreate(
      &obj, &destroyed, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, 1,
      cudaUserObjectNoDestructorSync));
  CK(cudaGraphRetainUserObject(g, obj, 1, cudaGraphUserObjectMove));
  cudaGraph_t graph = nullptr;
  CK(cudaStreamEndCapture(s, &graph));
  REQUIRE(graph == g);
  int host[4] = {};
  CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
  REQUIRE(host[0] == 0);  // captured, not run
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphDestroy(graph));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost));
  REQUIRE(host[0] == 15);
  REQUIRE(host[3] == 6);
  REQUIRE(destroyed.load() == 0);  // the executable graph still holds it
  CK(cudaGraphExecDestroy(exec));
  REQUIRE(waitFor([&] { return destroyed.load() == 1; }, 2000));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
}

TEST_CASE("a thread-local capture refuses device-wide syncs", "[double][graphs]") {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  void* p = nullptr;
  bool otherThreadOk = false;
  std::thread([&] { otherThreadOk = cudaMalloc(&p, 64) == cudaSuccess; }).join();  // another thread may
  REQUIRE(otherThreadOk);
  REQUIRE(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  REQUIRE(g == nullptr);
  (void)cudaGetLastError();
  CK(cudaStreamDestroy(s));
}

TEST_CASE("using a destroyed stream is reported as a misuse", "[double][misuse]") {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamDestroy(s));
  const uint64_t before = cudadouble::stats().misuses;
  REQUIRE(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  REQUIRE(cudadouble::stats().misuses == before + 1);
}

TEST_CASE("the API tally counts outermost calls with their time", "[double][tally]") {
  REQUIRE(cudadouble_inside_api() == 0);
  cudadouble_api_tally(nullptr, 1);
  int dev = -1;
  for (int i = 0; i < 3; ++i) CK(cudaGetDevice(&dev));
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));  // forwards to cudaStreamCreateWithPriority
  CK(cudaStreamDestroy(s));
  cudadouble_tally t{};
  cudadouble_api_tally(&t, 1);
  std::map<std::string, uint64_t> calls;
  for (int i = 0; i < t.names; ++i) calls[t.name[i]] = t.count[i];
  const std::map<std::string, uint64_t> want = {
      {"cudaGetDevice", 3}, {"cudaStreamCreateWithFlags", 1}, {"cudaStreamDestroy", 1}};
  REQUIRE(calls == want);
  REQUIRE(t.calls == 5);
  REQUIRE(t.ns > 0);
  cudadouble_api_tally(&t, 0);
  REQUIRE(t.calls == 0);  // the read before reset it
}

TEST_CASE("events time stream order; NotReady before they pass", "[double][events]") {
  CK(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t before = nullptr, after = nullptr;
  CK(cudaEventCreate(&before));
  CK(cudaEventCreateWithFlags(&after, cudaEventDefault));
  REQUIRE(cudaEventQuery(after) == cudaSuccess);  // never recorded: complete
  std::atomic<int> gate{0}, started{0};
  CK(cudaEventRecord(before, s));
  CK(launchGate(s, &gate, &started));
  CK(cudaEventRecord(after, s));
  REQUIRE(waitFor([&] { return started.load() == 1; }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(cudaEventQuery(after) == cudaErrorNotReady);
  float ms = -1;
  REQUIRE(cudaEventElapsedTime(&ms, before, after) == cudaErrorNotReady);
  gate.store(1);
  CK(cudaEventSynchronize(after));
  CK(cudaEventElapsedTime(&ms, before, after));
  REQUIRE(ms >= 20.0f);  // the gate kernel ran at least the 20 ms we waited
  CK(cudaEventDestroy(before));
  CK(cudaEventDestroy(after));
  const uint64_t misuses = cudadouble::stats().misuses;
  REQUIRE(cudaEventDestroy(after) == cudaErrorInvalidResourceHandle);
  REQUIRE(cudadouble::stats().misuses == misuses + 1);
  CK(cudaStreamDestroy(s));
}

// Run with CUDA_DOUBLE_NULL_KERNELS=1 (meson.build's gpu_double_null_kernels): hidden otherwise.
TEST_CASE("null kernels are launched and ordered but not run", "[.null-kernels]") {
  REQUIRE(std::getenv("CUDA_DOUBLE_NULL_KERNELS") != nullptr);
  CK(cudaSetDevice(0));
  int* d = nullptr;
  CK(cudaMalloc(&d, sizeof(int)));
  CK(cudaMemset(d, 0, sizeof(int)));
  const uint64_t launched = cudadouble::stats().kernelsLaunched;
  CK(launchAdd(0, d, 7, 4));
  CK(cudaDeviceSynchronize());
  int h = -1;
  CK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
  REQUIRE(h == 0);
  REQUIRE(cudadouble::stats().kernelsLaunched == launched + 1);
  REQUIRE(launchAdd(0, d, 7, 1, 64 * 1024) == cudaErrorInvalidValue);  // still checked as a launch
  (void)cudaGetLastError();
  CK(cudaFree(d));
}

TEST_CASE("adversarial: a sync waits for another thread's kernel", "[double][adversarial]") {
  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudadouble::setAdversarialSync(2000);
  std::atomic<int> gate{0}, started{0};
  std::thread launcher([&] {
    cudaSetDevice(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CK(launchGate(s, &gate, &started));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.store(1);
  });
  const auto t0 = Clock::now();
  void* p = nullptr;
  CK(cudaMalloc(&p, 64));  // waits for the kernel to start, then for it to finish
  const auto waited = Clock::now() - t0;
  launcher.join();
  cudadouble::setAdversarialSync(0);
  REQUIRE(started.load() == 1);
  REQUIRE(waited >= std::chrono::milliseconds(100));
  CK(cudaFree(p));
  CK(cudaStreamDestroy(s));
}

TEST_CASE("IPC handles map across processes; stale ones are refused", "[double][ipc]") {
  CK(cudaSetDevice(0));
  char* d = nullptr;
  const size_t bytes = 1 << 20;
  CK(cudaMalloc(reinterpret_cast<void**>(&d), bytes));
  CK(cudaMemset(d, 0x5A, bytes));
  CK(cudaDeviceSynchronize());  // the memset is legacy-stream work: landed before the child reads
  cudaIpcMemHandle_t h;
  CK(cudaIpcGetMemHandle(&h, d));
  auto child = [&](const cudaIpcMemHandle_t& handle) {
    std::string hex;
    const unsigned char* b = reinterpret_cast<const unsigned char*>(&handle);
    for (size_t i = 0; i < sizeof(handle); ++i) {
      char x[3];
      std::snprintf(x, sizeof(x), "%02x", b[i]);
      hex += x;
    }
    char self[4096] = {};
    REQUIRE(readlink("/proc/self/exe", self, sizeof(self) - 1) > 0);
    char a0[] = "test_cuda_double", a1[] = "ipc-child";
    std::vector<char> a2(hex.begin(), hex.end());
    a2.push_back(0);
    char* argv[] = {a0, a1, a2.data(), nullptr};
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, self, nullptr, nullptr, argv, environ) == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  };
  REQUIRE(child(h) == 0);
  std::vector<char> host(bytes);
  CK(cudaMemcpy(host.data(), d, bytes, cudaMemcpyDeviceToHost));
  REQUIRE(host[0] == static_cast<char>(0xA5));  // the child's write landed in our allocation
  REQUIRE(host[bytes - 1] == static_cast<char>(0xA5));
  CK(cudaFree(d));
  char* again = nullptr;
  CK(cudaMalloc(reinterpret_cast<void**>(&again), bytes));
  REQUIRE(static_cast<void*>(again) == static_cast<void*>(d));  // the same address...
  REQUIRE(child(h) == 2);                                       // ...but the old handle names a freed allocation
  CK(cudaFree(again));
}

// A driver function through the runtime's entry-point query, as the runtime gets them.
template <class Fn>
Fn driverFn(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  CK(cudaGetDriverEntryPointByVersion(name, &p, 12010, cudaEnableDefault, &status));
  REQUIRE(status == cudaDriverEntryPointSuccess);
  return reinterpret_cast<Fn>(p);
}
#define CU_FN(name) driverFn<decltype(&name)>(#name)

CUmemAllocationProp deviceMemory(int device, bool shareable) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = shareable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
  return prop;
}

TEST_CASE("cuMem memory: granular, reachable after cuMemSetAccess", "[double][vmm]") {
  CK(cudaSetDevice(0));
  const uint64_t live = cudadouble::stats().liveAllocations;
  const CUmemAllocationProp prop = deviceMemory(0, true);
  size_t granularity = 0;
  REQUIRE(CU_FN(cuMemGetAllocationGranularity)(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
  REQUIRE(granularity == (2u << 20));
  CUmemGenericAllocationHandle h{};
  CHECK(CU_FN(cuMemCreate)(&h, granularity + 4096, &prop, 0) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(CU_FN(cuMemCreate)(&h, 2 * granularity, &prop, 0) == CUDA_SUCCESS);
  CUdeviceptr va = 0;
  REQUIRE(CU_FN(cuMemAddressReserve)(&va, 2 * granularity, granularity, 0, 0) == CUDA_SUCCESS);
  REQUIRE(CU_FN(cuMemMap)(va, 2 * granularity, 0, h, 0) == CUDA_SUCCESS);
  // Mapped but no access granted yet: the memory cannot be touched.
  std::vector<char> host(4096, 7);
  CHECK(cudaMemcpy(reinterpret_cast<void*>(va), host.data(), host.size(), cudaMemcpyHostToDevice) ==
        cudaErrorInvalidValue);
  (void)cudaGetLastError();
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = 0;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  REQUIRE(CU_FN(cuMemSetAccess)(va, 2 * granularity, &access, 1) == CUDA_SUCCESS);
  CK(cudaMemcpy(reinterpret_cast<void*>(va + granularity), host.data(), host.size(), cudaMemcpyHostToDevice));
  // Any address of the mapping retains its handle; cudaMalloc memory has none.
  CUmemGenericAllocationHandle again{};
  REQUIRE(CU_FN(cuMemRetainAllocationHandle)(&again, reinterpret_cast<void*>(va + 100)) == CUDA_SUCCESS);
  CHECK(again == h);
  CHECK(CU_FN(cuMemRelease)(again) == CUDA_SUCCESS);
  void* plain = nullptr;
  CK(cudaMalloc(&plain, 1 << 20));
  CHECK(CU_FN(cuMemRetainAllocationHandle)(&again, plain) == CUDA_ERROR_INVALID_VALUE);
  cudaIpcMemHandle_t ipc;
  CHECK(cudaIpcGetMemHandle(&ipc, reinterpret_cast<void*>(va)) == cudaErrorInvalidValue);  // shared by its own handles
  (void)cudaGetLastError();
  CK(cudaFree(plain));
  // Released while mapped: the memory stays until unmapped.
  REQUIRE(CU_FN(cuMemRelease)(h) == CUDA_SUCCESS);
  CK(cudaMemcpy(host.data(), reinterpret_cast<void*>(va + granularity), host.size(), cudaMemcpyDeviceToHost));
  CHECK(host[0] == 7);
  CHECK(CU_FN(cuMemAddressFree)(va, 2 * granularity) == CUDA_ERROR_INVALID_VALUE);  // still mapped
  REQUIRE(CU_FN(cuMemUnmap)(va, 2 * granularity) == CUDA_SUCCESS);
  REQUIRE(CU_FN(cuMemAddressFree)(va, 2 * granularity) == CUDA_SUCCESS);
  CHECK(cudadouble::stats().liveAllocations == live);
}

TEST_CASE("a multicast team: each GPU once, binds wait for all", "[double][vmm][multicast]") {
  CK(cudaSetDevice(0));
  const uint64_t live = cudadouble::stats().liveAllocations;
  int supported = 0;
  REQUIRE(CU_FN(cuDeviceGetAttribute)(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, 0) == CUDA_SUCCESS);
  REQUIRE(supported == 1);
  const size_t g = 2u << 20;
  CUmulticastObjectProp prop{};
  prop.numDevices = 2;
  prop.size = g + 4096;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle mc{};
  CHECK(CU_FN(cuMulticastCreate)(&mc, &prop) == CUDA_ERROR_INVALID_VALUE);  // not a multiple of the granularity
  prop.size = g;
  REQUIRE(CU_FN(cuMulticastCreate)(&mc, &prop) == CUDA_SUCCESS);
  // Shared as a file descriptor: the imported handle is the same team.
  int fd = -1;
  REQUIRE(CU_FN(cuMemExportToShareableHandle)(&fd, mc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_SUCCESS);
  CUmemGenericAllocationHandle imported{};
  REQUIRE(CU_FN(cuMemImportFromShareableHandle)(&imported, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == CUDA_SUCCESS);
  close(fd);
  REQUIRE(CU_FN(cuMulticastAddDevice)(mc, 0) == CUDA_SUCCESS);
  CHECK(CU_FN(cuMulticastAddDevice)(imported, 0) == CUDA_ERROR_INVALID_VALUE);  // a GPU joins once
  CUmemGenericAllocationHandle mem0{}, mem1{}, plain{};
  const CUmemAllocationProp p0 = deviceMemory(0, true), p1 = deviceMemory(1, true), pPlain = deviceMemory(0, false);
  REQUIRE(CU_FN(cuMemCreate)(&mem0, g, &p0, 0) == CUDA_SUCCESS);
  REQUIRE(CU_FN(cuMemCreate)(&mem1, g, &p1, 0) == CUDA_SUCCESS);
  REQUIRE(CU_FN(cuMemCreate)(&plain, g, &pPlain, 0) == CUDA_SUCCESS);
  // A bind blocks until the whole team joined.
  std::atomic<int> bound{-1};
  auto bindMem = CU_FN(cuMulticastBindMem);
  std::thread binder([&] { bound = bindMem(mc, 0, mem0, 0, g, 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(bound.load() == -1);
  REQUIRE(CU_FN(cuMulticastAddDevice)(imported, 1) == CUDA_SUCCESS);
  binder.join();
  CHECK(bound.load() == CUDA_SUCCESS);
  CHECK(CU_FN(cuMulticastAddDevice)(mc, 2) == CUDA_ERROR_INVALID_VALUE);  // the team is full
  // A shareable object binds only shareable memory, of a member GPU, once per GPU.
  CHECK(CU_FN(cuMulticastBindMem)(imported, 0, plain, 0, g, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(CU_FN(cuMulticastBindMem)(mc, 0, mem0, 0, g, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(CU_FN(cuMulticastBindMem)(imported, 0, mem1, 0, g, 0) == CUDA_SUCCESS);
  // Its mapping exists, but the double carries no multimem traffic: never accessible.
  CUdeviceptr va = 0;
  REQUIRE(CU_FN(cuMemAddressReserve)(&va, g, g, 0, 0) == CUDA_SUCCESS);
  REQUIRE(CU_FN(cuMemMap)(va, g, 0, mc, 0) == CUDA_SUCCESS);
  char byte = 1;
  CHECK(cudaMemcpy(reinterpret_cast<void*>(va), &byte, 1, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  REQUIRE(CU_FN(cuMemUnmap)(va, g) == CUDA_SUCCESS);
  REQUIRE(CU_FN(cuMemAddressFree)(va, g) == CUDA_SUCCESS);
  CHECK(CU_FN(cuMulticastUnbind)(mc, 0, 0, g) == CUDA_SUCCESS);
  CHECK(CU_FN(cuMulticastUnbind)(mc, 1, 0, g) == CUDA_SUCCESS);
  for (CUmemGenericAllocationHandle h : {mc, imported, mem0, mem1, plain})
    CHECK(CU_FN(cuMemRelease)(h) == CUDA_SUCCESS);
  CHECK(cudadouble::stats().liveAllocations == live);
}

TEST_CASE("touching freed memory is a sticky illegal address", "[double][poison]") {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  const int dev = n - 1;  // this device's context is lost afterwards
  CK(cudaSetDevice(dev));
  int* d = nullptr;
  CK(cudaMalloc(&d, 4096));
  CK(cudaFree(d));
  const uint64_t faults = cudadouble::stats().faults;
  CK(launchAdd(0, d, 1));  // the launch itself is fine; the kernel faults
  REQUIRE(cudaDeviceSynchronize() == cudaErrorIllegalAddress);
  REQUIRE(cudadouble::stats().faults == faults + 1);
  REQUIRE(cudaGetLastError() == cudaErrorIllegalAddress);  // sticky: not reset
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 64) == cudaErrorIllegalAddress);
  CK(cudaSetDevice(0));  // other devices are unaffected
  CK(cudaMalloc(&p, 64));
  CK(cudaFree(p));
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "ipc-child") == 0) {
    cudaIpcMemHandle_t h;
    unsigned char* b = reinterpret_cast<unsigned char*>(&h);
    for (size_t i = 0; i < sizeof(h); ++i)
      b[i] = static_cast<unsigned char>(std::stoi(std::string(argv[2] + 2 * i, 2), nullptr, 16));
    void* p = nullptr;
    if (cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) return 2;
    std::vector<char> host(1 << 20);
    if (cudaMemcpy(host.data(), p, host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) return 3;
    if (host[0] != 0x5A || host.back() != 0x5A) return 4;
    if (cudaMemset(p, 0xA5, host.size()) != cudaSuccess) return 5;
    if (cudaIpcCloseMemHandle(p) != cudaSuccess) return 6;
    return 0;
  }
  // Loaded before any test runs a kernel: a load meeting a running kernel waits for it.
  gateKernel();
  barrierKernel();
  addKernel();
  return mscclpp::test::runCatchSession(argc, argv);
}
