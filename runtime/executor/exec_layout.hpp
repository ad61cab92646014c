// The data the op interpreter reads: one ExecContextDevice per plan, rank and
// set of resources, built once on the host and placed where the blocks read
// it (device memory on the GPU). Everything here is trivially copyable.
// References are resolved when the context is built; at run time the
// interpreter adds only the launch's scratch half and the pipeline offset.
#ifndef MSCCLPP_EXECUTOR_EXEC_LAYOUT_HPP_
#define MSCCLPP_EXECUTOR_EXEC_LAYOUT_HPP_

#include <cstdint>
#include <type_traits>

#include "mscclpp/device_syncer.hpp"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/switch_channel_device.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// A plan reference resolved for one context: the data bytes
// [offset, offset + bytes). Packet data lies at base + 2 * data offset.
struct ResolvedRef {
  char* base;         // Local: our buffer; Remote (memory access): the peer's buffer mapped here; else null
  uint64_t offset;    // data-domain offset of the slice: index * chunk (+ thread-block-group slice)
  uint64_t bytes;     // data-domain size of the slice
  uint32_t id;        // Remote: rank-level remote buffer id; Multicast: rank-level switch channel id
  uint32_t memoryId;  // port channels: the proxy memory id of the target buffer (UINT32_MAX: none)
  uint8_t kind;       // plan::RefKind
  uint8_t type;       // plan::BufferType of the target buffer
  uint8_t scratch;    // 1 when the target is a scratch buffer (launch half and scratch wrap apply)
  uint8_t reserved[5];
};
static_assert(std::is_trivially_copyable<ResolvedRef>::value && sizeof(ResolvedRef) == 40, "copied as bytes");

// One plan threadblock. refs[] has the plan's indexes (Op::srcBegin, dstBegin).
struct ThreadblockDevice {
  const plan::Op* ops;
  const ResolvedRef* refs;
  const uint32_t* ids;
  uint32_t nOps;
  uint32_t nRefs;
  uint32_t nIds;
  uint32_t planTbId;  // the plan's "id" of this threadblock
};

// What a block was doing when it stopped (the wait-for picture of a deadlock).
enum class WaitKind : uint32_t {
  None = 0,
  MemoryChannel,  // id: rank-level memory channel; expected/observed: semaphore counters
  PortChannel,    // id: rank-level port channel; expected/observed: semaphore counters
  Packet,         // id: ref position in the op; detail: packet byte offset in its buffer; expected/observed: flags
  Barrier,        // id: barrier id; expected: blocks taking part
  Semaphore,      // id: semaphore id; observed: its value
  FifoPush,       // id: rank-level port channel (the proxy FIFO was full)
  Flush,          // id: rank-level port channel; expected: FIFO index; observed: proxy tail
  Request,        // id: rank-level port channel; a request that cannot be encoded (detail: bytes)
};

enum BlockState : uint32_t {
  kBlockRunning = 0,   // started (or never ran)
  kBlockFinished = 1,  // its last launch completed all ops
  kBlockWriting = 2,   // a thread is filling the record
  kBlockTimedOut = 3,  // its own wait passed the deadline
  kBlockAborted = 4,   // stopped because another block/rank failed
  kBlockInvalid = 5,   // a request could not be made
};

struct BlockRecord {
  uint32_t state;  // BlockState
  uint32_t opIndex;
  uint32_t opType;  // plan::OpType
  uint32_t waitKind;
  uint32_t id;
  uint32_t pipelineIteration;  // UINT32_MAX outside pipelines
  uint32_t launchFlag;         // the LL flag of the launch this record describes
  uint32_t slotLock;           // GPU contexts: 1 while a thread of the block writes its LiveWaitSlot
  uint64_t expected;
  uint64_t observed;
  uint64_t detail;
};

// GPU contexts: what one block waits for, in host-mapped memory the host
// reads while the kernel runs. Written by a wait that lasted
// kReportWaitAfterNs, and once per launch by finishBlock. The sequence
// count is odd while a thread rewrites the slot: a reader that sees the
// same even count before and after its loads read one consistent wait.
struct LiveWaitSlot {
  uint32_t sequence;
  uint32_t waiting;  // 0: no long wait; else the waiting thread's index + 1
  uint32_t launchFlag;
  uint32_t finishedFlag;  // the LL flag of the last launch this block finished
  uint32_t opIndex;
  uint32_t pipelineIteration;  // UINT32_MAX outside pipelines
  uint32_t waitKind;           // WaitKind
  uint32_t id;
  uint32_t call;  // the waiting launch's LaunchArgs::call
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

struct ExecContextDevice {
  int32_t rank;
  uint32_t nBlocks;
  const ThreadblockDevice* blocks;

  uint64_t chunkBytes;         // the call's chunk size (plan sizing)
  uint64_t scratchChunkBytes;  // reuse_resources: scratch chunk, may be < chunkBytes (then wrapScratch)
  uint64_t scratchHalfBytes;   // double scratch: offset of the second half; 0 otherwise
  uint8_t doubleScratch;
  uint8_t wrapScratch;  // pipeline offsets into scratch wrap modulo scratchChunkBytes
  uint8_t reserved[6];

  char* input;
  char* output;
  char* scratch;

  MemoryChannelDeviceHandle* memoryChannels;
  PortChannelDeviceHandle* portChannels;
  SwitchChannelDeviceHandle* switchChannels;
  uint32_t nMemoryChannels;
  uint32_t nPortChannels;
  uint32_t nSwitchChannels;
  uint32_t nSemaphores;
  uint32_t* semaphores;    // sem_acquire / sem_release counters (rank-local)
  DeviceSyncer* barriers;  // barrier ids (rank-local)
  uint32_t nBarriers;
  uint32_t reserved2;

  ExecState* state;
  BlockRecord* blockRecords;  // [nBlocks]
  uint32_t* abortFlag;        // nonzero: stop waiting (may be shared by all ranks of an emulation)
  LiveWaitSlot* liveWaits;    // [nBlocks], host-mapped (GPU contexts); null: the host reads the records live
};
static_assert(std::is_trivially_copyable<ExecContextDevice>::value, "copied as bytes");

// Per-launch arguments (by value).
struct LaunchArgs {
  uint64_t timeoutNs;   // each block's deadline is its start time + timeoutNs
  uint32_t packetType;  // mscclpp::PacketType
  uint32_t call;        // which call launched it, for its published waits (launchCallTag; 0: unnumbered)
};

// LaunchArgs::call: the low 31 bits of the call's number on its monitor,
// with the top bit set for a launch captured into a CUDA graph. Every
// replay carries the captured tag, so the monitor tells a waiting replay
// from an enqueued call of the same context queued behind it.
constexpr uint32_t kCapturedCallTag = 0x80000000u;
MSCCLPP_HOST_DEVICE_INLINE uint32_t launchCallTag(uint64_t callNumber, bool captured) {
  return static_cast<uint32_t>(callNumber & 0x7fffffffu) | (captured ? kCapturedCallTag : 0u);
}

// The LL flag of the launch after one with `flag`. Never 0: zeroed packets
// must never look valid. Always of the other parity: the parity picks the
// scratch half, and a fast rank's next launch must not overwrite packets a
// slow peer still reads. So the odd UINT32_MAX wraps to 2, not 1.
MSCCLPP_HOST_DEVICE_INLINE uint32_t nextFlag(uint32_t flag) { return flag == UINT32_MAX ? 2u : flag + 1; }

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EXEC_LAYOUT_HPP_
