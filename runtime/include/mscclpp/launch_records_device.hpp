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

// A block's end of a launch, run by its thread 0 once the block's threads have
// met: its record and wait slot (null: none) say it finished this launch, and
// the launch's last block to finish advances the flag for the next launch.
// The op interpreter and native kernels (AlgorithmBlock) both end this way.
MSCCLPP_HOST_DEVICE_INLINE void finishLaunchBlock(ExecState* state, BlockRecord* record, LiveWaitSlot* slot,
                                                  uint32_t nBlocks, uint32_t flag) {
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

}  // namespace mscclpp

#endif  // MSCCLPP_LAUNCH_RECORDS_DEVICE_HPP_
