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
#include "mscclpp/launch_records_device.hpp"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/switch_channel_device.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// The per-block records every launch keeps, public because native
// algorithms' kernels keep them too (mscclpp/launch_records_device.hpp).
using ::mscclpp::BlockRecord;
using ::mscclpp::ExecState;
using ::mscclpp::kCapturedCallTag;
using ::mscclpp::kReportWaitAfterNs;
using ::mscclpp::kRepublishWaitNs;
using ::mscclpp::launchCallTag;
using ::mscclpp::LiveWaitSlot;
using ::mscclpp::nextFlag;
using ::mscclpp::WaitKind;

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

// A segment reference of a variable-size plan, as GPU blocks bind it from
// the count matrix before their first op (SegmentRef on the host):
// bytes = counts[sender * n + receiver] * element bytes; offset =
// fixedOffset + the element bytes of `prefix` entries of row or column
// `line` when placed. It must end within `limit` bytes (times `factor`)
// and, with slotBytes > 0, fit one scratch slot.
struct DeviceSegment {
  uint64_t fixedOffset;
  uint64_t limit;
  uint64_t slotBytes;
  uint32_t ref;  // index in the block's references
  uint32_t op;   // op index, for the failure record
  uint32_t sender, receiver, line, prefix;
  uint8_t factor;
  uint8_t alongRow;
  uint8_t placed;
  uint8_t reserved[5];
};
static_assert(std::is_trivially_copyable<DeviceSegment>::value && sizeof(DeviceSegment) == 56, "copied as bytes");

// Per-launch arguments (by value).
struct LaunchArgs {
  uint64_t timeoutNs;   // each block's deadline is its start time + timeoutNs
  uint32_t packetType;  // mscclpp::PacketType
  uint32_t call;        // which call launched it, for its published waits (launchCallTag; 0: unnumbered)
  // Variable-size plans on the GPU (null otherwise): the count matrix
  // [nRanks * nRanks] in device memory, and the segments each block binds
  // from it, block b's at [segmentBegin[b], segmentBegin[b + 1]).
  const uint64_t* counts;
  const DeviceSegment* segments;
  const uint32_t* segmentBegin;
  uint32_t nRanks;
  uint32_t elementBytes;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EXEC_LAYOUT_HPP_
