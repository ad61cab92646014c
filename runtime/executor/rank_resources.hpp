// What an execution context needs from the world for one rank: where this
// rank's and its peers' buffers and counters are, as addresses valid in this
// process. A wiring provides it: the emulator's shared world, or the
// communicator wiring over the bootstrap.
// Ownership: the wiring owns the memory named here; keepAlive holds what must
// outlive every context built from these resources.
#ifndef MSCCLPP_EXECUTOR_RANK_RESOURCES_HPP_
#define MSCCLPP_EXECUTOR_RANK_RESOURCES_HPP_

#include <cstdint>
#include <memory>
#include <vector>

#include "executor/exec_layout.hpp"
#include "plan/plan_sizing.hpp"

namespace mscclpp::exec {

// The call a context serves: buffer sizes, and the chunk and scratch sizes
// the plan layer derived. inputBytes and outputBytes are the plan's: the
// padded geometry's when the call's sizes do not fit the plan's chunks.
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

// A context's state memory that others may read, such as the emulator
// across processes. When provided: zeroed, sized for the rank's blocks.
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
  // Per memory channel: our inbound counter, which the peer signals, and
  // the peer's counter of the paired channel. Zeroed and 8-byte aligned.
  std::vector<uint64_t*> memoryInbound;
  std::vector<uint64_t*> memoryOutbound;
  // Per port channel: our inbound counter, which the peer's proxy raises,
  // and the peer's counter of the paired channel, which our proxy raises.
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
