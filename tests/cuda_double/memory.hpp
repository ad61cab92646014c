// Device memory of the CUDA double. One reserved address range, the "arena",
// holds every device allocation, host allocation and IPC import, so device
// accesses are checked against the live allocations. Freed memory is
// unmapped: touching it faults with the sticky cudaErrorIllegalAddress
// instead of reading stale data. The next fitting allocation reuses the last
// freed address with a new buffer id and IPC handle. Each allocation is a
// memfd that another process can map. memory.cc documents each call.
#ifndef CUDA_DOUBLE_MEMORY_HPP_
#define CUDA_DOUBLE_MEMORY_HPP_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cudadouble {

// Mapped: physical memory cuMemMap put in a reserved range (vmm.cc);
// Multicast: a multicast object's range, which the double cannot carry.
enum class MemKind { Device, Host, Import, Mapped, Multicast };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;      // as requested
  size_t capacity = 0;  // mapped bytes
  int device = 0;
  int fd = -1;
  uint64_t bufferId = 0;  // unique per allocation in this process (CU_POINTER_ATTRIBUTE_BUFFER_ID)
  MemKind kind = MemKind::Device;
  bool streamOrdered = false;
  bool accessible = true;  // Mapped: once cuMemSetAccess granted it
};

// The live allocation containing p.
bool lookup(const void* p, Allocation* out);
// Whether p is inside the arena (async-signal-safe: the fault handler uses it).
bool inArena(const void* p);
// Whether the device may touch [p, p + n): inside one live allocation, or host
// memory outside the arena (which the double cannot check).
bool deviceAccessible(const void* p, size_t n);

// ---- virtual memory management (vmm.cc) ----
// A range of `bytes` for cuMemAddressReserve, aligned to `alignment` (a
// power of two); 0 when none is left. Freed ranges are reused.
uintptr_t reserveRange(size_t bytes, size_t alignment);
void freeRange(uintptr_t base, size_t bytes);
// Maps [offset, offset + bytes) of the memfd `fd` at addr as a live
// allocation of `kind` on `device`, with no access until allowMapping
// (Multicast: never; fd -1 maps nothing). False when addr is taken.
bool addMapping(uintptr_t addr, size_t bytes, int fd, size_t offset, int device, MemKind kind);
// Unmaps the live mapping at addr (its range stays reserved); false when there is none.
bool removeMapping(uintptr_t addr, size_t bytes);
// Read and write access to the mappings covering [addr, addr + bytes); false when a byte is not mapped.
bool allowMapping(uintptr_t addr, size_t bytes);

struct MemoryStats {
  uint64_t liveAllocations = 0, liveBytes = 0;
};
MemoryStats memoryStats();

// Runs f on this thread with faults on arena addresses caught: a fault makes
// the device's sticky error cudaErrorIllegalAddress (with `what` and the
// address) and guarded returns false.
bool guarded(int device, const char* what, void (*f)(void*), void* arg);
template <class F>
bool guarded(int device, const char* what, F&& f) {
  using Fn = std::remove_reference_t<F>;
  return guarded(
      device, what, [](void* p) { (*static_cast<Fn*>(p))(); }, static_cast<void*>(&f));
}

}  // namespace cudadouble

#endif  // CUDA_DOUBLE_MEMORY_HPP_
