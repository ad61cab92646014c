// Device-side semaphore handles: a 64-bit counter incremented by the signaling side and a local
// "expected" counter that the waiting side advances by one per wait. Counters only grow, so a
// wait is "inbound >= expected": several signals may arrive before the matching waits.
//
// Both handles are filled by host code (the channel layer, or the executor's context builder),
// copied to where the kernel (or the CPU backend's block thread) reads them, and never change
// afterwards. They are trivially copyable; copies share the counters they point to.
//
// After a wait returned Timeout or Aborted the counters no longer match; the owner of the
// semaphore (communicator or execution context) must be torn down, not reused.
#ifndef MSCCLPP_SEMAPHORE_DEVICE_HPP_
#define MSCCLPP_SEMAPHORE_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "device.hpp"

namespace mscclpp {

// A memory-channel semaphore: both sides map each other's memory, a signal is a remote atomic.
struct MemoryDevice2DeviceSemaphoreDeviceHandle {
  // Ours: the peer's signal increments it (remote write). Allocated and zeroed by our side, in
  // memory the peer can map (GPU memory exported through IPC; shared memory on the CPU backend).
  uint64_t* inboundCounter;
  // The peer's inboundCounter, mapped into our address space: our signal increments it.
  uint64_t* outboundCounter;
  // Ours, private: how many signals our waits have consumed. Lives in context/communicator memory
  // so it persists across kernel launches (a plan's waits continue where the last launch ended).
  uint64_t* expectedInboundCounter;
  // Timeout of the convenience wait() in ns; 0 picks MSCCLPP_DEFAULT_TIMEOUT_NS. Set by the host
  // from MSCCLPP_TIMEOUT_S.
  uint64_t timeoutNs;

  // Release: every write this thread made (and, after a block barrier, the block's writes) is
  // visible to the peer before it can observe the increment. fetch_add, not store, so several
  // threads or blocks may signal the same semaphore.
  MSCCLPP_HOST_DEVICE_INLINE void signal() { atomicFetchAdd<uint64_t>(outboundCounter, 1, memoryOrderRelease); }

  // Relaxed: execution ordering only (the peer learns we reached this point, not that our data
  // is visible). For plans that synchronise data some other way (packets, a later signal).
  MSCCLPP_HOST_DEVICE_INLINE void relaxedSignal() { atomicFetchAdd<uint64_t>(outboundCounter, 1, memoryOrderRelaxed); }

  // Claims the next expected value. Atomic so that waits on one semaphore from several threads
  // (or blocks) each claim a distinct signal.
  MSCCLPP_HOST_DEVICE_INLINE uint64_t claimNextExpected() {
    return atomicFetchAdd<uint64_t, scopeDevice>(expectedInboundCounter, 1, memoryOrderRelaxed) + 1;
  }

  // Acquire: pairs with the peer's release signal, so its writes before the signal are visible
  // to us after the wait. *observed (optional) receives the last inbound value read.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* expectedOut = nullptr, uint64_t* observed = nullptr) {
    uint64_t expected = claimNextExpected();
    if (expectedOut != nullptr) *expectedOut = expected;
    return waitClaimed(expected, deadlineNs, abortFlag, observed);
  }
  // The spin of wait() for a value already claimed: a waiter that stops at an early deadline (to
  // report a long wait) goes on waiting for the same signal.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus waitClaimed(uint64_t expected, uint64_t deadlineNs, const uint32_t* abortFlag,
                                                    uint64_t* observed = nullptr) {
    uint64_t seen = 0;
    SpinStatus st =
        spinUntil([&] { return (seen = atomicLoad<uint64_t>(inboundCounter, memoryOrderAcquire)) >= expected; },
                  deadlineNs, abortFlag);
    if (observed != nullptr) *observed = seen;
    return st;
  }

  // Relaxed: like wait() but without acquire (pairs with relaxedSignal).
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus relaxedWait(uint64_t deadlineNs, const uint32_t* abortFlag,
                                                    uint64_t* expectedOut = nullptr, uint64_t* observed = nullptr) {
    uint64_t expected = claimNextExpected();
    if (expectedOut != nullptr) *expectedOut = expected;
    return relaxedWaitClaimed(expected, deadlineNs, abortFlag, observed);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus relaxedWaitClaimed(uint64_t expected, uint64_t deadlineNs,
                                                           const uint32_t* abortFlag, uint64_t* observed = nullptr) {
    uint64_t seen = 0;
    SpinStatus st =
        spinUntil([&] { return (seen = atomicLoad<uint64_t>(inboundCounter, memoryOrderRelaxed)) >= expected; },
                  deadlineNs, abortFlag);
    if (observed != nullptr) *observed = seen;
    return st;
  }

  // Convenience forms (seed 003: `channel.wait()`): wait up to timeoutNs, trap/throw on failure.
  MSCCLPP_HOST_DEVICE_INLINE void wait() {
    SpinStatus st = wait(deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "semaphore wait");
  }
  MSCCLPP_HOST_DEVICE_INLINE void relaxedWait() {
    SpinStatus st = relaxedWait(deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "semaphore relaxedWait");
  }

  // Non-blocking: consumes one signal and returns true if one is pending (acquire on success).
  MSCCLPP_HOST_DEVICE_INLINE bool poll() {
    uint64_t next = atomicLoad<uint64_t, scopeDevice>(expectedInboundCounter, memoryOrderRelaxed) + 1;
    if (atomicLoad<uint64_t>(inboundCounter, memoryOrderAcquire) < next) return false;
    // Only one poller may consume it: advance expected with a CAS from the value we checked.
    uint64_t cur = next - 1;
    return atomicCompareExchange<uint64_t, scopeDevice>(expectedInboundCounter, &cur, next, memoryOrderRelaxed);
  }
};
static_assert(std::is_trivially_copyable<MemoryDevice2DeviceSemaphoreDeviceHandle>::value,
              "device handles are copied to device memory as bytes");
using SmDevice2DeviceSemaphoreDeviceHandle = MemoryDevice2DeviceSemaphoreDeviceHandle;

// A port-channel semaphore: the peer's proxy (a host thread) increments our inbound counter after
// it completed the transfers the peer requested before its signal.
struct Host2DeviceSemaphoreDeviceHandle {
  // Ours: incremented (release, system scope) by the proxy that serves the peer's signal. In
  // memory the proxy can write: GPU memory mapped for the proxy, or shared host memory.
  uint64_t* inboundCounter;
  // Ours, private, persistent across launches (see MemoryDevice2DeviceSemaphoreDeviceHandle).
  uint64_t* expectedInboundCounter;
  uint64_t timeoutNs;  // of the convenience wait(); 0 = MSCCLPP_DEFAULT_TIMEOUT_NS

  // Acquire: pairs with the proxy's release increment, which follows the completed data transfer.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* expectedOut = nullptr, uint64_t* observed = nullptr) {
    uint64_t expected = claimNextExpected();
    if (expectedOut != nullptr) *expectedOut = expected;
    return waitClaimed(expected, deadlineNs, abortFlag, observed);
  }
  MSCCLPP_HOST_DEVICE_INLINE uint64_t claimNextExpected() {
    return atomicFetchAdd<uint64_t, scopeDevice>(expectedInboundCounter, 1, memoryOrderRelaxed) + 1;
  }
  // The spin of wait() for a value already claimed (see the memory-channel handle's waitClaimed).
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus waitClaimed(uint64_t expected, uint64_t deadlineNs, const uint32_t* abortFlag,
                                                    uint64_t* observed = nullptr) {
    uint64_t seen = 0;
    SpinStatus st =
        spinUntil([&] { return (seen = atomicLoad<uint64_t>(inboundCounter, memoryOrderAcquire)) >= expected; },
                  deadlineNs, abortFlag);
    if (observed != nullptr) *observed = seen;
    return st;
  }

  MSCCLPP_HOST_DEVICE_INLINE void wait() {
    SpinStatus st = wait(deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "port semaphore wait");
  }

  MSCCLPP_HOST_DEVICE_INLINE bool poll() {
    uint64_t next = atomicLoad<uint64_t, scopeDevice>(expectedInboundCounter, memoryOrderRelaxed) + 1;
    if (atomicLoad<uint64_t>(inboundCounter, memoryOrderAcquire) < next) return false;
    uint64_t cur = next - 1;
    return atomicCompareExchange<uint64_t, scopeDevice>(expectedInboundCounter, &cur, next, memoryOrderRelaxed);
  }
};
static_assert(std::is_trivially_copyable<Host2DeviceSemaphoreDeviceHandle>::value,
              "device handles are copied to device memory as bytes");

}  // namespace mscclpp

#endif  // MSCCLPP_SEMAPHORE_DEVICE_HPP_
