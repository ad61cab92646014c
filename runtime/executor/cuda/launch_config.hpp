// The GPU backend's launch decisions as plain arithmetic over device facts,
// so tests check them with mocked device properties: threads per block,
// shared memory for op lists, residency of every co-running block, and
// hardware queues (docs/cuda-backend.md, "Execution contexts", step 1).
// Thread-safety: pure functions.
#ifndef MSCCLPP_EXECUTOR_CUDA_LAUNCH_CONFIG_HPP_
#define MSCCLPP_EXECUTOR_CUDA_LAUNCH_CONFIG_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "executor/exec_layout.hpp"
#include "executor/refusal.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// What the launch decisions need to know about a device. Read from CUDA on
// a GPU; filled by hand in tests.
struct GpuDeviceLimits {
  int device = -1;
  std::string name;
  int smCount = 0;
  int maxThreadsPerBlock = 0;
  uint64_t sharedPerBlockOptin = 0;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int ccMajor = 0, ccMinor = 0;
  bool cooperativeLaunch = false;  // cudaDevAttrCooperativeLaunch
};

// What the compiled kernel allows (cudaFuncGetAttributes of one dtype x op instantiation).
struct GpuKernelLimits {
  int maxThreadsPerBlock = 0;      // register-limited
  uint64_t staticSharedBytes = 0;  // the kernel's own __shared__ variables
};

// The kernel's largest block (its __launch_bounds__).
constexpr int kExecutorKernelMaxThreads = 1024;

// Bytes of a block's op list as the kernel lays it out in shared memory:
// ops, refs and ids, each rounded up to 16 bytes.
uint64_t blockOpListBytes(const ThreadblockDevice& tb);
uint64_t roundUpTo16(uint64_t n);

struct SharedMemoryChoice {
  uint32_t dynamicBytes = 0;  // what the launch reserves (0: every block reads its ops from global memory)
  uint32_t blocksInShared = 0;
  uint32_t blocksInGlobal = 0;
  uint64_t largestBlockBytes = 0;
};

// Picks the dynamic shared memory for a launch: the largest op list that
// fits in availableBytes, the opt-in limit less the kernel's static shared
// memory. Blocks with a larger list read it from global memory.
SharedMemoryChoice chooseSharedMemory(const std::vector<uint64_t>& blockBytes, uint64_t availableBytes);

// Why the plan's threads per block cannot run: not positive, or more than
// the device or the kernel allows. Names plan, rank and the numbers;
// checkThreadsPerBlock throws it as Error(NotSupported).
Refusal threadsPerBlockRefusal(const plan::PlanHeader& header, int rank, int threads, const GpuDeviceLimits& device,
                               const GpuKernelLimits& kernel);
void checkThreadsPerBlock(const plan::PlanHeader& header, int rank, int threads, const GpuDeviceLimits& device,
                          const GpuKernelLimits& kernel);

// Blocks of the plan's ranks in `ranks` (those that share one GPU in one process).
uint64_t groupBlocks(const plan::Plan& plan, const std::vector<int>& ranks);

struct ResidencyVerdict {
  bool ok = true;
  uint64_t capacity = 0;  // blocks the GPU holds at once for this kernel configuration
  std::string reason;     // why not (empty when ok)
};

// Whether totalBlocks blocks can all be resident on `device` at once, with
// blocksPerSm per SM from CUDA's occupancy query. groupRanks are the ranks
// sharing the GPU, otherProcessRanks those in other processes under MPS.
// alsoInFlight names the plans of earlier calls whose blocks were counted.
ResidencyVerdict checkResidency(const plan::PlanHeader& header, const std::vector<int>& groupRanks,
                                uint64_t totalBlocks, int threads, uint32_t sharedBytes, int blocksPerSm,
                                const GpuDeviceLimits& device, const std::vector<int>& otherProcessRanks = {},
                                const std::vector<std::string>& alsoInFlight = {});

// What one plan's kernels put on a GPU: the blocks of each rank sharing
// its SMs (in the order of one rank list), and how many of them one SM
// holds (the occupancy of its kernel configuration; 0: not yet known).
struct ResidentLoad {
  std::string plan;  // "X (source)"
  std::vector<uint64_t> blocks;
  int blocksPerSm = 0;
};
ResidentLoad residentLoadOf(const plan::Plan& plan, const std::vector<int>& ranks, int blocksPerSm);

// The blocks that can be in flight at once when `mine` runs while the
// `cached` plans' kernels may still run. A rank runs one kernel at a time
// (its stream orders its calls), and any of the plans', so each rank counts
// with its largest block count. Kernels of different configurations share
// SMs, so an SM is counted for the smallest blocksPerSm among them: a mix of
// that many blocks fits in every resource each of them fits in alone.
struct InFlightBlocks {
  uint64_t blocks = 0;
  int blocksPerSm = 0;
  std::vector<std::string> others;  // the cached plans that raised the count or lowered blocksPerSm
};
InFlightBlocks inFlightBlocks(const ResidentLoad& mine, const std::vector<ResidentLoad>& cached);

// Whether rank's blocks wait on each other within a launch: more than one
// block, and the plan waits somewhere (a wait on a peer can wait, through
// it, on another of our blocks). CUDA guarantees that such blocks are
// resident together only for a cooperative launch.
bool blocksWaitOnEachOther(const plan::Plan& plan, int rank);
// Why a rank whose device offers no cooperative launch cannot run the plan
// ("" when every such rank's blocks are independent). cooperative[q]: rank
// q's device, CUDA ordinal devices[q] in its process, offers it.
std::string cooperativeProblem(const plan::Plan& plan, const std::vector<bool>& cooperative,
                               const std::vector<int>& devices);

// Streams that must progress at once for ranks sharing a process and GPU:
// one per rank, plus one per rank with port channels for its proxy. (The
// GPU context adds the process's runtime stream when they reach other hosts.)
int concurrentStreams(const plan::Plan& plan, const std::vector<int>& groupRanks);
// Why the group's streams cannot all progress on `queues` hardware queues ("" when they can).
std::string queueProblem(const plan::PlanHeader& header, const std::vector<int>& groupRanks, int streams, int queues);

// Ranks sharing this process and GPU wait on each other inside a launch,
// so their kernels must run at once. The legacy default stream never
// allows that: it serialises with every blocking stream. Returns why a
// launch on `stream` would deadlock, or "".
std::string streamProblem(const std::string& who, const std::vector<int>& coResidentRanks, const void* stream,
                          const void* legacyHandle);

// "0-3, 5" for the message of a rank group.
std::string rankList(const std::vector<int>& ranks);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_LAUNCH_CONFIG_HPP_
