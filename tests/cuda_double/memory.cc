// The CUDA double's memory: the arena, allocations, copies, memsets,
// host-mapped memory, IPC handles, pointer attributes, and the fault guard (see
// memory.hpp).
#include "memory.hpp"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fcntl.h>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core.hpp"
#include "streams.hpp"

namespace cudadouble {
namespace {

constexpr size_t kGranule = 64 * 1024;
constexpr int kUnclearedByte = 0xCD;              // what a new device allocation holds
constexpr size_t kSliceBytes = size_t{32} << 30;  // per device, for host allocations, for imports

uintptr_t gArenaBase = 0, gArenaEnd = 0;  // written once, read by the fault handler

struct Slice {
  uintptr_t base = 0, bump = 0, end = 0;
  std::map<size_t, std::vector<uintptr_t>> freeByCapacity;  // most recently freed last
};

struct Memory {
  std::mutex m;
  std::vector<Slice> slices;             // devices..., host, imports
  std::map<uintptr_t, Allocation> live;  // by base
  uint64_t nextBufferId = 1;
  uint64_t liveBytes = 0;
  // IPC imports by (exporter pid, exporter buffer id): opened once, reference counted.
  struct Import {
    uintptr_t base;
    int refs;
  };
  std::map<std::pair<int, uint64_t>, Import> imports;
};

Memory& memory() {
  static Memory* mem = [] {
    auto* p = new Memory();
    const size_t n = static_cast<size_t>(config().devices) + 2;
    void* a = mmap(nullptr, n * kSliceBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED) {
      std::fprintf(stderr, "cuda-double: cannot reserve %zu GiB of address space: %s\n", (n * kSliceBytes) >> 30,
                   std::strerror(errno));
      std::abort();
    }
    gArenaBase = reinterpret_cast<uintptr_t>(a);
    gArenaEnd = gArenaBase + n * kSliceBytes;
    for (size_t i = 0; i < n; ++i) {
      Slice s;
      s.base = s.bump = gArenaBase + i * kSliceBytes;
      s.end = s.base + kSliceBytes;
      p->slices.push_back(s);
    }
    // One memfd per allocation (IPC): allow as many descriptors as the hard limit does.
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    return p;
  }();
  return *mem;
}

size_t hostSlice() { return static_cast<size_t>(config().devices); }
size_t importSlice() { return static_cast<size_t>(config().devices) + 1; }

void poison(uintptr_t base, size_t capacity) {
  // Unmapped for good measure: any later access faults (and is reported) instead of reading stale data.
  mmap(reinterpret_cast<void*>(base), capacity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
       0);
}

// Reserves an address for `capacity` bytes in slice `si`: the most recently
// freed fitting block, else fresh space. Memory mutex held.
uintptr_t takeAddress(Slice& s, size_t capacity, size_t* gotCapacity) {
  auto exact = s.freeByCapacity.find(capacity);
  auto it = exact != s.freeByCapacity.end() ? exact : s.freeByCapacity.lower_bound(capacity);
  if (it != s.freeByCapacity.end()) {
    uintptr_t a = it->second.back();
    *gotCapacity = it->first;
    it->second.pop_back();
    if (it->second.empty()) s.freeByCapacity.erase(it);
    return a;
  }
  if (s.end - s.bump < capacity) return 0;
  uintptr_t a = s.bump;
  s.bump += capacity;
  *gotCapacity = capacity;
  return a;
}

// Maps a new allocation; returns the error CUDA would give.
cudaError_t allocate(size_t bytes, int device, MemKind kind, bool streamOrdered, void** out) {
  Memory& mem = memory();
  const size_t capacity = (bytes + kGranule - 1) / kGranule * kGranule;
  std::lock_guard<std::mutex> lock(mem.m);
  Slice& slice = mem.slices[kind == MemKind::Host ? hostSlice() : static_cast<size_t>(device)];
  size_t got = 0;
  uintptr_t a = takeAddress(slice, capacity, &got);
  if (a == 0) return cudaErrorMemoryAllocation;
  Allocation al;
  al.base = a;
  al.size = bytes;
  al.capacity = got;
  al.device = device;
  al.kind = kind;
  al.streamOrdered = streamOrdered;
  al.bufferId = mem.nextBufferId++;
  void* p = MAP_FAILED;
  if (kind == MemKind::Device) {
    const std::string name = "cuda-double-" + std::to_string(al.bufferId);
    al.fd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (al.fd >= 0 && ftruncate(al.fd, static_cast<off_t>(got)) == 0)
      p = mmap(reinterpret_cast<void*>(a), got, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, al.fd, 0);
    // Runtime API, cudaMalloc: "The memory is not cleared." Whoever needs
    // zeros must write them, and a zeroing that lands late is seen.
    if (p != MAP_FAILED) std::memset(p, kUnclearedByte, got);
  } else {
    p = mmap(reinterpret_cast<void*>(a), got, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  }
  if (p == MAP_FAILED) {
    if (al.fd >= 0) close(al.fd);
    slice.freeByCapacity[got].push_back(a);
    return cudaErrorMemoryAllocation;
  }
  mem.live[a] = al;
  mem.liveBytes += bytes;
  *out = reinterpret_cast<void*>(a);
  return cudaSuccess;
}

// Unmaps a live allocation (memory mutex held); its address becomes reusable.
// A mapping's address stays in its reserved range.
void release(Memory& mem, std::map<uintptr_t, Allocation>::iterator it) {
  const Allocation al = it->second;
  mem.live.erase(it);
  poison(al.base, al.capacity);
  if (al.fd >= 0) close(al.fd);
  if (al.kind == MemKind::Device || al.kind == MemKind::Host) {
    mem.liveBytes -= al.size;
    Slice& slice = mem.slices[al.kind == MemKind::Host ? hostSlice() : static_cast<size_t>(al.device)];
    slice.freeByCapacity[al.capacity].push_back(al.base);
  }
}

bool lookupLocked(Memory& mem, uintptr_t p, std::map<uintptr_t, Allocation>::iterator* out) {
  auto it = mem.live.upper_bound(p);
  if (it == mem.live.begin()) return false;
  --it;
  if (p >= it->second.base + it->second.capacity) return false;
  *out = it;
  return true;
}

// ---- the fault guard ---------------------------------------------------------------------------
thread_local sigjmp_buf* tGuard = nullptr;
thread_local uintptr_t tFaultAddress = 0;
struct sigaction gPrevious;
std::mutex gHandlerMutex;

void onSegv(int sig, siginfo_t* info, void* context) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  // Any fault inside a kernel or a copy is the device's: an access to freed
  // memory, or through a pointer read from freed-and-reused memory (a wild
  // address), is an illegal address on a GPU.
  if (tGuard != nullptr) {
    tFaultAddress = a;
    siglongjmp(*tGuard, 1);
  }
  // Not a device access: hand it to whoever handled it before, or crash as usual.
  if ((gPrevious.sa_flags & SA_SIGINFO) != 0 && gPrevious.sa_sigaction != nullptr) {
    gPrevious.sa_sigaction(sig, info, context);
    return;
  }
  if (gPrevious.sa_handler != SIG_DFL && gPrevious.sa_handler != SIG_IGN && gPrevious.sa_handler != nullptr) {
    gPrevious.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);  // returning re-executes the access, which now kills the process
}

// (Re)installs the handler when something (a test framework) replaced it.
void installHandler() {
  struct sigaction cur {};
  sigaction(SIGSEGV, nullptr, &cur);
  if ((cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == onSegv) return;
  std::lock_guard<std::mutex> lock(gHandlerMutex);
  struct sigaction mine {};
  mine.sa_sigaction = onSegv;
  mine.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&mine.sa_mask);
  struct sigaction old {};
  sigaction(SIGSEGV, &mine, &old);
  if (!((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction == onSegv)) gPrevious = old;
}

std::string describeAddress(uintptr_t a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

// A copy or memset touching [p, p + n) on the device: refused with a fault when
// it leaves the live allocations.
bool checkDeviceRange(int device, const void* p, size_t n, const char* what) {
  if (n == 0 || deviceAccessible(p, n)) return true;
  fault(device, std::string(what) + " touches " + describeAddress(reinterpret_cast<uintptr_t>(p)) + " (+" +
                    std::to_string(n) + " bytes), which is not live device memory (freed, or never allocated)");
  return false;
}

int deviceOfPointer(const void* p, int fallback) {
  Allocation a;
  return lookup(p, &a) && a.kind != MemKind::Host ? a.device : fallback;
}

struct IpcHandle {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  int32_t device;
  uint64_t bufferId;
  uint64_t capacity;
  uint64_t size;
  uint8_t reserved[24];
};
static_assert(sizeof(IpcHandle) == sizeof(cudaIpcMemHandle_t), "an IPC handle is 64 bytes");
constexpr uint32_t kIpcMagic = 0x43444950;  // "CDIP"

bool pinnedHost(const void* p) {
  Allocation a;
  return inArena(p) && lookup(p, &a) && a.kind == MemKind::Host;
}

// A copy in stream order. From pageable host memory to the device, CUDA "may
// synchronize with the stream and stage the copy into pinned memory" (Runtime
// API, "API synchronization behavior"): the double always does, so the caller
// may reuse its buffer at once, but the call waits for the stream's earlier
// work. *out: the operation (null when captured).
cudaError_t copyOn(CUstream_st* s, void* dst, const void* src, size_t count, OpPtr* out) {
  const int device = s->device;
  if (captureOf(s) == nullptr && !inArena(src) && inArena(dst)) {
    streamWait(s);
    auto staged =
        std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + count);
    return enqueue(
        s,
        [device, dst, staged] {
          if (!checkDeviceRange(device, dst, staged->size(), "cudaMemcpyAsync")) return;
          guarded(device, "cudaMemcpyAsync", [&] { std::memcpy(dst, staged->data(), staged->size()); });
        },
        false, out);
  }
  return enqueue(
      s,
      [device, dst, src, count] {
        if (!checkDeviceRange(device, dst, count, "cudaMemcpyAsync") ||
            !checkDeviceRange(device, src, count, "cudaMemcpyAsync"))
          return;
        guarded(device, "cudaMemcpyAsync", [&] { std::memmove(dst, src, count); });
      },
      false, out);
}

cudaError_t memsetOn(CUstream_st* s, void* devPtr, int value, size_t count, OpPtr* out) {
  const int device = s->device;
  return enqueue(
      s,
      [device, devPtr, value, count] {
        if (!checkDeviceRange(device, devPtr, count, "cudaMemsetAsync")) return;
        guarded(device, "cudaMemsetAsync", [&] { std::memset(devPtr, value, count); });
      },
      false, out);
}

}  // namespace

bool inArena(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return a >= gArenaBase && a < gArenaEnd;
}

bool lookup(const void* p, Allocation* out) {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  std::map<uintptr_t, Allocation>::iterator it;
  if (!lookupLocked(mem, reinterpret_cast<uintptr_t>(p), &it)) return false;
  *out = it->second;
  return true;
}

bool deviceAccessible(const void* p, size_t n) {
  memory();
  if (!inArena(p)) return true;
  Allocation a;
  if (!lookup(p, &a) || a.kind == MemKind::Multicast || !a.accessible) return false;
  return reinterpret_cast<uintptr_t>(p) + n <= a.base + a.capacity;
}

uintptr_t reserveRange(size_t bytes, size_t alignment) {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  Slice& s = mem.slices[importSlice()];
  size_t got = 0;
  const size_t align = alignment > kGranule ? alignment : kGranule;
  // Fresh space, aligned; the bytes skipped for alignment stay unused.
  auto exact = s.freeByCapacity.find(bytes);
  if (exact != s.freeByCapacity.end() && exact->second.back() % align == 0) return takeAddress(s, bytes, &got);
  const uintptr_t start = (s.bump + align - 1) / align * align;
  if (start > s.end || s.end - start < bytes) return 0;
  s.bump = start + bytes;
  return start;
}

void freeRange(uintptr_t base, size_t bytes) {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  mem.slices[importSlice()].freeByCapacity[bytes].push_back(base);
}

bool addMapping(uintptr_t addr, size_t bytes, int fd, size_t offset, int device, MemKind kind) {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  std::map<uintptr_t, Allocation>::iterator it;
  if (lookupLocked(mem, addr, &it) || lookupLocked(mem, addr + bytes - 1, &it)) return false;
  auto next = mem.live.lower_bound(addr);
  if (next != mem.live.end() && next->first < addr + bytes) return false;
  if (fd >= 0) {
    void* p =
        mmap(reinterpret_cast<void*>(addr), bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return false;
  }
  Allocation al;
  al.base = addr;
  al.size = bytes;
  al.capacity = bytes;
  al.device = device;
  al.kind = kind;
  al.bufferId = mem.nextBufferId++;
  al.accessible = false;
  mem.live[addr] = al;
  return true;
}

bool removeMapping(uintptr_t addr, size_t bytes) {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  auto it = mem.live.find(addr);
  if (it == mem.live.end() || it->second.capacity != bytes ||
      (it->second.kind != MemKind::Mapped && it->second.kind != MemKind::Multicast))
    return false;
  release(mem, it);
  return true;
}

bool allowMapping(uintptr_t addr, size_t bytes) {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  for (uintptr_t a = addr; a < addr + bytes;) {
    std::map<uintptr_t, Allocation>::iterator it;
    if (!lookupLocked(mem, a, &it) || it->second.kind != MemKind::Mapped) return false;
    a = it->second.base + it->second.capacity;
  }
  for (uintptr_t a = addr; a < addr + bytes;) {
    std::map<uintptr_t, Allocation>::iterator it;
    lookupLocked(mem, a, &it);
    mprotect(reinterpret_cast<void*>(it->second.base), it->second.capacity, PROT_READ | PROT_WRITE);
    it->second.accessible = true;
    a = it->second.base + it->second.capacity;
  }
  return true;
}

MemoryStats memoryStats() {
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  MemoryStats s;
  for (const auto& [base, a] : mem.live) s.liveAllocations += a.kind != MemKind::Import ? 1 : 0;
  s.liveBytes = mem.liveBytes;
  return s;
}

bool guarded(int device, const char* what, void (*f)(void*), void* arg) {
  memory();
  installHandler();
  sigjmp_buf jb;
  sigjmp_buf* outer = tGuard;
  if (sigsetjmp(jb, 1) != 0) {
    tGuard = outer;
    fault(device, std::string(what) + " touched " + describeAddress(tFaultAddress) + ", which is not mapped (" +
                      (inArena(reinterpret_cast<void*>(tFaultAddress)) ? "freed or never allocated device memory"
                                                                       : "a wild address") +
                      ")");
    return false;
  }
  tGuard = &jb;
  try {
    f(arg);
  } catch (...) {
    tGuard = outer;
    throw;
  }
  tGuard = outer;
  return true;
}

}  // namespace cudadouble

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

extern "C" {

// ---- allocation ---------------------------------------------------------------------------------

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  CD_ENTER();
  if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
  // Programming Guide, "Implicit Synchronization": a device memory allocation
  // between two commands of different streams keeps them from running
  // concurrently. A page-table change: the driver's lock is held meanwhile.
  PageTableChange change(currentDevice(), "cudaMalloc");
  if (change.result() != cudaSuccess) return change.result();
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  return fail(allocate(size, currentDevice(), MemKind::Device, false, devPtr));
}

cudaError_t cudaFree(void* devPtr) {
  CD_ENTER();
  if (devPtr == nullptr) return cudaSuccess;  // "If devPtr is 0, no operation is performed."
  int device = deviceOfPointer(devPtr, currentDevice());
  // Programming Guide, "Stream-Ordered Memory Allocator": cudaFree synchronizes
  // the GPU across all executing streams, holding the driver's lock.
  PageTableChange change(device, "cudaFree");
  if (change.result() != cudaSuccess) return change.result();
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  auto it = mem.live.find(reinterpret_cast<uintptr_t>(devPtr));
  if (it == mem.live.end() || it->second.kind != MemKind::Device) {
    misuse("cudaFree(%p): not the base of a live cudaMalloc allocation", devPtr);
    return fail(cudaErrorInvalidValue);
  }
  release(mem, it);
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (s->capture) return fail(cudaErrorNotSupported);  // graph memory nodes are not modelled
  awaitDriverLock(s->device, "cudaMallocAsync");
  // Runtime API, cudaMallocAsync: stream-ordered, no device synchronisation;
  // the memory may be used by work ordered after the allocation in this stream.
  return fail(allocate(size == 0 ? 1 : size, s->device, MemKind::Device, true, devPtr));
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (s->capture) return fail(cudaErrorNotSupported);
  {
    Memory& mem = memory();
    std::lock_guard<std::mutex> lock(mem.m);
    auto it = mem.live.find(reinterpret_cast<uintptr_t>(devPtr));
    if (it == mem.live.end() || it->second.kind != MemKind::Device) {
      misuse("cudaFreeAsync(%p): not the base of a live device allocation", devPtr);
      return fail(cudaErrorInvalidValue);
    }
  }
  // Freed when the stream reaches it; work ordered after it must not touch the memory.
  return enqueue(
      s,
      [devPtr] {
        Memory& mem = memory();
        std::lock_guard<std::mutex> lock(mem.m);
        auto it = mem.live.find(reinterpret_cast<uintptr_t>(devPtr));
        if (it != mem.live.end()) release(mem, it);
      },
      false);
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  CD_ENTER();
  if (pHost == nullptr || (flags & ~0xfu) != 0) return fail(cudaErrorInvalidValue);
  // "Implicit Synchronization": a page-locked host memory allocation, mapped
  // into the device's context (a page-table change).
  PageTableChange change(currentDevice(), "cudaHostAlloc");
  if (change.result() != cudaSuccess) return change.result();
  return fail(allocate(size == 0 ? 1 : size, currentDevice(), MemKind::Host, false, pHost));
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

cudaError_t cudaFreeHost(void* ptr) {
  CD_ENTER();
  if (ptr == nullptr) return cudaSuccess;
  PageTableChange change(currentDevice(), "cudaFreeHost");
  if (change.result() != cudaSuccess) return change.result();
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  auto it = mem.live.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == mem.live.end() || it->second.kind != MemKind::Host) {
    misuse("cudaFreeHost(%p): not the base of a live cudaHostAlloc allocation", ptr);
    return fail(cudaErrorInvalidValue);
  }
  release(mem, it);
  return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  CD_ENTER();
  Allocation a;
  if (pDevice == nullptr || flags != 0) return fail(cudaErrorInvalidValue);
  if (!lookup(pHost, &a) || a.kind != MemKind::Host) return fail(cudaErrorInvalidValue);
  // Unified addressing (Programming Guide, "Unified Virtual Address Space"):
  // mapped host memory has the same address on the device.
  *pDevice = pHost;
  return cudaSuccess;
}

// ---- copies and sets ----------------------------------------------------------------------------

// Runtime API, "API synchronization behavior" (Memcpy): on the legacy default
// stream of the current device; from pageable host memory to the device the
// stream's earlier work is waited for and the bytes staged, and the copy may
// land after the call returns; from pinned host memory to the device, and from
// the device to host memory, the call returns once the copy completed; device
// to device, it returns at once; host to host is a plain copy.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  CD_ENTER();
  (void)kind;  // unified addressing: the pointers say where they are
  if (count == 0) return cudaSuccess;
  const bool dstHost = !inArena(dst) || pinnedHost(dst), srcHost = !inArena(src) || pinnedHost(src);
  if (dstHost && srcHost) {
    std::memmove(dst, src, count);
    return cudaSuccess;
  }
  if (!deviceAccessible(dst, count) || !deviceAccessible(src, count)) return fail(cudaErrorInvalidValue);
  CUstream_st* legacy = nullptr;
  if (cudaError_t e = resolveStream(cudaStreamLegacy, &legacy); e != cudaSuccess) return e;
  OpPtr op;
  if (cudaError_t e = copyOn(legacy, dst, src, count, &op); e != cudaSuccess) return e;
  if (op && (dstHost || pinnedHost(src))) op->wait();
  const cudaError_t sticky = stickyOf(legacy->device);
  return sticky != cudaSuccess ? fail(sticky) : cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  CD_ENTER();
  (void)kind;
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  OpPtr op;
  cudaError_t e = copyOn(s, dst, src, count, &op);
  // To pageable host memory the call returns only once the copy completed.
  if (e == cudaSuccess && op && !inArena(dst) && inArena(src)) op->wait();
  return e;
}

// Device-to-device only (what the runtime uses: staging parts at a padded
// pitch): "cudaMemcpy2DAsync" copies `height` rows of `width` bytes, dpitch and
// spitch apart; pitches below the width are invalid.
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  CD_ENTER();
  (void)kind;
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (width == 0 || height == 0) return cudaSuccess;
  if (dpitch < width || spitch < width) return fail(cudaErrorInvalidPitchValue);
  if (!inArena(dst) || !inArena(src)) return fail(cudaErrorNotSupported);  // host rows: not modelled
  const int device = s->device;
  const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  return enqueue(
      s,
      [=] {
        if (!checkDeviceRange(device, dst, dspan, "cudaMemcpy2DAsync") ||
            !checkDeviceRange(device, src, sspan, "cudaMemcpy2DAsync"))
          return;
        guarded(device, "cudaMemcpy2DAsync", [&] {
          for (size_t row = 0; row < height; ++row)
            std::memmove(static_cast<char*>(dst) + row * dpitch, static_cast<const char*>(src) + row * spitch, width);
        });
      },
      false);
}

// Runtime API, "API synchronization behavior" (Memset): asynchronous to the
// host except when the target is pinned host memory; on the legacy default
// stream, so ordered after blocking streams' earlier work and not against
// non-blocking streams.
cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  CD_ENTER();
  if (count == 0) return cudaSuccess;
  if (!inArena(devPtr) || !deviceAccessible(devPtr, count)) return fail(cudaErrorInvalidValue);
  CUstream_st* legacy = nullptr;
  if (cudaError_t e = resolveStream(cudaStreamLegacy, &legacy); e != cudaSuccess) return e;
  OpPtr op;
  if (cudaError_t e = memsetOn(legacy, devPtr, value, count, &op); e != cudaSuccess) return e;
  if (op && pinnedHost(devPtr)) op->wait();
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (count == 0) return cudaSuccess;
  return memsetOn(s, devPtr, value, count, nullptr);
}

// ---- attributes ---------------------------------------------------------------------------------

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  CD_ENTER();
  if (attributes == nullptr) return fail(cudaErrorInvalidValue);
  *attributes = cudaPointerAttributes{};
  Allocation a;
  if (!lookup(ptr, &a)) {
    // Runtime API (CUDA 11+): memory CUDA does not know is cudaMemoryTypeUnregistered, no error.
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    return cudaSuccess;
  }
  attributes->device = a.device;
  if (a.kind == MemKind::Host) {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(ptr);
    attributes->devicePointer = const_cast<void*>(ptr);
  } else {
    attributes->type = cudaMemoryTypeDevice;
    attributes->devicePointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

// ---- IPC (Runtime API, "Interprocess Communication") --------------------------------------------

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  CD_ENTER();
  if (handle == nullptr) return fail(cudaErrorInvalidValue);
  awaitDriverLock(currentDevice(), "cudaIpcGetMemHandle");
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  auto it = mem.live.find(reinterpret_cast<uintptr_t>(devPtr));
  // "Takes a pointer to the base of an existing device memory allocation"
  // (cudaMalloc, not a stream-ordered pool): anything else is refused.
  // cuMemCreate memory is shared through its own handles (cuMemExportToShareableHandle).
  if (it != mem.live.end() && it->second.kind == MemKind::Mapped) return fail(cudaErrorInvalidValue);
  if (it == mem.live.end() || it->second.kind != MemKind::Device || it->second.streamOrdered) {
    misuse("cudaIpcGetMemHandle(%p): not the base of a live cudaMalloc allocation", devPtr);
    return fail(cudaErrorInvalidValue);
  }
  IpcHandle h{};
  h.magic = kIpcMagic;
  h.pid = getpid();
  h.fd = it->second.fd;
  h.device = it->second.device;
  h.bufferId = it->second.bufferId;
  h.capacity = it->second.capacity;
  h.size = it->second.size;
  std::memcpy(handle, &h, sizeof(h));
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
  CD_ENTER();
  (void)flags;
  IpcHandle h;
  std::memcpy(&h, &handle, sizeof(h));
  if (devPtr == nullptr || h.magic != kIpcMagic) return fail(cudaErrorInvalidValue);
  if (h.pid == getpid()) return fail(cudaErrorInvalidResourceHandle);  // CUDA refuses a process's own handles
  awaitDriverLock(currentDevice(), "cudaIpcOpenMemHandle");
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  auto known = mem.imports.find({h.pid, h.bufferId});
  if (known != mem.imports.end()) {
    ++known->second.refs;
    *devPtr = reinterpret_cast<void*>(known->second.base);
    return cudaSuccess;
  }
  // The exporter's memfd, checked to still be the same allocation (its
  // descriptor number may have been reused after a free: then the handle is
  // stale).
  const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  char target[256] = {};
  ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  const std::string expect = "cuda-double-" + std::to_string(h.bufferId);
  const std::string got = n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
  const size_t at = got.find(expect);
  if (at == std::string::npos || (at + expect.size() < got.size() && got[at + expect.size()] != ' ')) {
    misuse("cudaIpcOpenMemHandle: process %d's allocation #%llu no longer exists (freed)", h.pid,
           static_cast<unsigned long long>(h.bufferId));
    return fail(cudaErrorInvalidResourceHandle);
  }
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(cudaErrorMapBufferObjectFailed);
  size_t got2 = 0;
  uintptr_t a = takeAddress(mem.slices[importSlice()], h.capacity, &got2);
  void* p = a == 0
                ? MAP_FAILED
                : mmap(reinterpret_cast<void*>(a), h.capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return fail(cudaErrorMapBufferObjectFailed);
  }
  Allocation al;
  al.base = a;
  al.size = h.size;
  al.capacity = h.capacity;
  al.device = currentDevice();
  al.fd = fd;
  al.kind = MemKind::Import;
  al.bufferId = mem.nextBufferId++;
  mem.live[a] = al;
  mem.imports[{h.pid, h.bufferId}] = Memory::Import{a, 1};
  *devPtr = p;
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  CD_ENTER();
  // Unmapping the peer's memory is a page-table change: it waits for the
  // device holding the driver's lock.
  PageTableChange change(deviceOfPointer(devPtr, currentDevice()), "cudaIpcCloseMemHandle");
  if (change.result() != cudaSuccess) return change.result();
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.m);
  for (auto it = mem.imports.begin(); it != mem.imports.end(); ++it) {
    if (it->second.base != reinterpret_cast<uintptr_t>(devPtr)) continue;
    if (--it->second.refs > 0) return cudaSuccess;
    mem.imports.erase(it);
    auto al = mem.live.find(reinterpret_cast<uintptr_t>(devPtr));
    if (al != mem.live.end()) release(mem, al);
    return cudaSuccess;
  }
  misuse("cudaIpcCloseMemHandle(%p): not an opened IPC mapping", devPtr);
  return fail(cudaErrorInvalidValue);
}

}  // extern "C"
