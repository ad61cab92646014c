// Device-side semaphore handles. A signal adds one to the peer's 64-bit inbound counter; the
// waiting side keeps an "expected" counter that each wait advances by one. Counters only grow,
// so a wait is "inbound >= expected" and several signals may arrive before their waits.
//
// Host code fills the handles once; they are trivially copyable and copies share the counters.
// After a wait returned Timeout or Aborted the counters no longer match: the owner of the
// semaphore (communicator or execution context) must be torn down, not reused.
#ifndef MSCCLPP_SEMAPHORE_DEVICE_HPP_
#define MSCCLPP_SEMAPHORE_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "device.hpp"

namespace mscclpp {

// The waiting side that both handles share: `inbound` counts the signals that arrived,
// `expected` the signals this side's waits claimed.
struct SemaphoreInbound {
  const uint64_t* inbound;
  uint64_t* expected;

  // Claims the next expected value. Atomic so that waits on one semaphore from several threads
  // or blocks each claim a distinct signal.
  MSCCLPP_HOST_DEVICE_INLINE uint64_t claimNext() const {
    return atomicFetchAdd<uint64_t, scopeDevice>(expected, 1, memoryOrderRelaxed) + 1;
  }

  // Spins until the signal `value` arrived; *observed, if given, receives the last inbound value
  // read. order is acquire for waits that publish data, relaxed for execution order only.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus waitClaimed(uint64_t value, cuda::memory_order order, uint64_t deadlineNs,
                                                    const uint32_t* abortFlag, uint64_t* observed) const {
    uint64_t seen = 0;
    SpinStatus st =
        spinUntil([&] { return (seen = atomicLoad<uint64_t>(inbound, order)) >= value; }, deadlineNs, abortFlag);
    if (observed != nullptr) *observed = seen;
    return st;
  }

  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(cuda::memory_order order, uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* expectedOut, uint64_t* observed) const {
    const uint64_t value = claimNext();
    if (expectedOut != nullptr) *expectedOut = value;
    return waitClaimed(value, order, deadlineNs, abortFlag, observed);
  }

  // Consumes one signal if one is pending, never blocks; acquire on success.
  MSCCLPP_HOST_DEVICE_INLINE bool poll() const {
    uint64_t next = atomicLoad<uint64_t, scopeDevice>(expected, memoryOrderRelaxed) + 1;
    if (atomicLoad<uint64_t>(inbound, memoryOrderAcquire) < next) return false;
    // Only one poller may consume it: advance expected with a CAS from the value we checked.
    uint64_t cur = next - 1;
    return atomicCompareExchange<uint64_t, scopeDevice>(expected, &cur, next, memoryOrderRelaxed);
  }
};

// A memory-channel semaphore: both sides map each other's memory, a signal is a remote atomic.
struct MemoryDevice2DeviceSemaphoreDeviceHandle {
  // Ours: the peer's signal increments it. Allocated and zeroed by our side, in memory the peer
  // can map: GPU memory exported through IPC, or shared memory on the CPU backend.
  uint64_t* inboundCounter;
  // The peer's inboundCounter, mapped into our address space: our signal increments it.
  uint64_t* outboundCounter;
  // Ours, private: how many signals our waits consumed. In context or communicator memory, so a
  // plan's waits go on where the last launch ended.
  uint64_t* expectedInboundCounter;
  // Timeout of the convenience wait() in ns; 0 picks MSCCLPP_DEFAULT_TIMEOUT_NS.
  uint64_t timeoutNs;

  // Release: every write this thread made, and after a block barrier the block's writes, is
  // visible to the peer before it can see the increment. fetch_add, not store, so several
  // threads or blocks may signal the same semaphore.
  MSCCLPP_HOST_DEVICE_INLINE void signal() { atomicFetchAdd<uint64_t>(outboundCounter, 1, memoryOrderRelease); }

  // Relaxed: execution order only; the peer learns we reached this point, not that our data is
  // visible. For plans that publish data some other way, such as packets or a later signal.
  MSCCLPP_HOST_DEVICE_INLINE void relaxedSignal() { atomicFetchAdd<uint64_t>(outboundCounter, 1, memoryOrderRelaxed); }

  MSCCLPP_HOST_DEVICE_INLINE SemaphoreInbound inbound() const {
    return SemaphoreInbound{inboundCounter, expectedInboundCounter};
  }
  MSCCLPP_HOST_DEVICE_INLINE uint64_t claimNextExpected() { return inbound().claimNext(); }

  // Acquire: pairs with the peer's release signal, so its writes before the signal are visible
  // after the wait. *expectedOut receives the claimed value, *observed the last inbound value.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* expectedOut = nullptr, uint64_t* observed = nullptr) {
    return inbound().wait(memoryOrderAcquire, deadlineNs, abortFlag, expectedOut, observed);
  }
  // The spin of wait() for a value already claimed: a waiter that stops at an early deadline, to
  // report a long wait, goes on waiting for the same signal.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus waitClaimed(uint64_t expected, uint64_t deadlineNs, const uint32_t* abortFlag,
                                                    uint64_t* observed = nullptr) {
    return inbound().waitClaimed(expected, memoryOrderAcquire, deadlineNs, abortFlag, observed);
  }

  // Relaxed: like wait() without acquire; pairs with relaxedSignal.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus relaxedWait(uint64_t deadlineNs, const uint32_t* abortFlag,
                                                    uint64_t* expectedOut = nullptr, uint64_t* observed = nullptr) {
    return inbound().wait(memoryOrderRelaxed, deadlineNs, abortFlag, expectedOut, observed);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus relaxedWaitClaimed(uint64_t expected, uint64_t deadlineNs,
                                                           const uint32_t* abortFlag, uint64_t* observed = nullptr) {
    return inbound().waitClaimed(expected, memoryOrderRelaxed, deadlineNs, abortFlag, observed);
  }

  // MSCCL++'s `channel.wait()`: waits up to timeoutNs, then traps on a GPU or throws on the host.
  MSCCLPP_HOST_DEVICE_INLINE void wait() {
    SpinStatus st = wait(deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "semaphore wait");
  }
  MSCCLPP_HOST_DEVICE_INLINE void relaxedWait() {
    SpinStatus st = relaxedWait(deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "semaphore relaxedWait");
  }

  // Consumes one signal if one is pending, never blocks; acquire on success.
  MSCCLPP_HOST_DEVICE_INLINE bool poll() { return inbound().poll(); }
};
static_assert(std::is_trivially_copyable<MemoryDevice2DeviceSemaphoreDeviceHandle>::value,
              "device handles are copied to device memory as bytes");
using SmDevice2DeviceSemaphoreDeviceHandle = MemoryDevice2DeviceSemaphoreDeviceHandle;

// A port-channel semaphore: the peer's proxy, a host thread, increments our inbound counter once
// it completed the transfers the peer requested before its signal.
struct Host2DeviceSemaphoreDeviceHandle {
  // Ours: incremented, release at system scope, by the proxy that serves the peer's signal. In
  // memory the proxy can write: GPU memory mapped for the proxy, or shared host memory.
  uint64_t* inboundCounter;
  // Ours, private, persistent across launches, as in the memory-channel handle.
  uint64_t* expectedInboundCounter;
  uint64_t timeoutNs;  // of the convenience wait(); 0 = MSCCLPP_DEFAULT_TIMEOUT_NS

  MSCCLPP_HOST_DEVICE_INLINE SemaphoreInbound inbound() const {
    return SemaphoreInbound{inboundCounter, expectedInboundCounter};
  }
  MSCCLPP_HOST_DEVICE_INLINE uint64_t claimNextExpected() { return inbound().claimNext(); }

  // Acquire: pairs with the proxy's release increment, which follows the completed transfer.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* expectedOut = nullptr, uint64_t* observed = nullptr) {
    return inbound().wait(memoryOrderAcquire, deadlineNs, abortFlag, expectedOut, observed);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus waitClaimed(uint64_t expected, uint64_t deadlineNs, const uint32_t* abortFlag,
                                                    uint64_t* observed = nullptr) {
    return inbound().waitClaimed(expected, memoryOrderAcquire, deadlineNs, abortFlag, observed);
  }

  MSCCLPP_HOST_DEVICE_INLINE void wait() {
    SpinStatus st = wait(deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "port semaphore wait");
  }

  MSCCLPP_HOST_DEVICE_INLINE bool poll() { return inbound().poll(); }
};
static_assert(std::is_trivially_copyable<Host2DeviceSemaphoreDeviceHandle>::value,
              "device handles are copied to device memory as bytes");

}  // namespace mscclpp

#endif  // MSCCLPP_SEMAPHORE_DEVICE_HPP_
