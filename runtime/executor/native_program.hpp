// A native algorithm as the executor runs it: a generated plan that
// declares only resources (a channel to each peer, the peers' buffers,
// scratch, switch channels, blocks; no ops) and the kernel's entry points,
// which run instead of the op interpreter. Contexts, the cache, the call
// monitor, failures and graph capture are the plans' (docs/algorithms.md).
// Immutable once made; shared by the algorithm layer and the contexts.
#ifndef MSCCLPP_EXECUTOR_NATIVE_PROGRAM_HPP_
#define MSCCLPP_EXECUTOR_NATIVE_PROGRAM_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::exec {

// The entry points (mscclpp/algorithm_device.hpp): a host block, and on a
// GPU a launch and a query returning a cudaError_t value.
using NativeHostBlockFn = void (*)(const void* context, const void* args, uint32_t block);
using NativeGpuLaunchFn = int (*)(const void* deviceContext, const void* args, uint32_t nBlocks,
                                  uint32_t threadsPerBlock, void* stream);
using NativeGpuQueryFn = int (*)(int dtype, int threadsPerBlock, int* maxThreadsPerBlock, int* blocksPerSm);

struct NativeKernel {
  std::string name;                // the algorithm's
  std::vector<std::string> steps;  // names of the steps its blocks report
  NativeHostBlockFn hostBlock = nullptr;
  NativeGpuLaunchFn gpuLaunch = nullptr;  // null: no GPU code
  NativeGpuQueryFn gpuQuery = nullptr;
};

struct NativeProgram {
  plan::PlanPtr plan;  // every rank's declarations; threadblocks without ops
  std::shared_ptr<const NativeKernel> kernel;
  std::vector<int32_t> hostOf;  // per rank: its host's index, hosts numbered by their lowest rank
};
using NativeProgramPtr = std::shared_ptr<const NativeProgram>;

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_NATIVE_PROGRAM_HPP_
