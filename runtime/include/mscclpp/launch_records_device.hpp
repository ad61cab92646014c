// What every launch of the executor keeps per block, whether it runs a plan's ops or a native
// algorithm's kernel: the LL flag and completion count of the launch, each block's record of where
// it stopped, and on a GPU its live-wait slot in host-mapped memory, which the call monitor reads
// while the kernel runs. Written by device code only through AlgorithmBlock (algorithm_device.hpp)
// or the op interpreter; the host turns them into the wait-for picture of a stuck call.
#ifndef MSCCLPP_LAUNCH_RECORDS_DEVICE_HPP_
#define MSCCLPP_LAUNCH_RECORDS_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "device.hpp"

namespace mscclpp {

// What a block was doing when it stopped (the wait-for picture of a deadlock).
enum class WaitKind : uint32_t {
  None = 0,
  MemoryChannel,  // id: rank-level memory channel; expected/observed: semaphore counters
  PortChannel,    // id: rank-level port channel; expected/observed: semaphore counters
  Packet,         // id: plans: ref position in the op, native kernels: the writer's rank; detail: packet byte offset
  Barrier,        // id: barrier id; expected: blocks taking part
  Semaphore,      // id: semaphore id; observed: its value
  FifoPush,       // id: rank-level port channel (the proxy FIFO was full)
  Flush,          // id: rank-level port channel; expected: FIFO index; observed: proxy tail
  Request,        // id: rank-level port channel; a request that cannot be encoded (detail: bytes)
  Segment,        // variable sizes: id: sender, detail: receiver; expected: buffer bytes; observed: bytes needed
};

enum BlockState : uint32_t {
  kBlockRunning = 0,   // started (or never ran)
  kBlockFinished = 1,  // its last launch completed all ops
  kBlockWriting = 2,   // a thread is filling the record
  kBlockTimedOut = 3,  // its own wait passed the deadline
  kBlockAborted = 4,   // stopped because another block/rank failed
  kBlockInvalid = 5,   // a request could not be made
};

// opIndex: a plan's op, or the step a native kernel is at.
struct BlockRecord {
  uint32_t state;  // BlockState
  uint32_t opIndex;
  uint32_t opType;  // plans: the op's type
  uint32_t waitKind;
  uint32_t id;
  uint32_t pipelineIteration;  // UINT32_MAX outside pipelines
  uint32_t launchFlag;         // the LL flag of the launch this record describes
  uint32_t slotLock;           // 1 while a thread of the block writes its LiveWaitSlot
  uint64_t expected;
  uint64_t observed;
  uint64_t detail;
};

// What one block waits for, in memory the host reads while the kernel
// runs (host-mapped on a GPU). Written by a wait that lasted
// kReportWaitAfterNs, and once per launch when the block finishes. The
// sequence count is odd while a thread rewrites the slot: a reader that
// sees the same even count before and after its loads read one wait.
struct LiveWaitSlot {
  uint32_t sequence;
  uint32_t waiting;  // 0: no long wait; else the waiting thread's index + 1
  uint32_t launchFlag;
  uint32_t finishedFlag;  // the LL flag of the last launch this block finished
  uint32_t opIndex;
  uint32_t pipelineIteration;  // UINT32_MAX outside pipelines
  uint32_t waitKind;           // WaitKind
  uint32_t id;
  uint32_t call;  // the waiting launch's call tag (launchCallTag)
  uint32_t reserved;
  uint64_t expected;
  uint64_t observed;
  uint64_t detail;  // LL packet waits: the packet's byte offset in its buffer
};

// A device wait publishes itself after 1 ms, thousands of polls: the fast
// path never gets there.
constexpr uint64_t kReportWaitAfterNs = 1000000;
// While it goes on, it refills a slot another thread's ended wait cleared
// within this time. The call monitor looks every 2 s.
constexpr uint64_t kRepublishWaitNs = 100000000;
// A long wait's round: at its end the wait reads the host's abort flag and
// refills its slot. An abort raised by the host stops a GPU launch within a
// round plus the polls to the next read of the flag's device copy
// (kAbortPollMask): under 100 ms.
constexpr uint64_t kWaitRoundNs = 10000000;
static_assert(kWaitRoundNs <= kRepublishWaitNs, "a round refills the slot in time for the monitor");

// Mutable state owned by the context, persistent across launches (graph replays included).
struct ExecState {
  uint32_t flag;              // LL flag of the next launch: starts at 1, never 0, advanced by the launch's last block
  uint32_t doneBlocks;        // blocks of the current launch that finished
  uint32_t firstFailedBlock;  // UINT32_MAX until a block times out or fails
  uint32_t abortCopy;         // GPU contexts: the abort flag's device-memory copy, which the waits poll
};

static_assert(std::is_trivially_copyable<BlockRecord>::value && std::is_trivially_copyable<LiveWaitSlot>::value &&
                  std::is_trivially_copyable<ExecState>::value,
              "launch records live in device memory as bytes");

// A launch's call tag: the low 31 bits of the call's number on its
// monitor, with the top bit set for a launch captured into a CUDA graph.
// Every replay carries the captured tag, so the monitor tells a waiting
// replay from an enqueued call of the same context queued behind it.
constexpr uint32_t kCapturedCallTag = 0x80000000u;
MSCCLPP_HOST_DEVICE_INLINE uint32_t launchCallTag(uint64_t callNumber, bool captured) {
  return static_cast<uint32_t>(callNumber & 0x7fffffffu) | (captured ? kCapturedCallTag : 0u);
}

// The LL flag of the launch after one with `flag`. Never 0: zeroed packets
// must never look valid. Always of the other parity: the parity picks the
// scratch half, and a fast rank's next launch must not overwrite packets a
// slow peer still reads. So the odd UINT32_MAX wraps to 2, not 1.
MSCCLPP_HOST_DEVICE_INLINE uint32_t nextFlag(uint32_t flag) { return flag == UINT32_MAX ? 2u : flag + 1; }

// Where a waiting or stopped block is: a plan's op and pipeline iteration
// (UINT32_MAX outside pipelines), or a native kernel's step.
struct WaitSite {
  uint32_t opIndex;
  uint32_t pipelineIteration;
};

// One thread's side of its block's launch records while the launch runs:
// its long waits in the block's live-wait slot, the abort flags, where the
// block stopped, and the block's end. The op interpreter and native kernels
// (AlgorithmBlock) wait, fail and finish through it, so the rules are one.
struct BlockRecorder {
  ExecState* state;
  BlockRecord* record;
  LiveWaitSlot* slot;   // null: no live waits (CPU plan contexts: the host reads their counters live)
  uint32_t* hostAbort;  // the context's abort flag: host-mapped on a GPU
  // The flag the spins poll: GPU contexts' device-memory copy
  // (ExecState::abortCopy), else hostAbort itself.
  uint32_t* waitAbort;
  uint32_t block, waiter;  // waiter: the thread's index + 1, as the slot shows it
  uint32_t flag, call;     // the launch's LL flag and call tag

  // Of a launch context with the records' fields (a plan's or a native
  // algorithm's), for `thread` of `block`.
  template <class Context>
  MSCCLPP_HOST_DEVICE_INLINE static BlockRecorder of(const Context& c, uint32_t block, uint32_t thread, uint32_t flag,
                                                     uint32_t call, uint32_t* waitAbort) {
    return {c.state,
            &c.blockRecords[block],
            c.liveWaits != nullptr ? &c.liveWaits[block] : nullptr,
            c.abortFlag,
            waitAbort,
            block,
            thread + 1,
            flag,
            call};
  }

  // A wait still going after kReportWaitAfterNs writes what it waits for
  // into the block's slot for the call monitor, spins on for the same
  // claimed signal in rounds of kWaitRoundNs, and clears the slot when it
  // ends; one that goes on refills a slot another thread's ended wait
  // cleared. After the first millisecond and each round it looks at the
  // host's abort flag (hostAbortSeen), which the spins do not read. A short
  // wait costs one clock read. Spins that poll the host's flag themselves
  // (CPU contexts) wait in one go, which keeps backing off to sleeps.
  template <class Spin>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus reportedWait(WaitSite at, WaitKind kind, uint32_t what, uint64_t expected,
                                                     const uint64_t* observed, uint64_t deadline, Spin&& spin,
                                                     uint64_t detail) {
    if (slot == nullptr) return spin(deadline);
    const uint64_t early = clockNs() + kReportWaitAfterNs;
    if (early >= deadline) return spin(deadline);
    SpinStatus st = spin(early);
    if (st != SpinStatus::Timeout) return st;
    if (hostAbortSeen()) return SpinStatus::Aborted;
    publishWait(at, kind, what, expected, *observed, detail);
    if (waitAbort == hostAbort) {
      st = spin(deadline);
    } else {
      for (;;) {
        const uint64_t round = clockNs() + kWaitRoundNs;
        st = spin(round < deadline ? round : deadline);
        if (st != SpinStatus::Timeout || round >= deadline) break;
        if (hostAbortSeen()) {
          st = SpinStatus::Aborted;
          break;
        }
        republishWait(at, kind, what, expected, *observed, detail);
      }
    }
    clearWait();
    return st;
  }

  // Whether the host raised the context's abort flag (a proxy failure, a
  // failed communicator); if so, raises the device copy the spins poll, so
  // every wait of the launch stops within kAbortPollMask polls. The flag is
  // host-mapped: one lane of the warp reads it across PCIe and shares it.
  MSCCLPP_HOST_DEVICE_NOINLINE bool hostAbortSeen() {
    uint32_t raised = 0;
#if defined(MSCCLPP_DEVICE_COMPILE)
    const unsigned active = __activemask();
    const int leader = __ffs(active) - 1;
    if (static_cast<int>(threadIdx.x & 31u) == leader) raised = atomicLoad<uint32_t>(hostAbort, memoryOrderRelaxed);
    raised = __shfl_sync(active, raised, leader);
#else
    raised = atomicLoad<uint32_t>(hostAbort, memoryOrderRelaxed);
#endif
    if (raised != 0 && waitAbort != hostAbort) atomicStore<uint32_t, scopeDevice>(waitAbort, 1u, memoryOrderRelaxed);
    return raised != 0;
  }

  // Relaxed system-scope stores into host-mapped memory, between two
  // system-scope fences while the sequence count is odd: the host sees them
  // while the kernel runs (docs/cuda-backend.md, "Design points and the CUDA
  // rules they follow"). Writers of one block take turns (lockSlot), so no
  // slot mixes two waits. Cold: only a wait that already waited long.
  MSCCLPP_HOST_DEVICE_NOINLINE void publishWait(WaitSite at, WaitKind kind, uint32_t what, uint64_t expected,
                                                uint64_t observed, uint64_t detail) {
    if (!lockSlot()) return;
    const uint32_t seq = beginSlotWrite();
    atomicStore<uint32_t>(&slot->launchFlag, flag, memoryOrderRelaxed);
    atomicStore<uint32_t>(&slot->opIndex, at.opIndex, memoryOrderRelaxed);
    atomicStore<uint32_t>(&slot->pipelineIteration, at.pipelineIteration, memoryOrderRelaxed);
    atomicStore<uint32_t>(&slot->waitKind, static_cast<uint32_t>(kind), memoryOrderRelaxed);
    atomicStore<uint32_t>(&slot->id, what, memoryOrderRelaxed);
    atomicStore<uint32_t>(&slot->call, call, memoryOrderRelaxed);
    atomicStore<uint64_t>(&slot->expected, expected, memoryOrderRelaxed);
    atomicStore<uint64_t>(&slot->observed, observed, memoryOrderRelaxed);
    atomicStore<uint64_t>(&slot->detail, detail, memoryOrderRelaxed);
    atomicStore<uint32_t>(&slot->waiting, waiter, memoryOrderRelaxed);
    endSlotWrite(seq);
    unlockSlot();
  }
  // publishWait when the slot shows no wait (the one it showed ended).
  MSCCLPP_HOST_DEVICE_NOINLINE void republishWait(WaitSite at, WaitKind kind, uint32_t what, uint64_t expected,
                                                  uint64_t observed, uint64_t detail) {
    if (atomicLoad<uint32_t>(&slot->waiting, memoryOrderRelaxed) == 0)
      publishWait(at, kind, what, expected, observed, detail);
  }
  // Only the thread whose wait the slot shows clears it: another thread of
  // the block may have published since.
  MSCCLPP_HOST_DEVICE_NOINLINE void clearWait() {
    if (atomicLoad<uint32_t>(&slot->waiting, memoryOrderRelaxed) != waiter || !lockSlot()) return;
    if (atomicLoad<uint32_t>(&slot->waiting, memoryOrderRelaxed) == waiter) {
      const uint32_t seq = beginSlotWrite();
      atomicStore<uint32_t>(&slot->waiting, 0u, memoryOrderRelaxed);
      endSlotWrite(seq);
    }
    unlockSlot();
  }

  // Records where the block stopped; the first writer of the block wins. A
  // failure of this rank's own (not an abort) raises both abort flags, so
  // other blocks and ranks stop. opType: a plan's op type, 0 for native
  // kernels. publishInvalid: an invalid stop also fills the block's slot,
  // before the abort that would stop the slot's writer.
  MSCCLPP_HOST_DEVICE_NOINLINE void recordStop(SpinStatus st, WaitSite at, uint32_t opType, WaitKind kind,
                                               uint32_t what, uint64_t expected, uint64_t observed, uint64_t detail,
                                               bool publishInvalid) {
    BlockRecord* r = record;
    uint32_t s = atomicLoad<uint32_t, scopeDevice>(&r->state, memoryOrderRelaxed);
    while (s == kBlockRunning || s == kBlockFinished) {
      if (atomicCompareExchange<uint32_t, scopeDevice>(&r->state, &s, kBlockWriting, memoryOrderRelaxed)) {
        // Atomic where a live reader looks; the rest is read after the launch.
        atomicStore<uint32_t, scopeDevice>(&r->opIndex, at.opIndex, memoryOrderRelaxed);
        r->opType = opType;
        r->waitKind = static_cast<uint32_t>(kind);
        r->id = what;
        atomicStore<uint32_t, scopeDevice>(&r->pipelineIteration, at.pipelineIteration, memoryOrderRelaxed);
        atomicStore<uint32_t, scopeDevice>(&r->launchFlag, flag, memoryOrderRelaxed);
        r->expected = expected;
        r->observed = observed;
        r->detail = detail;
        const uint32_t finalState = st == SpinStatus::Timeout   ? kBlockTimedOut
                                    : st == SpinStatus::Aborted ? kBlockAborted
                                                                : kBlockInvalid;
        // Release: the fields above are complete once the state says so,
        // for any reader that looks while the launch runs.
        atomicStore<uint32_t, scopeSystem>(&r->state, finalState, memoryOrderRelease);
        break;
      }
    }
    if (publishInvalid && st == SpinStatus::Invalid && slot != nullptr)
      publishWait(at, kind, what, expected, observed, detail);
    if (st != SpinStatus::Aborted) {
      uint32_t none = UINT32_MAX;
      atomicCompareExchange<uint32_t, scopeDevice>(&state->firstFailedBlock, &none, block, memoryOrderRelaxed);
      // Relaxed: the flag only makes other spins give up; it publishes no data.
      // The host reads the mapped flag; this launch's waits poll the copy.
      atomicStore<uint32_t, scopeSystem>(hostAbort, 1u, memoryOrderRelaxed);
      if (waitAbort != hostAbort) atomicStore<uint32_t, scopeDevice>(waitAbort, 1u, memoryOrderRelaxed);
    }
  }

  // The block's end, run by its thread 0 once the block's threads have met:
  // its record and slot say it finished this launch, and the launch's last
  // block to finish advances the flag for the next launch.
  MSCCLPP_HOST_DEVICE_INLINE void finish(uint32_t nBlocks) {
    uint32_t s = atomicLoad<uint32_t, scopeDevice>(&record->state, memoryOrderRelaxed);
    if ((s == kBlockRunning || s == kBlockFinished) &&
        atomicCompareExchange<uint32_t, scopeDevice>(&record->state, &s, kBlockWriting, memoryOrderRelaxed)) {
      atomicStore<uint32_t, scopeDevice>(&record->launchFlag, flag, memoryOrderRelaxed);
      atomicStore<uint32_t, scopeSystem>(&record->state, static_cast<uint32_t>(kBlockFinished), memoryOrderRelease);
    }
    if (slot != nullptr) atomicStore<uint32_t>(&slot->finishedFlag, flag, memoryOrderRelaxed);
#if defined(MSCCLPP_DEVICE_COMPILE)
    __threadfence();  // the block's writes, ordered by the caller's barrier, before our count
#endif
    // acq_rel: the last block acquires every block's completion before advancing the flag.
    const uint32_t done = atomicFetchAdd<uint32_t, scopeDevice>(&state->doneBlocks, 1u, memoryOrderAcqRel) + 1;
    if (done == nBlocks) {
      atomicStore<uint32_t, scopeDevice>(&state->doneBlocks, 0u, memoryOrderRelaxed);
      // Release: the next launch, stream-ordered after this one, reads it.
      atomicStore<uint32_t, scopeDevice>(&state->flag, nextFlag(flag), memoryOrderRelease);
    }
  }

  // The block's writers of its slot take turns through a lock word in its
  // record. The word is device memory: an atomic on host-mapped memory
  // would depend on the PCIe link's atomics. A writer holds it for a few
  // stores, so a plain loop suffices; spinUntil here makes ptxas spill.
  // Returns false, with nothing written, on an abort.
  MSCCLPP_HOST_DEVICE_INLINE bool lockSlot() {
    for (;;) {
      uint32_t free = 0;
      if (atomicCompareExchange<uint32_t, scopeDevice>(&record->slotLock, &free, 1u, memoryOrderAcquire)) return true;
      if (atomicLoad<uint32_t>(waitAbort, memoryOrderRelaxed) != 0) return false;
    }
  }
  MSCCLPP_HOST_DEVICE_INLINE void unlockSlot() {
    atomicStore<uint32_t, scopeDevice>(&record->slotLock, 0u, memoryOrderRelease);
  }
  // The sequence count goes odd, then the fields change, then it goes even.
  // beginSlotWrite returns the even value from before.
  MSCCLPP_HOST_DEVICE_INLINE uint32_t beginSlotWrite() {
    const uint32_t seq = atomicLoad<uint32_t>(&slot->sequence, memoryOrderRelaxed) & ~1u;
    atomicStore<uint32_t>(&slot->sequence, seq + 1, memoryOrderRelaxed);
    cuda::atomic_thread_fence(memoryOrderSeqCst, scopeSystem);
    return seq;
  }
  MSCCLPP_HOST_DEVICE_INLINE void endSlotWrite(uint32_t seq) {
    cuda::atomic_thread_fence(memoryOrderSeqCst, scopeSystem);
    atomicStore<uint32_t>(&slot->sequence, seq + 2, memoryOrderRelaxed);
  }
};

}  // namespace mscclpp

#endif  // MSCCLPP_LAUNCH_RECORDS_DEVICE_HPP_
