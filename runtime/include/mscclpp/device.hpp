// The building blocks of every device header: function qualifiers, atomics with explicit memory
// order and scope, a nanosecond clock and a bounded spin. Each *_device.hpp header is written
// once as __host__ __device__ code: nvcc compiles it into kernels, and the host compiler compiles
// the same text for the CPU backend, where host threads stand in for thread blocks. The atomics
// wrap libcu++'s cuda::atomic_ref, which both compilers build; on the host they become __atomic
// builtins, so ThreadSanitizer checks the ordering the GPU code asks for. Stateless.
#ifndef MSCCLPP_DEVICE_HPP_
#define MSCCLPP_DEVICE_HPP_

#include <cstdint>
#include <cuda/atomic>

#include "mscclpp/export.h"

#if !defined(__CUDA_ARCH__)
#include <sched.h>

#include <chrono>
#include <thread>
#endif

#if defined(__CUDACC__)
#define MSCCLPP_HOST_DEVICE_INLINE __forceinline__ __host__ __device__
#define MSCCLPP_DEVICE_INLINE __forceinline__ __device__
#define MSCCLPP_HOST_DEVICE __host__ __device__
// A function the GPU compiler must keep out of line: a large body called from several places.
#define MSCCLPP_HOST_DEVICE_NOINLINE __noinline__ __host__ __device__
#else
#define MSCCLPP_HOST_DEVICE_INLINE inline
#define MSCCLPP_DEVICE_INLINE inline
#define MSCCLPP_HOST_DEVICE
#define MSCCLPP_HOST_DEVICE_NOINLINE inline
#endif

// Defined while nvcc compiles device code; absent for g++ and for nvcc's host pass.
#if defined(__CUDA_ARCH__)
#define MSCCLPP_DEVICE_COMPILE 1
#endif

// Before a loop whose body waits: unrolling a spin only multiplies the live registers of a
// kernel that has 64 per thread at 1024 threads, and makes it spill.
#if defined(MSCCLPP_DEVICE_COMPILE)
#define MSCCLPP_NO_UNROLL _Pragma("unroll 1")
#else
#define MSCCLPP_NO_UNROLL
#endif

namespace mscclpp {

// ---- Memory order and scope ------------------------------------------------------------------
// Orders are cuda::memory_order values; a scope says which agents must observe an access. On the
// CPU backend a block is one host thread, the device is the process, and the system includes
// other processes through shared memory:
//   scopeBlock  - threads of one block,
//   scopeDevice - all blocks of one GPU,
//   scopeSystem - other GPUs and the host. Counters a peer or the proxy touches use it.
constexpr cuda::memory_order memoryOrderRelaxed = cuda::memory_order_relaxed;
constexpr cuda::memory_order memoryOrderAcquire = cuda::memory_order_acquire;
constexpr cuda::memory_order memoryOrderRelease = cuda::memory_order_release;
constexpr cuda::memory_order memoryOrderAcqRel = cuda::memory_order_acq_rel;
constexpr cuda::memory_order memoryOrderSeqCst = cuda::memory_order_seq_cst;
constexpr cuda::thread_scope scopeBlock = cuda::thread_scope_block;
constexpr cuda::thread_scope scopeDevice = cuda::thread_scope_device;
constexpr cuda::thread_scope scopeSystem = cuda::thread_scope_system;

// T: a trivially copyable type of 1, 2, 4 or 8 bytes; ptr naturally aligned.
template <class T, cuda::thread_scope Scope = scopeSystem>
MSCCLPP_HOST_DEVICE_INLINE T atomicLoad(const T* ptr, cuda::memory_order order) {
  return cuda::atomic_ref<T, Scope>(*const_cast<T*>(ptr)).load(order);
}

template <class T, cuda::thread_scope Scope = scopeSystem>
MSCCLPP_HOST_DEVICE_INLINE void atomicStore(T* ptr, T value, cuda::memory_order order) {
  cuda::atomic_ref<T, Scope>(*ptr).store(value, order);
}

template <class T, cuda::thread_scope Scope = scopeSystem>
MSCCLPP_HOST_DEVICE_INLINE T atomicFetchAdd(T* ptr, T value, cuda::memory_order order) {
  return cuda::atomic_ref<T, Scope>(*ptr).fetch_add(value, order);
}

template <class T, cuda::thread_scope Scope = scopeSystem>
MSCCLPP_HOST_DEVICE_INLINE T atomicFetchMax(T* ptr, T value, cuda::memory_order order) {
  return cuda::atomic_ref<T, Scope>(*ptr).fetch_max(value, order);
}

template <class T, cuda::thread_scope Scope = scopeSystem>
MSCCLPP_HOST_DEVICE_INLINE T atomicExchange(T* ptr, T value, cuda::memory_order order) {
  return cuda::atomic_ref<T, Scope>(*ptr).exchange(value, order);
}

// Returns true and stores desired when *ptr == *expected; otherwise loads *ptr into *expected.
template <class T, cuda::thread_scope Scope = scopeSystem>
MSCCLPP_HOST_DEVICE_INLINE bool atomicCompareExchange(T* ptr, T* expected, T desired, cuda::memory_order order) {
  return cuda::atomic_ref<T, Scope>(*ptr).compare_exchange_strong(*expected, desired, order, memoryOrderRelaxed);
}

// ---- Clock and deadlines -----------------------------------------------------------------------
// Nanoseconds of a monotonic clock: %globaltimer on the GPU, steady_clock on the host. Their
// epochs differ, so host and device pass durations, and the side that waits turns one into a
// deadline with deadlineAfter.
MSCCLPP_HOST_DEVICE_INLINE uint64_t clockNs() {
#if defined(MSCCLPP_DEVICE_COMPILE)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

// A deadline that never passes: waits on live peers when MSCCLPP_TIMEOUT_S is 0, the default.
constexpr uint64_t kNoDeadline = UINT64_MAX;

// The timeout of the convenience wait() and sync() when a handle carries 0. Host code that
// fills a handle sets its timeout from MSCCLPP_TIMEOUT_S.
#ifndef MSCCLPP_DEFAULT_TIMEOUT_NS
#define MSCCLPP_DEFAULT_TIMEOUT_NS 120000000000ull
#endif

// What set a handle's timeoutNs, named when its convenience methods time out.
constexpr uint32_t kTimeoutFromEnvironment = 0;   // MSCCLPP_TIMEOUT_S or the built-in default
constexpr uint32_t kTimeoutFromCommunicator = 1;  // Communicator::timeoutSeconds()

MSCCLPP_HOST_DEVICE_INLINE const char* timeoutSourceName(uint32_t source) {
  return source == kTimeoutFromCommunicator ? "the communicator's timeout" : "MSCCLPP_TIMEOUT_S";
}

// now + timeoutNs, saturating; timeoutNs == 0 picks MSCCLPP_DEFAULT_TIMEOUT_NS.
MSCCLPP_HOST_DEVICE_INLINE uint64_t deadlineAfter(uint64_t timeoutNs) {
  if (timeoutNs == 0) timeoutNs = MSCCLPP_DEFAULT_TIMEOUT_NS;
  if (timeoutNs == kNoDeadline) return kNoDeadline;
  uint64_t now = clockNs();
  return now > kNoDeadline - timeoutNs ? kNoDeadline : now + timeoutNs;
}

// ---- Bounded spin --------------------------------------------------------------------------------
enum class SpinStatus : uint32_t {
  Ok = 0,       // the condition became true
  Timeout = 1,  // the deadline passed first
  Aborted = 2,  // *abortFlag became nonzero first: another block or rank failed
  Invalid = 3,  // the request could not be made at all, such as a trigger that does not encode
};

MSCCLPP_HOST_DEVICE_INLINE const char* spinStatusName(SpinStatus s) {
  switch (s) {
    case SpinStatus::Ok:
      return "ok";
    case SpinStatus::Timeout:
      return "timeout";
    case SpinStatus::Aborted:
      return "aborted";
    default:
      return "invalid request";
  }
}

#if !defined(MSCCLPP_DEVICE_COMPILE)
// The host's pause after `iteration` failed polls. Spin 16 polls for latency; yield up to the
// 1024th, because the thread waited for may need this core and the CPU backend runs more threads
// than there are cores; then sleep, 5 us at first and twice as long every 128 sleeps, up to 1 ms.
// A wait of seconds wakes about a thousand times a second and burns no core; the cap comes about
// 0.2 s into a wait, so short waits keep their latency.
inline void hostBackoffPause(uint32_t iteration) {
  if (iteration < 16) return;
  if (iteration < 1024) {
    sched_yield();
    return;
  }
  const uint32_t doublings = (iteration - 1024) / 128;
  const uint32_t micros = doublings >= 8 ? 1000u : (5u << doublings);
  std::this_thread::sleep_for(std::chrono::microseconds(micros < 1000u ? micros : 1000u));
}
#endif

// Pause between polls: a short __nanosleep after many polls on the GPU, hostBackoffPause on
// the host.
struct SpinBackoff {
  uint32_t iteration = 0;

  MSCCLPP_HOST_DEVICE_INLINE void pause() {
    ++iteration;
#if defined(MSCCLPP_DEVICE_COMPILE)
#if __CUDA_ARCH__ >= 700
    if (iteration > 1024) __nanosleep(64);
#endif
#else
    hostBackoffPause(iteration);
#endif
  }
};

// How often a spin reads its abort flag: every 1024 polls on the GPU, where thousands of waiting
// warps would otherwise load it every few polls (about a millisecond of polling); every 32 on the
// host, whose polls back off to sleeps of up to 1 ms.
#if defined(MSCCLPP_DEVICE_COMPILE)
constexpr uint32_t kAbortPollMask = 1023;
#else
constexpr uint32_t kAbortPollMask = 31;
#endif

// Polls ready() until it returns true, deadlineNs on clockNs() passes, or the optional
// *abortFlag becomes nonzero. The flag is read relaxed: it stops the spin, it publishes no data.
template <class Ready>
MSCCLPP_HOST_DEVICE_INLINE SpinStatus spinUntil(Ready&& ready, uint64_t deadlineNs, const uint32_t* abortFlag) {
  SpinBackoff backoff;
  MSCCLPP_NO_UNROLL
  for (uint32_t i = 0;; ++i) {
    if (ready()) return SpinStatus::Ok;
    // Checking the clock every few polls and the flag every kAbortPollMask + 1 keeps the fast path to one load.
    if ((i & 31) == 31) {
      if (abortFlag != nullptr && (i & kAbortPollMask) == kAbortPollMask &&
          atomicLoad<uint32_t>(abortFlag, memoryOrderRelaxed) != 0)
        return SpinStatus::Aborted;
      if (deadlineNs != kNoDeadline && clockNs() >= deadlineNs) {
        // One last look: the scheduler may have delayed us past the deadline just after the
        // condition became true.
        return ready() ? SpinStatus::Ok : SpinStatus::Timeout;
      }
    }
    backoff.pause();
  }
}

// The failure path of the convenience methods that return no status: on the GPU it prints what
// was stuck and traps, which fails the launch; on the host it throws mscclpp::Error, Timeout or
// Aborted. timeoutSource, a kTimeoutFrom* value, is the setting a timeout names.
[[noreturn]] MSCCLPP_API void throwSpinFailure(SpinStatus status, const char* what);  // defined in libmscclpp
[[noreturn]] MSCCLPP_API void throwSpinFailure(SpinStatus status, const char* what, uint32_t timeoutSource);

MSCCLPP_HOST_DEVICE_INLINE void failSpin(SpinStatus status, const char* what,
                                         uint32_t timeoutSource = kTimeoutFromEnvironment) {
#if defined(MSCCLPP_DEVICE_COMPILE)
  printf("mscclpp: %s: %s (block %d thread %d)\n", what, spinStatusName(status), (int)blockIdx.x, (int)threadIdx.x);
  (void)timeoutSource;  // a trap carries no text: the host names the launch's timeout
  __trap();
#else
  throwSpinFailure(status, what, timeoutSource);
#endif
}

// ---- Block-level helpers ---------------------------------------------------------------------
// A barrier among the threads of one block; a no-op on the host, where a block is one thread.
MSCCLPP_HOST_DEVICE_INLINE void syncBlockThreads() {
#if defined(MSCCLPP_DEVICE_COMPILE)
  __syncthreads();
#endif
}

}  // namespace mscclpp

#endif  // MSCCLPP_DEVICE_HPP_
