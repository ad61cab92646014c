// What an execution context needs from the world for one rank: where this rank's buffers and
// semaphore counters are, and where the peers' are (as addresses valid in this process). A wiring
// provides it: the emulator's shared-memory world (every rank's memory in one mapping, created
// before fork), or the communicator wiring (buffers registered and exchanged over the bootstrap).
//
// Ownership: the wiring owns all memory named here and keeps it alive while any context built from
// these resources exists (RankResources::keepAlive holds what must outlive the context).
#ifndef MSCCLPP_EXECUTOR_RANK_RESOURCES_HPP_
#define MSCCLPP_EXECUTOR_RANK_RESOURCES_HPP_

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/exec_layout.hpp"
#include "plan/plan_sizing.hpp"

namespace mscclpp::exec {

// The call a context serves: buffer sizes, and the chunk and scratch sizes the plan layer derived.
// inputBytes and outputBytes are the plan's buffers: the call's, or its padded geometry's when the call's
// sizes do not fit the plan's chunks (geometry.padded: the executor stages the call's parts into them).
struct CallShape {
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  plan::CallGeometry geometry;
  size_t elementBytes = 0;  // the call's datatype size (with the sizes, it decides the geometry)
  uint64_t chunkBytes = 0;
  uint64_t scratchChunkBytes = 0;  // == chunkBytes unless reuse_resources limits scratch
  uint64_t scratchBytes = 0;       // this rank's whole scratch (both halves for double scratch)
  bool wrapScratch = false;        // pipeline offsets into scratch wrap modulo scratchChunkBytes
};

struct RemoteBufferResource {
  char* base = nullptr;  // the peer's buffer mapped here (memory access); null if port access only
  uint64_t bytes = 0;    // its size
};

struct SwitchGroupResource {
  std::vector<char*> members;  // each member's bound buffer base, in group order
  uint32_t myIndex = 0;
  uint64_t bytes = 0;         // bytes bound (the smallest member buffer)
  void* multicast = nullptr;  // NVLS multicast address (GPU only)
};

// State memory of a context that outsiders may read (the emulator's wait-for picture across
// processes): when provided, it must be zeroed and sized for the rank's threadblocks.
struct SharedStateMemory {
  ExecState* state = nullptr;
  BlockRecord* blockRecords = nullptr;  // [number of threadblocks]
};

struct RankResources {
  char* input = nullptr;
  char* output = nullptr;
  char* scratch = nullptr;  // zeroed (LL flags start at 0)
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  uint64_t scratchBytes = 0;
  std::vector<RemoteBufferResource> remoteBuffers;  // per rank-level remote buffer declaration
  // Per rank-level memory channel: our inbound counter (the peer signals it) and the peer's
  // counter of the paired channel (we signal it). All zeroed, 8-byte aligned, shared as needed.
  std::vector<uint64_t*> memoryInbound;
  std::vector<uint64_t*> memoryOutbound;
  // Per rank-level port channel: our inbound counter (the peer's proxy increments it) and the
  // peer's inbound counter of the paired channel (our proxy increments it on a signal).
  std::vector<uint64_t*> portInbound;
  std::vector<uint64_t*> portOutbound;
  std::vector<SwitchGroupResource> switchGroups;        // per rank-level switch channel
  uint32_t* abortFlag = nullptr;                        // shared abort flag; null: the context owns one
  LiveWaitSlot* liveWaits = nullptr;                    // GPU: host-mapped, one per threadblock; else null
  SharedStateMemory sharedState;                        // optional
  std::shared_ptr<void> keepAlive;                      // released when the context is destroyed
  std::shared_ptr<struct RemotePortPeers> remotePorts;  // port channels to other hosts (remote_port_peers.hpp) or null
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_RANK_RESOURCES_HPP_
