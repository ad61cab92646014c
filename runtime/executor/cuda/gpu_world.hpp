// The GPU executor's view of its communicator: this rank's device and its
// limits, the ranks' topology, the namespace contexts exchange on, the build
// counter that tags each exchange, the memory its contexts reuse, and the
// blocks its cached contexts put on the GPU. Compiled only in CUDA builds.
// Thread-safety: its executor's thread only (the Executor serialises calls).
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_WORLD_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_WORLD_HPP_

#include <memory>
#include <utility>
#include <vector>

#include "executor/cuda/context_memory.hpp"
#include "executor/cuda/gpu_memory.hpp"
#include "executor/cuda/gpu_topology.hpp"
#include "executor/cuda/launch_config.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"

namespace mscclpp::exec {

// The device's limits (cudaGetDeviceProperties); throws Error(CudaError) naming the device.
GpuDeviceLimits queryDeviceLimits(int device);

class GpuWorld {
 public:
  // Throws Error(NotSupported) when the communicator has no CUDA device.
  explicit GpuWorld(std::shared_ptr<Communicator> comm);

  Communicator& comm() { return *comm_; }
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  int device() const { return device_; }
  const GpuDeviceLimits& limits() const { return limits_; }

  // Collective on the first call (every rank's identity), then cached.
  const GpuTopology& topology();
  bool hasTopology() const { return hasTopology_; }

  // The namespace of the directory exchanges, and the next one's tag.
  // Every rank builds in the same order, so the k-th build uses tag k.
  Bootstrap& exchange() { return *exchange_; }
  int nextTag() { return static_cast<int>(builds_++ & 0x3fffffff); }
  // Collective: returns once every rank has reached its build `tag`, so has
  // issued all its calls before it. Throws naming the rank that did not come.
  void awaitBuild(int tag, const std::string& who);
  // This rank's context memory (page-table changes only at quiet points).
  ContextMemory& memory() { return *memory_; }

  // Whether ranks of other processes on this GPU run under MPS (MSCCLPP_GPU_MPS).
  bool mpsActive() const { return mps_; }
  // Hardware queues per GPU: CUDA_DEVICE_MAX_CONNECTIONS, default 8, at most 32.
  int hardwareQueues() const { return hardwareQueues_; }

  // The stream this rank's proxies copy on, created once and shared by its
  // contexts. Streams take hardware queues round-robin as they are made, so
  // a stream per context would land rebuilt contexts' copies behind
  // spinning kernels.
  cudaStream_t proxyStream();

  // The kernels this rank's cached contexts may still run when a new call
  // starts: the residency check counts them with the new one. Every rank
  // caches the same plans, so every rank counts alike. Keyed by context.
  void recordLoad(const void* owner, const ResidentLoad& load);
  void updateLoad(const void* owner, const ResidentLoad& load);  // only when recorded
  void forgetLoad(const void* owner);
  std::vector<ResidentLoad> loadsExcept(const void* owner) const;

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Bootstrap> exchange_;
  std::shared_ptr<Bootstrap> buildBarrier_;  // awaitBuild's messages
  std::shared_ptr<void> failureHook_;        // aborts both when the communicator fails
  int device_ = -1;
  GpuDeviceLimits limits_;
  GpuTopology topology_;
  bool hasTopology_ = false;
  uint64_t builds_ = 0;
  bool mps_ = false;
  int hardwareQueues_ = 8;
  std::unique_ptr<OwnedStream> proxyStream_;
  std::vector<std::pair<const void*, ResidentLoad>> loads_;
  std::unique_ptr<ContextMemory> memory_;  // last: freed first, while the communicator still exists
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_WORLD_HPP_
