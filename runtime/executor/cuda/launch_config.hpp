// The launch decisions of the GPU backend, as plain arithmetic over device facts (so they are
// tested without a GPU, with mocked device properties):
//  * threads per block: the plan's num_threads_per_block against the device's and the kernel's
//    limits;
//  * dynamic shared memory: each block's op list (ops, resolved references, ids, each rounded to
//    16 bytes as the kernel copies them) goes to shared memory when it fits under the device's
//    opt-in limit, else the block reads it from global memory (no fixed limit on plan size);
//  * residency: every block of every rank whose kernels share one GPU's SMs at the same time (the
//    ranks of one process, and under CUDA MPS those of other processes too) must be resident at once
//    (the plan's ranks and blocks spin on each other); the occupancy of the kernel times the SM count
//    bounds that, and a plan that exceeds it is refused with the numbers in the message;
//  * hardware queues: the streams of the ranks sharing one GPU in one process (each rank's kernel
//    stream, and its proxy's copy stream when it has port channels) must progress at the same time,
//    but CUDA spreads a process's streams over CUDA_DEVICE_MAX_CONNECTIONS queues and serialises
//    streams that share one (CUDA Programming Guide, "Concurrent Kernel Execution"/Hyper-Q): with
//    fewer queues than such streams the plan is refused.
//
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

// What the launch decisions need to know about a device (cudaGetDeviceProperties /
// cudaDeviceGetAttribute on a GPU; filled by hand in tests).
struct GpuDeviceLimits {
  int device = -1;
  std::string name;
  int smCount = 0;
  int maxThreadsPerBlock = 0;
  uint64_t sharedPerBlockOptin = 0;  // cudaDevAttrMaxSharedMemoryPerBlockOptin
  int ccMajor = 0, ccMinor = 0;
};

// What the compiled kernel allows (cudaFuncGetAttributes of one dtype x op instantiation).
struct GpuKernelLimits {
  int maxThreadsPerBlock = 0;      // register-limited
  uint64_t staticSharedBytes = 0;  // the kernel's own __shared__ variables
};

// The kernel's largest block (its __launch_bounds__).
constexpr int kExecutorKernelMaxThreads = 1024;

// Bytes of a block's op list as the kernel lays it out in shared memory (ops, refs, ids, each
// rounded up to 16 bytes).
uint64_t blockOpListBytes(const ThreadblockDevice& tb);
uint64_t roundUpTo16(uint64_t n);

struct SharedMemoryChoice {
  uint32_t dynamicBytes = 0;  // what the launch reserves (0: every block reads its ops from global memory)
  uint32_t blocksInShared = 0;
  uint32_t blocksInGlobal = 0;
  uint64_t largestBlockBytes = 0;
};

// Picks the dynamic shared memory for a launch: the largest op list that fits under availableBytes
// (the device's opt-in limit minus the kernel's static shared memory); blocks whose list is larger
// read it from global memory.
SharedMemoryChoice chooseSharedMemory(const std::vector<uint64_t>& blockBytes, uint64_t availableBytes);

// Why the plan's threads per block cannot run (not positive, or more than the device or the compiled kernel
// allows), naming plan, rank and the numbers; checkThreadsPerBlock throws it as Error(NotSupported).
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

// Whether totalBlocks blocks of `threads` threads (blocksPerSm of them fit on one SM, from
// cudaOccupancyMaxActiveBlocksPerMultiprocessor) can all be resident on `device` at once.
// groupRanks names the ranks that share the GPU (for the message), otherProcessRanks those of them
// in other processes (co-resident under MPS).
ResidencyVerdict checkResidency(const plan::PlanHeader& header, const std::vector<int>& groupRanks,
                                uint64_t totalBlocks, int threads, uint32_t sharedBytes, int blocksPerSm,
                                const GpuDeviceLimits& device, const std::vector<int>& otherProcessRanks = {});

// Streams that must progress at once for the plan in one group of ranks sharing a process and a GPU:
// one per rank, plus one per rank with port channels (its proxy's copies).
int concurrentStreams(const plan::Plan& plan, const std::vector<int>& groupRanks);
// Why the group's streams cannot all progress on `queues` hardware queues ("" when they can).
std::string queueProblem(const plan::PlanHeader& header, const std::vector<int>& groupRanks, int streams, int queues);

// Ranks that share this process and GPU wait on each other inside one launch, so their kernels must
// run concurrently, which the legacy default stream (a null stream, or cudaStreamLegacy, passed as
// legacyHandle) never allows: it serialises with every other blocking stream. Returns why a launch
// on `stream` would deadlock ("" when it would not).
std::string streamProblem(const std::string& who, const std::vector<int>& coResidentRanks, const void* stream,
                          const void* legacyHandle);

// "0-3, 5" for the message of a rank group.
std::string rankList(const std::vector<int>& ranks);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_LAUNCH_CONFIG_HPP_
