// Device memory of the CUDA double: one reserved address range (the "arena") holds every device
// allocation, host allocation (cudaHostAlloc) and IPC import, so a device access can be checked
// against the live allocations, and an access to freed memory faults.
//
// Semantics (each documented where it is implemented, memory.cc):
//  * cudaMalloc/cudaFree/cudaHostAlloc/cudaFreeHost/cudaMemset/cudaMemcpy synchronise the device;
//    cudaMallocAsync/cudaFreeAsync/cudaMemcpyAsync/cudaMemcpy2DAsync (device to device)/cudaMemsetAsync are
//    stream-ordered.
//  * Freed memory is unmapped (PROT_NONE): a kernel or copy touching it faults with the sticky
//    cudaErrorIllegalAddress, loudly, instead of reading stale data.
//  * The next allocation of a fitting size reuses the most recently freed address (as caching
//    allocators do), but it is a new allocation: a new buffer id, a new IPC handle.
//  * Each device allocation is a memfd, so another process can map it from an IPC handle.
#ifndef CUDA_DOUBLE_MEMORY_HPP_
#define CUDA_DOUBLE_MEMORY_HPP_

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cudadouble {

enum class MemKind { Device, Host, Import };

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;      // as requested
  size_t capacity = 0;  // mapped bytes
  int device = 0;
  int fd = -1;
  uint64_t bufferId = 0;  // unique per allocation in this process (CU_POINTER_ATTRIBUTE_BUFFER_ID)
  MemKind kind = MemKind::Device;
  bool streamOrdered = false;
};

// The live allocation containing p.
bool lookup(const void* p, Allocation* out);
// Whether p is inside the arena (async-signal-safe: the fault handler uses it).
bool inArena(const void* p);
// Whether the device may touch [p, p + n): inside one live allocation, or host
// memory outside the arena (which the double cannot check).
bool deviceAccessible(const void* p, size_t n);

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
