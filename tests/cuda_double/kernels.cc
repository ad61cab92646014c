// Kernels in the CUDA double: the registration calls of nvcc's generated
// host code, lazy loading, the launch path of <<<>>> and cudaLaunchKernel,
// function attributes, occupancy, and the block scheduler. A kernel runs as the host
// body registered for its name, one host thread per block. Blocks occupy
// SMs by the hardware's occupancy rules, so a grid whose blocks wait on
// blocks not yet resident deadlocks exactly as on a GPU; a cooperative
// grid's blocks become resident all at once. The launch checks and the
// rules followed are in docs/cuda-double.md, "What it implements".
// Bodies come from the program, or from CUDA_DOUBLE_HOST_KERNELS's library.
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core.hpp"
#include "cuda_double.h"
#include "memory.hpp"
#include "streams.hpp"
#include "vmm.hpp"

namespace cudadouble {
namespace {

struct KernelRecord {
  const void* hostFun = nullptr;
  std::string mangled;
  std::string key;  // demangled name without return type and parameters
};

struct Registry {
  std::mutex m;
  std::map<const void*, KernelRecord*> byHostFun;
  std::map<std::string, HostKernel> bodies;
  std::map<std::pair<const void*, int>, int> maxDynamicShared;  // (function, device) -> bytes
  std::set<std::pair<const void*, int>> loaded;                 // (function, device) loaded there
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// "void ns::(anonymous namespace)::k<float, ns::Op>(float*, int)" -> "ns::(anonymous namespace)::k<float, ns::Op>"
std::string keyOf(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || d == nullptr) return mangled;  // extern "C" kernels keep their plain name
  std::string s = d;
  std::free(d);
  static const std::string anon = "(anonymous namespace)";
  std::string t;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, anon.size(), anon) == 0) {
      t += '\x01';
      i += anon.size();
    } else {
      t += s[i++];
    }
  }
  int depth = 0;
  size_t end = t.size(), start = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (depth == 0 && c == ' ') start = i + 1;
    if (depth == 0 && c == '(') {
      end = i;
      break;
    }
  }
  std::string name = t.substr(start, end - start);
  std::string out;
  for (char c : name) {
    if (c == '\x01')
      out += anon;
    else
      out += c;
  }
  return out;
}

// CUDA_DOUBLE_HOST_KERNELS names a library whose static constructors
// register host bodies: programs built for a GPU, which carry no bodies of
// their own, run their kernels on the double with it. Loaded before the
// first kernel is looked up, outside the registry's lock (its constructors
// take it).
void loadHostKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* path = std::getenv("CUDA_DOUBLE_HOST_KERNELS");
    if (path == nullptr || *path == 0) return;
    if (dlopen(path, RTLD_NOW | RTLD_LOCAL) == nullptr)
      std::fprintf(stderr, "cuda-double: CUDA_DOUBLE_HOST_KERNELS=%s does not load: %s\n", path, dlerror());
  });
}

KernelRecord* recordOf(const void* hostFun) {
  loadHostKernels();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  auto it = r.byHostFun.find(hostFun);
  return it == r.byHostFun.end() ? nullptr : it->second;
}

// The host body of a kernel, or null (registry mutex held).
const HostKernel* bodyOf(Registry& r, const KernelRecord& k) {
  auto it = r.bodies.find(k.key);
  return it == r.bodies.end() ? nullptr : &it->second;
}

// The same, reporting a kernel nobody gave a body as a misuse.
const HostKernel* requireBody(Registry& r, const KernelRecord& k) {
  const HostKernel* body = bodyOf(r, k);
  if (body == nullptr) misuse("kernel %s has no host body registered with the double", k.key.c_str());
  return body;
}

// Lazy loading (Programming Guide, "Lazy Loading", the default since CUDA
// 12.2): a kernel is loaded on a device at its first use there, a launch or a
// query of the function (cudaFuncGetAttributes, cudaFuncSetAttribute,
// occupancy), and "loading kernels might require context synchronization":
// the double waits for all earlier work of the device. Loads at a launch are
// counted apart (Stats::loadsAtLaunch): a launch that waits so deadlocks with
// a running kernel that waits for work issued after it.
cudaError_t ensureLoaded(const KernelRecord& k, int device, bool atLaunch) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.m);
    if (r.loaded.count({k.hostFun, device}) != 0) return cudaSuccess;
  }
  const std::string what = "loading kernel " + k.key + (atLaunch ? " at its first launch" : "");
  const cudaError_t e = deviceSync(device, what.c_str(), true);
  std::lock_guard<std::mutex> lock(r.m);
  if (r.loaded.insert({k.hostFun, device}).second) {
    counters().kernelLoads.fetch_add(1);
    if (atLaunch) counters().loadsAtLaunch.fetch_add(1);
  }
  return e;
}

int maxDynamicSharedLocked(Registry& r, const void* fn, int device) {
  auto it = r.maxDynamicShared.find({fn, device});
  return it == r.maxDynamicShared.end() ? static_cast<int>(kSharedPerBlockDefault) : it->second;
}

// ---- block workers: a pool of host threads, one per running block ------------------------------
class Workers {
 public:
  void run(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(m_);
    tasks_.push_back(std::move(task));
    if (idle_ < tasks_.size()) {
      ++idle_;
      std::thread([this] { loop(); }).detach();
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return !tasks_.empty(); });
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      --idle_;
      lock.unlock();
      task();
      lock.lock();
      ++idle_;
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  size_t idle_ = 0;
};

Workers& workers() {
  static Workers* w = new Workers();
  return *w;
}

// ---- streaming multiprocessors of each device ----------------------------------------------------
struct Demand {
  int threads = 0, regs = 0;
  size_t shared = 0;
};

struct Sm {
  int threads = 0, blocks = 0, regs = 0;
  size_t shared = 0;
  bool fits(const Demand& d) const {
    return blocks + 1 <= kMaxBlocksPerSm && threads + d.threads <= kMaxThreadsPerSm &&
           regs + d.regs <= kRegistersPerSm && shared + d.shared <= kSharedPerSm;
  }
};

struct SmPool {
  std::mutex m;
  std::condition_variable cv;
  std::vector<Sm> sms;
  size_t next = 0;  // where the search starts (spreads blocks as the hardware's scheduler does)
};

SmPool& smPool(int device) {
  static std::vector<std::unique_ptr<SmPool>>* pools = [] {
    auto* v = new std::vector<std::unique_ptr<SmPool>>();
    for (int d = 0; d < config().devices; ++d) {
      v->push_back(std::make_unique<SmPool>());
      v->back()->sms.resize(static_cast<size_t>(config().sms));
    }
    return v;
  }();
  return *pools->at(static_cast<size_t>(device));
}

size_t acquireSm(SmPool& p, const Demand& d) {
  std::unique_lock<std::mutex> lock(p.m);
  for (;;) {
    for (size_t i = 0; i < p.sms.size(); ++i) {
      size_t k = (p.next + i) % p.sms.size();
      Sm& sm = p.sms[k];
      if (sm.fits(d)) {
        sm.blocks += 1;
        sm.threads += d.threads;
        sm.regs += d.regs;
        sm.shared += d.shared;
        p.next = (k + 1) % p.sms.size();
        return k;
      }
    }
    p.cv.wait(lock);  // every SM is full: wait for a block to finish
  }
}

// A cooperative grid: places all n blocks at once, waiting until they fit
// together (the Programming Guide's co-residency guarantee for grids
// launched with cudaLaunchCooperativeKernel). Returns each block's SM.
std::vector<size_t> acquireAllSms(SmPool& p, const Demand& d, unsigned n) {
  std::unique_lock<std::mutex> lock(p.m);
  for (;;) {
    std::vector<size_t> placed;
    std::vector<Sm> trial = p.sms;
    for (size_t i = 0; i < trial.size() && placed.size() < n; ++i) {
      const size_t k = (p.next + i) % trial.size();
      while (placed.size() < n && trial[k].fits(d)) {
        trial[k].blocks += 1;
        trial[k].threads += d.threads;
        trial[k].regs += d.regs;
        trial[k].shared += d.shared;
        placed.push_back(k);
      }
    }
    if (placed.size() == n) {
      p.sms = std::move(trial);
      p.next = (placed.back() + 1) % p.sms.size();
      return placed;
    }
    p.cv.wait(lock);  // not all fit yet: none starts
  }
}

void releaseSm(SmPool& p, size_t k, const Demand& d) {
  std::lock_guard<std::mutex> lock(p.m);
  Sm& sm = p.sms[k];
  sm.blocks -= 1;
  sm.threads -= d.threads;
  sm.regs -= d.regs;
  sm.shared -= d.shared;
  p.cv.notify_all();
}

Demand demandOf(const HostKernel& k, dim3 block, size_t dynamicShared) {
  Demand d;
  const int threads = static_cast<int>(block.x * block.y * block.z);
  d.threads = (threads + 31) / 32 * 32;
  d.regs = k.numRegs * d.threads;
  d.shared = k.staticSharedBytes + dynamicShared + kSharedReservedPerBlock;
  return d;
}

// Blocks per SM of a kernel configuration, by the rules the scheduler enforces
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor); 0 when it cannot run.
int blocksPerSmOf(const HostKernel& k, int blockSize, size_t dynamicShared) {
  const Demand d = demandOf(k, dim3(static_cast<unsigned>(blockSize)), dynamicShared);
  int n = kMaxBlocksPerSm;
  n = std::min(n, kMaxThreadsPerSm / d.threads);
  if (d.regs > 0) n = std::min(n, kRegistersPerSm / d.regs);
  n = std::min(n, static_cast<int>(kSharedPerSm / d.shared));
  if (blockSize > k.maxThreadsPerBlock || k.staticSharedBytes + dynamicShared > kSharedPerBlockOptin) n = 0;
  return n;
}

// Runs every block of one launch and returns when all finished (on the queue's worker).
void runGrid(int device, std::string name, HostKernel kernel, dim3 grid, dim3 block, size_t dynamicShared,
             std::shared_ptr<std::vector<char>> argBytes, std::vector<size_t> argOffsets, std::thread::id launcher,
             bool cooperative) {
  std::vector<void*> args;
  for (size_t off : argOffsets) args.push_back(argBytes->data() + off);
  const unsigned nBlocks = grid.x * grid.y * grid.z;
  const Demand demand = demandOf(kernel, block, dynamicShared);
  SmPool& pool = smPool(device);
  kernelStarted(device, launcher);
  std::mutex m;
  std::condition_variable cv;
  unsigned remaining = nBlocks;
  const std::vector<size_t> gang = cooperative ? acquireAllSms(pool, demand, nBlocks) : std::vector<size_t>();
  for (unsigned b = 0; b < nBlocks; ++b) {
    const size_t sm = cooperative ? gang[b] : acquireSm(pool, demand);
    workers().run([&, b, sm] {
      setCurrentDevice(device);
      const std::string what = "kernel " + name + " block " + std::to_string(b);
      if (stickyOf(device) == cudaSuccess) {
        try {
          guarded(device, what.c_str(), [&] { kernel.body(args.data(), grid, block, b, dynamicShared, kernel.user); });
        } catch (const std::exception& e) {
          std::fprintf(stderr, "cuda-double: %s failed: %s (cudaErrorLaunchFailure, sticky)\n", what.c_str(), e.what());
          setSticky(device, cudaErrorLaunchFailure, what + ": " + e.what());
        }
      }
      releaseSm(pool, sm, demand);
      std::lock_guard<std::mutex> lock(m);
      if (--remaining == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return remaining == 0; });
  kernelFinished(device, launcher);
}

// Checks the configuration as the runtime does, then enqueues the launch.
// Dynamic shared memory above 48 KiB needs the attribute raised for the
// function on the current device, since function attributes are per device.
// A cooperative launch also needs the device's cudaDevAttrCooperativeLaunch
// and a grid that fits the device at once (Runtime API
// cudaLaunchCooperativeKernel).
cudaError_t launch(KernelRecord* k, dim3 grid, dim3 block, void** args, size_t dynamicShared, cudaStream_t stream,
                   bool cooperative = false) {
  CD_ENTER();
  if (k == nullptr) {
    misuse("a launch of a function that is not a registered kernel");
    return fail(cudaErrorInvalidDeviceFunction);
  }
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  const int device = currentDevice();
  if (s->device != device) return fail(cudaErrorInvalidResourceHandle);  // the stream's device must be current
  HostKernel kernel;
  int maxDyn = 0;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.m);
    const HostKernel* body = requireBody(r, *k);
    if (body == nullptr) return fail(cudaErrorInvalidDeviceFunction);
    kernel = *body;
    maxDyn = maxDynamicSharedLocked(r, k->hostFun, device);
  }
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || threads == 0 ||
      threads > static_cast<uint64_t>(std::min(kMaxThreadsPerBlock, kernel.maxThreadsPerBlock)) || block.z > 64)
    return fail(cudaErrorInvalidConfiguration);
  if (dynamicShared > static_cast<size_t>(maxDyn) || kernel.staticSharedBytes + dynamicShared > kSharedPerBlockOptin)
    return fail(cudaErrorInvalidValue);
  const Demand demand = demandOf(kernel, block, dynamicShared);
  if (demand.regs > kRegistersPerSm) return fail(cudaErrorLaunchOutOfResources);
  if (cooperative) {
    if (!config().cooperative) return fail(cudaErrorNotSupported);
    const uint64_t capacity = uint64_t(blocksPerSmOf(kernel, static_cast<int>(threads), dynamicShared)) * config().sms;
    if (uint64_t{grid.x} * grid.y * grid.z > capacity) return fail(cudaErrorCooperativeLaunchTooLarge);
  }
  if (cudaError_t e = ensureLoaded(*k, device, true); e != cudaSuccess) return e;
  // Kernel parameters are copied at launch (the caller's variables may go away at once).
  auto bytes = std::make_shared<std::vector<char>>();
  std::vector<size_t> offsets;
  for (size_t i = 0; i < kernel.argSizes.size(); ++i) {
    size_t off = (bytes->size() + 15) / 16 * 16;
    bytes->resize(off + kernel.argSizes[i]);
    std::memcpy(bytes->data() + off, args[i], kernel.argSizes[i]);
    offsets.push_back(off);
  }
  counters().kernelsLaunched.fetch_add(1);
  if (cooperative) counters().cooperativeLaunches.fetch_add(1);
  // CUDA_DOUBLE_NULL_KERNELS: checked and ordered like any launch, then done at once.
  if (config().nullKernels)
    return enqueue(
        s, [] {}, true);
  const std::thread::id launcher = std::this_thread::get_id();
  const std::string name = k->key;
  return enqueue(
      s, [=] { runGrid(device, name, kernel, grid, block, dynamicShared, bytes, offsets, launcher, cooperative); },
      true);
}

thread_local std::vector<std::tuple<dim3, dim3, size_t, cudaStream_t>> tCallConfigurations;

}  // namespace

void registerHostKernel(const std::string& name, const HostKernel& kernel) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.bodies[name] = kernel;
}

Stats stats() {
  Stats s;
  Counters& c = counters();
  s.misuses = c.misuses.load();
  s.lastMisuse = lastMisuseText();
  s.faults = c.faults.load();
  s.lastFault = lastFaultText();
  MemoryStats m = memoryStats();
  s.liveAllocations = m.liveAllocations + vmmLiveHandles();
  s.liveBytes = m.liveBytes;
  s.deviceSyncs = c.deviceSyncs.load();
  s.kernelsLaunched = c.kernelsLaunched.load();
  s.cooperativeLaunches = c.cooperativeLaunches.load();
  s.multicastBinds = multicastBinds();
  s.streamsCreated = c.streamsCreated.load();
  s.pageTableChanges = c.pageTableChanges.load();
  s.kernelLoads = c.kernelLoads.load();
  s.loadsAtLaunch = c.loadsAtLaunch.load();
  return s;
}

}  // namespace cudadouble

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

extern "C" {

void** __cudaRegisterFatBinary(void* fatCubin) { return new void*(fatCubin); }
void __cudaRegisterFatBinaryEnd(void** /*fatCubinHandle*/) {}
// Kept: host stubs may still be called while libraries unload at exit.
void __cudaUnregisterFatBinary(void** /*fatCubinHandle*/) {}

void __cudaRegisterFunction(void** /*fatCubinHandle*/, const char* hostFun, char* deviceFun, const char* /*deviceName*/,
                            int /*thread_limit*/, uint3* /*tid*/, uint3* /*bid*/, dim3* /*bDim*/, dim3* /*gDim*/,
                            int* /*wSize*/) {
  auto* k = new KernelRecord();
  k->hostFun = hostFun;
  k->mangled = deviceFun;
  k->key = keyOf(deviceFun);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  r.byHostFun[hostFun] = k;
}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st* stream) {
  CD_TALLY();
  tCallConfigurations.emplace_back(gridDim, blockDim, sharedMem, stream);
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  CD_TALLY();
  if (tCallConfigurations.empty()) return fail(cudaErrorInvalidConfiguration);
  auto [g, b, s, st] = tCallConfigurations.back();
  tCallConfigurations.pop_back();
  *gridDim = g;
  *blockDim = b;
  *sharedMem = s;
  *static_cast<cudaStream_t*>(stream) = st;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun) {
  CD_TALLY();
  KernelRecord* k = recordOf(hostFun);
  if (kernel == nullptr || k == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  *kernel = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                               cudaStream_t stream) {
  CD_TALLY();
  return launch(reinterpret_cast<KernelRecord*>(kernel), gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                    cudaStream_t stream) {
  CD_TALLY();
  return launch(reinterpret_cast<KernelRecord*>(kernel), gridDim, blockDim, args, sharedMem,
                stream == nullptr ? cudaStreamPerThread : stream);
}

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                             cudaStream_t stream) {
  CD_TALLY();
  return launch(recordOf(func), gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                        cudaStream_t stream) {
  CD_TALLY();
  return launch(recordOf(func), gridDim, blockDim, args, sharedMem, stream, true);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                             size_t sharedMem, cudaStream_t stream) {
  CD_TALLY();
  return launch(recordOf(func), gridDim, blockDim, args, sharedMem, stream == nullptr ? cudaStreamPerThread : stream,
                true);
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  CD_ENTER();
  KernelRecord* k = recordOf(func);
  if (k == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  if (cudaError_t e = ensureLoaded(*k, currentDevice(), false); e != cudaSuccess) return e;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  const HostKernel* body = bodyOf(r, *k);
  const size_t staticShared = body ? body->staticSharedBytes : 0;
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || static_cast<size_t>(value) + staticShared > kSharedPerBlockOptin)
        return fail(cudaErrorInvalidValue);
      // Per device: the value applies to the function on the calling thread's current device.
      r.maxDynamicShared[{func, currentDevice()}] = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return value >= -1 && value <= 100 ? cudaSuccess : fail(cudaErrorInvalidValue);
    default:
      return fail(cudaErrorNotSupported);
  }
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  CD_ENTER();
  KernelRecord* k = recordOf(func);
  if (attr == nullptr || k == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  if (cudaError_t e = ensureLoaded(*k, currentDevice(), false); e != cudaSuccess) return e;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  const HostKernel* body = requireBody(r, *k);
  if (body == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = std::min(kMaxThreadsPerBlock, body->maxThreadsPerBlock);
  attr->numRegs = body->numRegs;
  attr->sharedSizeBytes = body->staticSharedBytes;
  attr->maxDynamicSharedSizeBytes = maxDynamicSharedLocked(r, func, currentDevice());
  attr->binaryVersion = 90;
  attr->ptxVersion = 90;
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func, int blockSize,
                                                                   size_t dynamicSMemSize, unsigned int /*flags*/) {
  CD_ENTER();
  KernelRecord* k = recordOf(func);
  if (numBlocks == nullptr || k == nullptr || blockSize <= 0) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = ensureLoaded(*k, currentDevice(), false); e != cudaSuccess) return e;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.m);
  const HostKernel* body = bodyOf(r, *k);
  if (body == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  *numBlocks = blocksPerSmOf(*body, blockSize, dynamicSMemSize);
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func, int blockSize,
                                                          size_t dynamicSMemSize) {
  CD_TALLY();
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

}  // extern "C"
