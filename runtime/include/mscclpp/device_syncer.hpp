// A grid-wide barrier among nBlocks blocks of one kernel; on the CPU backend, among the block
// threads of one rank. Reusable: each round bumps `generation`, so one syncer serves any number of
// rounds and launches while every round has the same nBlocks participants. It must start zeroed,
// in memory every participating block reaches, used by one group of blocks at a time. After
// sync() returns Ok, every write a block made before its sync() is visible to every participant:
// release on arrival, acquire on departure, at device scope.
#ifndef MSCCLPP_DEVICE_SYNCER_HPP_
#define MSCCLPP_DEVICE_SYNCER_HPP_

#include <cstdint>
#include <type_traits>

#include "device.hpp"

namespace mscclpp {

struct DeviceSyncer {
  uint32_t count;       // blocks arrived in the current round
  uint32_t generation;  // completed rounds

  // All threads of each participating block call it, and all get the same status. After Timeout
  // or Aborted the syncer must be zeroed again before reuse.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus sync(uint32_t nBlocks, uint64_t deadlineNs, const uint32_t* abortFlag) {
    return syncWith(nBlocks, abortFlag, [deadlineNs](auto&& spin) { return spin(deadlineNs); });
  }

  // As sync(), with the wait for the round's end handed to `waitFor(spin)`. `spin(deadlineNs)`
  // waits until the round ends, the deadline passes or the abort flag is raised; waitFor may
  // call it again after a Timeout, as the executor does to report a long wait. One thread per
  // block waits.
  template <class WaitFor>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus syncWith(uint32_t nBlocks, const uint32_t* abortFlag, WaitFor&& waitFor) {
    syncBlockThreads();
    SpinStatus st = SpinStatus::Ok;
#if defined(MSCCLPP_DEVICE_COMPILE)
    if (threadIdx.x == 0) {
      // Makes the writes of all this block's threads, ordered before us by the barrier above,
      // visible device-wide before our arrival is counted.
      __threadfence();
#endif
      // A block enters a round only after seeing the previous generation, so this read is the
      // generation of the round we are joining.
      uint32_t gen = atomicLoad<uint32_t, scopeDevice>(&generation, memoryOrderRelaxed);
      // acq_rel: releases our block's writes; the last arriver also acquires everyone's.
      uint32_t arrived = atomicFetchAdd<uint32_t, scopeDevice>(&count, 1u, memoryOrderAcqRel) + 1;
      if (arrived >= nBlocks) {
        atomicStore<uint32_t, scopeDevice>(&count, 0u, memoryOrderRelaxed);
        // Release: publishes the count reset and every arrival's writes, acquired above.
        atomicStore<uint32_t, scopeDevice>(&generation, gen + 1, memoryOrderRelease);
      } else {
        // Acquire: pairs with the last arriver's release.
        st = waitFor([&](uint64_t deadlineNs) {
          return spinUntil([&] { return atomicLoad<uint32_t, scopeDevice>(&generation, memoryOrderAcquire) != gen; },
                           deadlineNs, abortFlag);
        });
      }
#if defined(MSCCLPP_DEVICE_COMPILE)
    }
    // Every thread of the block leaves with the same status.
    if (__syncthreads_or(st != SpinStatus::Ok)) {
      st = __syncthreads_or(st == SpinStatus::Aborted) ? SpinStatus::Aborted : SpinStatus::Timeout;
    }
#endif
    return st;
  }

  MSCCLPP_HOST_DEVICE_INLINE void sync(uint32_t nBlocks, uint64_t timeoutNs = 0) {
    SpinStatus st = sync(nBlocks, deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "DeviceSyncer::sync");
  }
};
static_assert(std::is_trivially_copyable<DeviceSyncer>::value, "DeviceSyncer lives in device memory as bytes");

}  // namespace mscclpp

#endif  // MSCCLPP_DEVICE_SYNCER_HPP_
