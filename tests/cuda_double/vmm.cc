// The driver's virtual memory management and multicast (NVLS) API in the
// CUDA double, reached through cudaGetDriverEntryPoint: physical
// allocations (cuMemCreate), address ranges, mappings and their access,
// shareable handles (POSIX file descriptors, across processes), and
// multicast objects with their device team and bindings. Each rule and the
// Driver API section it follows are in docs/cuda-double.md; the double
// cannot carry multimem traffic, so a multicast mapping is never accessible.
#include "vmm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core.hpp"
#include "memory.hpp"

namespace cudadouble {
namespace {

// cuMemGetAllocationGranularity and cuMulticastGetGranularity: 2 MiB (H100), minimum and recommended.
constexpr size_t kVmmGranularity = size_t{2} << 20;
constexpr uint32_t kTeamMagic = 0x4d435445;  // "MCTE"

// A multicast object's team, in shared memory: every process holding the object sees it.
struct Team {
  uint32_t magic;
  uint32_t numDevices;
  uint64_t size;
  uint64_t handleTypes;
  uint64_t addedMask;  // devices added (cuMulticastAddDevice)
  uint32_t added;
  uint32_t reserved;
  uint64_t boundMask;  // devices with memory bound
};

struct Handle {
  bool multicast = false;
  int fd = -1;
  size_t size = 0;
  int device = 0;            // physical memory's device
  uint64_t handleTypes = 0;  // requested (or, imported, the one it came through)
  bool imported = false;
  Team* team = nullptr;  // multicast: the shared team
  int refs = 1;          // cuMemCreate / import / retain, less cuMemRelease
  int mappings = 0;
};

struct Mapping {
  CUmemGenericAllocationHandle handle;
  size_t bytes;
};

struct Vmm {
  std::mutex m;
  std::map<CUmemGenericAllocationHandle, std::unique_ptr<Handle>> handles;
  CUmemGenericAllocationHandle next = 1;
  std::map<uintptr_t, size_t> reserved;  // cuMemAddressReserve ranges
  std::map<uintptr_t, Mapping> mapped;   // by address
  int liveTeams = 0;
  uint64_t binds = 0;
};

Vmm& vmm() {
  static Vmm* v = new Vmm();
  return *v;
}

// Drops a handle once it is released and unmapped (vmm mutex held).
void collect(Vmm& v, CUmemGenericAllocationHandle id) {
  auto it = v.handles.find(id);
  if (it == v.handles.end() || it->second->refs > 0 || it->second->mappings > 0) return;
  Handle& h = *it->second;
  if (h.team != nullptr) munmap(h.team, sizeof(Team));
  if (h.fd >= 0) close(h.fd);
  if (h.multicast && !h.imported) --v.liveTeams;
  v.handles.erase(it);
}

Handle* handleOf(Vmm& v, CUmemGenericAllocationHandle id) {
  auto it = v.handles.find(id);
  return it == v.handles.end() ? nullptr : it->second.get();
}

bool aligned(size_t n) { return n % kVmmGranularity == 0; }

// Inside one reserved range (vmm mutex held).
bool inReservation(Vmm& v, uintptr_t p, size_t bytes) {
  auto it = v.reserved.upper_bound(p);
  if (it == v.reserved.begin()) return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

// cuMulticastBindMem and cuMemMap of a multicast object "block until all
// devices have been added" (Driver API, cuMulticastAddDevice). A wait of
// more than a second says so on stderr, every second.
void awaitTeam(const Team* team, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  auto nextNote = start + std::chrono::seconds(1);
  while (__atomic_load_n(&team->added, __ATOMIC_ACQUIRE) < team->numDevices) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (std::chrono::steady_clock::now() >= nextNote) {
      std::fprintf(stderr, "cuda-double: %s waits for %u of %u devices to join the multicast team\n", what,
                   team->numDevices - __atomic_load_n(&team->added, __ATOMIC_ACQUIRE), team->numDevices);
      nextNote += std::chrono::seconds(1);
    }
  }
}

CUresult enter() { return stickyOf(currentDevice()) != cudaSuccess ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS; }

// ---- physical memory ------------------------------------------------------------------------------

CUresult memGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                     CUmemAllocationGranularity_flags /*option*/) {
  CD_TALLY_AS("cuMemGetAllocationGranularity");
  if (granularity == nullptr || prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !validDevice(prop->location.id))
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

// Driver API cuMemCreate: pinned device memory, its size a multiple of the
// allocation granularity; shareable only through the handle types requested.
CUresult memCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                   unsigned long long flags) {
  CD_TALLY_AS("cuMemCreate");
  if (CUresult r = enter(); r != CUDA_SUCCESS) return r;
  if (handle == nullptr || prop == nullptr || flags != 0 || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || size == 0 || !aligned(size))
    return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  const uint64_t types = static_cast<uint64_t>(prop->requestedHandleTypes);
  if ((types & ~uint64_t{CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}) != 0) return CUDA_ERROR_NOT_SUPPORTED;
  const std::string name = "cuda-double-vmm-" + std::to_string(prop->location.id) + "-" + std::to_string(types);
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto h = std::make_unique<Handle>();
  h->fd = fd;
  h->size = size;
  h->device = prop->location.id;
  h->handleTypes = types;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  *handle = v.next++;
  v.handles[*handle] = std::move(h);
  return CUDA_SUCCESS;
}

CUresult memRelease(CUmemGenericAllocationHandle handle) {
  CD_TALLY_AS("cuMemRelease");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* h = handleOf(v, handle);
  if (h == nullptr || h->refs == 0) return CUDA_ERROR_INVALID_VALUE;
  --h->refs;
  collect(v, handle);
  return CUDA_SUCCESS;
}

CUresult memGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  CD_TALLY_AS("cuMemGetAllocationPropertiesFromHandle");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* h = handleOf(v, handle);
  if (prop == nullptr || h == nullptr || h->multicast) return CUDA_ERROR_INVALID_VALUE;
  *prop = CUmemAllocationProp{};
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = h->device;
  prop->requestedHandleTypes = static_cast<CUmemAllocationHandleType>(h->handleTypes);
  return CUDA_SUCCESS;
}

// Driver API cuMemRetainAllocationHandle: only addresses cuMemMap mapped
// have one; cudaMalloc memory has none (so NVLS cannot bind it).
CUresult memRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  CD_TALLY_AS("cuMemRetainAllocationHandle");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  auto it = v.mapped.upper_bound(p);
  if (handle == nullptr || it == v.mapped.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  Handle* h = handleOf(v, it->second.handle);
  if (p >= it->first + it->second.bytes || h == nullptr || h->multicast) return CUDA_ERROR_INVALID_VALUE;
  ++h->refs;
  *handle = it->second.handle;
  return CUDA_SUCCESS;
}

// ---- address ranges and mappings --------------------------------------------------------------------

CUresult memAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr /*addr*/,
                           unsigned long long flags) {
  CD_TALLY_AS("cuMemAddressReserve");
  if (ptr == nullptr || flags != 0 || size == 0 || !aligned(size) || (alignment & (alignment - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t base = reserveRange(size, alignment > kVmmGranularity ? alignment : kVmmGranularity);
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  v.reserved[base] = size;
  *ptr = static_cast<CUdeviceptr>(base);
  return CUDA_SUCCESS;
}

CUresult memAddressFree(CUdeviceptr ptr, size_t size) {
  CD_TALLY_AS("cuMemAddressFree");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  auto it = v.reserved.find(static_cast<uintptr_t>(ptr));
  if (it == v.reserved.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = v.mapped.lower_bound(it->first);
  if (m != v.mapped.end() && m->first < it->first + size) return CUDA_ERROR_INVALID_VALUE;  // still mapped
  v.reserved.erase(it);
  freeRange(static_cast<uintptr_t>(ptr), size);
  return CUDA_SUCCESS;
}

// Driver API cuMemMap: a granularity-aligned part of a handle into a reserved
// range, with no access until cuMemSetAccess. A multicast object maps only
// once its whole team joined.
CUresult memMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                unsigned long long flags) {
  CD_TALLY_AS("cuMemMap");
  if (CUresult r = enter(); r != CUDA_SUCCESS) return r;
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  Team* team = nullptr;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lock(v.m);
    Handle* h = handleOf(v, handle);
    if (h == nullptr || flags != 0 || size == 0 || !aligned(size) || !aligned(offset) || !aligned(p) ||
        offset + size > h->size || !inReservation(v, p, size))
      return CUDA_ERROR_INVALID_VALUE;
    team = h->team;
  }
  if (team != nullptr) awaitTeam(team, "cuMemMap of a multicast object");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* h = handleOf(v, handle);
  if (h == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!addMapping(p, size, h->multicast ? -1 : h->fd, offset, h->device,
                  h->multicast ? MemKind::Multicast : MemKind::Mapped))
    return CUDA_ERROR_INVALID_VALUE;  // overlaps a mapping
  ++h->mappings;
  v.mapped[p] = Mapping{handle, size};
  return CUDA_SUCCESS;
}

CUresult memUnmap(CUdeviceptr ptr, size_t size) {
  CD_TALLY_AS("cuMemUnmap");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  auto it = v.mapped.find(static_cast<uintptr_t>(ptr));
  if (it == v.mapped.end() || it->second.bytes != size || !removeMapping(it->first, size))
    return CUDA_ERROR_INVALID_VALUE;
  const CUmemGenericAllocationHandle id = it->second.handle;
  v.mapped.erase(it);
  if (Handle* h = handleOf(v, id)) --h->mappings;
  collect(v, id);
  return CUDA_SUCCESS;
}

// Driver API cuMemSetAccess: read-write for the listed devices. The double
// has one protection for all devices: any read-write grant opens the range.
CUresult memSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  CD_TALLY_AS("cuMemSetAccess");
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  bool readWrite = false;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !validDevice(desc[i].location.id))
      return CUDA_ERROR_INVALID_DEVICE;
    readWrite |= desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  const uintptr_t p = static_cast<uintptr_t>(ptr);
  auto it = v.mapped.find(p);
  if (it == v.mapped.end()) return CUDA_ERROR_INVALID_VALUE;
  Handle* h = handleOf(v, it->second.handle);
  if (h != nullptr && h->multicast) return CUDA_SUCCESS;  // multimem traffic: not carried here
  if (readWrite && !allowMapping(p, size)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// ---- shareable handles --------------------------------------------------------------------------

// Driver API cuMemExportToShareableHandle: only a type requested at
// creation; the caller owns the descriptor.
CUresult memExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                    CUmemAllocationHandleType handleType, unsigned long long flags) {
  CD_TALLY_AS("cuMemExportToShareableHandle");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* h = handleOf(v, handle);
  if (shareableHandle == nullptr || h == nullptr || flags != 0 ||
      handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  if ((h->handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) return CUDA_ERROR_NOT_PERMITTED;
  const int fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int*>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

CUresult memImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                      CUmemAllocationHandleType handleType) {
  CD_TALLY_AS("cuMemImportFromShareableHandle");
  if (handle == nullptr || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  const int given = static_cast<int>(reinterpret_cast<uintptr_t>(osHandle));
  char target[256] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(given);
  const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  const std::string what = n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
  struct stat st {};
  if (fstat(given, &st) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto h = std::make_unique<Handle>();
  h->imported = true;
  h->handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  h->size = static_cast<size_t>(st.st_size);
  int device = 0;
  unsigned long long types = 0;
  if (std::sscanf(what.c_str(), "/memfd:cuda-double-vmm-%d-%llu", &device, &types) == 2) {
    h->device = device;
  } else if (what.find("/memfd:cuda-double-mc") == 0) {
    h->multicast = true;
    void* t = mmap(nullptr, sizeof(Team), PROT_READ | PROT_WRITE, MAP_SHARED, given, 0);
    if (t == MAP_FAILED) return CUDA_ERROR_INVALID_VALUE;
    h->team = static_cast<Team*>(t);
    if (h->team->magic != kTeamMagic) {
      munmap(t, sizeof(Team));
      return CUDA_ERROR_INVALID_VALUE;
    }
    h->size = h->team->size;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  h->fd = fcntl(given, F_DUPFD_CLOEXEC, 0);
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  *handle = v.next++;
  v.handles[*handle] = std::move(h);
  return CUDA_SUCCESS;
}

// ---- multicast ------------------------------------------------------------------------------------

CUresult multicastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                 CUmulticastGranularity_flags /*option*/) {
  CD_TALLY_AS("cuMulticastGetGranularity");
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!config().multicast) return CUDA_ERROR_NOT_SUPPORTED;
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

// Driver API cuMulticastCreate: a team of numDevices devices, its size a
// multiple of the minimum granularity. Multicast resources are finite:
// CUDA_DOUBLE_MULTICAST_OBJECTS live objects per process, then
// CUDA_ERROR_OUT_OF_MEMORY.
CUresult multicastCreate(CUmemGenericAllocationHandle* mcHandle, const CUmulticastObjectProp* prop) {
  CD_TALLY_AS("cuMulticastCreate");
  if (CUresult r = enter(); r != CUDA_SUCCESS) return r;
  if (!config().multicast) return CUDA_ERROR_NOT_SUPPORTED;
  if (mcHandle == nullptr || prop == nullptr || prop->numDevices == 0 ||
      prop->numDevices > static_cast<unsigned>(config().devices) || prop->size == 0 || !aligned(prop->size) ||
      prop->flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if ((prop->handleTypes & ~static_cast<unsigned long long>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != 0)
    return CUDA_ERROR_NOT_SUPPORTED;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  if (v.liveTeams >= config().multicastObjects) return CUDA_ERROR_OUT_OF_MEMORY;
  const int fd = memfd_create("cuda-double-mc", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, sizeof(Team)) != 0) {
    if (fd >= 0) close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* t = mmap(nullptr, sizeof(Team), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (t == MAP_FAILED) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto h = std::make_unique<Handle>();
  h->multicast = true;
  h->fd = fd;
  h->size = prop->size;
  h->handleTypes = prop->handleTypes;
  h->team = static_cast<Team*>(t);
  *h->team = Team{kTeamMagic, prop->numDevices, prop->size, prop->handleTypes, 0, 0, 0, 0};
  ++v.liveTeams;
  *mcHandle = v.next++;
  v.handles[*mcHandle] = std::move(h);
  return CUDA_SUCCESS;
}

// Driver API cuMulticastAddDevice: a device joins a team once, and a team has
// numDevices members.
CUresult multicastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  CD_TALLY_AS("cuMulticastAddDevice");
  if (CUresult r = enter(); r != CUDA_SUCCESS) return r;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* h = handleOf(v, mcHandle);
  if (h == nullptr || !h->multicast) return CUDA_ERROR_INVALID_VALUE;
  Team* team = h->team;
  const uint64_t bit = uint64_t{1} << dev;
  uint64_t mask = __atomic_load_n(&team->addedMask, __ATOMIC_ACQUIRE);
  for (;;) {
    if ((mask & bit) != 0 || __builtin_popcountll(mask) >= static_cast<int>(team->numDevices))
      return CUDA_ERROR_INVALID_VALUE;
    if (__atomic_compare_exchange_n(&team->addedMask, &mask, mask | bit, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      break;
  }
  __atomic_fetch_add(&team->added, 1u, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

// Driver API cuMulticastBindMem: blocks until the whole team joined; offsets
// and size multiples of the granularity; memory of a member device; a
// shareable or imported object binds only shareable memory. The double
// allows one bound range per device.
CUresult multicastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                          CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                          unsigned long long flags) {
  CD_TALLY_AS("cuMulticastBindMem");
  if (CUresult r = enter(); r != CUDA_SUCCESS) return r;
  Team* team = nullptr;
  {
    Vmm& v = vmm();
    std::lock_guard<std::mutex> lock(v.m);
    Handle* mc = handleOf(v, mcHandle);
    if (mc == nullptr || !mc->multicast || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    team = mc->team;
  }
  awaitTeam(team, "cuMulticastBindMem");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* mc = handleOf(v, mcHandle);
  Handle* mem = handleOf(v, memHandle);
  if (mc == nullptr || mem == nullptr || mem->multicast || size == 0 || !aligned(size) || !aligned(mcOffset) ||
      !aligned(memOffset) || memOffset + size > mem->size || mcOffset + size > mc->size)
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t bit = uint64_t{1} << mem->device;
  if ((__atomic_load_n(&team->addedMask, __ATOMIC_ACQUIRE) & bit) == 0) return CUDA_ERROR_INVALID_DEVICE;
  if ((mc->handleTypes != 0 || mc->imported) && (mem->handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if ((__atomic_fetch_or(&team->boundMask, bit, __ATOMIC_ACQ_REL) & bit) != 0) return CUDA_ERROR_INVALID_VALUE;
  ++v.binds;
  return CUDA_SUCCESS;
}

CUresult multicastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t /*mcOffset*/, size_t /*size*/) {
  CD_TALLY_AS("cuMulticastUnbind");
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  Handle* mc = handleOf(v, mcHandle);
  if (mc == nullptr || !mc->multicast || !validDevice(dev)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t bit = uint64_t{1} << dev;
  if ((__atomic_fetch_and(&mc->team->boundMask, ~bit, __ATOMIC_ACQ_REL) & bit) == 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // namespace

const std::map<std::string, void*>& vmmEntryPoints() {
  static const std::map<std::string, void*> table = {
      {"cuMemCreate", reinterpret_cast<void*>(&memCreate)},
      {"cuMemRelease", reinterpret_cast<void*>(&memRelease)},
      {"cuMemGetAllocationGranularity", reinterpret_cast<void*>(&memGetAllocationGranularity)},
      {"cuMemGetAllocationPropertiesFromHandle", reinterpret_cast<void*>(&memGetAllocationPropertiesFromHandle)},
      {"cuMemRetainAllocationHandle", reinterpret_cast<void*>(&memRetainAllocationHandle)},
      {"cuMemAddressReserve", reinterpret_cast<void*>(&memAddressReserve)},
      {"cuMemAddressFree", reinterpret_cast<void*>(&memAddressFree)},
      {"cuMemMap", reinterpret_cast<void*>(&memMap)},
      {"cuMemUnmap", reinterpret_cast<void*>(&memUnmap)},
      {"cuMemSetAccess", reinterpret_cast<void*>(&memSetAccess)},
      {"cuMemExportToShareableHandle", reinterpret_cast<void*>(&memExportToShareableHandle)},
      {"cuMemImportFromShareableHandle", reinterpret_cast<void*>(&memImportFromShareableHandle)},
      {"cuMulticastGetGranularity", reinterpret_cast<void*>(&multicastGetGranularity)},
      {"cuMulticastCreate", reinterpret_cast<void*>(&multicastCreate)},
      {"cuMulticastAddDevice", reinterpret_cast<void*>(&multicastAddDevice)},
      {"cuMulticastBindMem", reinterpret_cast<void*>(&multicastBindMem)},
      {"cuMulticastUnbind", reinterpret_cast<void*>(&multicastUnbind)},
  };
  return table;
}

uint64_t vmmLiveHandles() {
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  return v.handles.size();
}

uint64_t multicastBinds() {
  Vmm& v = vmm();
  std::lock_guard<std::mutex> lock(v.m);
  return v.binds;
}

}  // namespace cudadouble
