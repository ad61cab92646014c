// Where the ranks of a GPU executor live: host, process and GPU of each rank,
// exchanged once per executor. From it the backend decides, with no further
// messages, which ranks share this process and GPU, which share the GPU from
// other processes, which share hardware queues, which peers get raw pointers
// or CUDA IPC handles, and which it cannot reach.
// Thread-safety: immutable after construction.
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_TOPOLOGY_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_TOPOLOGY_HPP_

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace mscclpp::exec {

// One rank's identity, exchanged as bytes (fixed layout, little-endian hosts of one job).
struct GpuRankIdentity {
  uint64_t magic;
  uint64_t hostHash;      // comm::hostIdHash of the host identity
  uint64_t processToken;  // random per process (a forked child draws a new one)
  int32_t pid;
  int32_t device;    // CUDA ordinal in its own process
  uint8_t uuid[16];  // the GPU's UUID: the same GPU seen from different processes
  int32_t rank;
  int32_t smCount;
  int32_t hardwareQueues;  // its process's CUDA_DEVICE_MAX_CONNECTIONS (the queues its GPU's streams share)
  uint32_t flags;          // kGpuCooperativeLaunch, kGpuCooperativeOff
};
static_assert(std::is_trivially_copyable<GpuRankIdentity>::value && sizeof(GpuRankIdentity) == 64,
              "exchanged as bytes");
constexpr uint64_t kGpuIdentityMagic = 0x4d53434c47505549ull;  // "MSCLGPUI"
constexpr uint32_t kGpuCooperativeLaunch = 1;                  // the device offers cooperative launches
constexpr uint32_t kGpuCooperativeOff = 2;                     // its process set MSCCLPP_GPU_COOPERATIVE=off

class GpuTopology {
 public:
  GpuTopology() = default;
  // Checks that every entry carries the magic and its own rank (throws Error(RemoteError)).
  GpuTopology(int self, std::vector<GpuRankIdentity> ranks);

  int self() const { return self_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  const GpuRankIdentity& of(int rank) const { return ranks_.at(rank); }
  bool sameHost(int rank) const;
  bool sameProcess(int rank) const;  // implies sameHost
  bool sameGpu(int rank) const;      // the same physical GPU (any process)

  // Ranks in this process on this GPU, this one included, ascending; their number (no allocation).
  std::vector<int> coResidentRanks() const;
  size_t coResidentCount() const;
  // Ranks whose kernels are resident on this GPU with ours: this process's,
  // and under MPS other processes' too. Without MPS those are time-sliced.
  std::vector<int> residentRanks(bool mpsActive) const;
  // Every group of ranks sharing one process and one GPU (each ascending; groups by first rank).
  std::vector<std::vector<int>> processGpuGroups() const;
  // Ranks on this GPU in other processes.
  std::vector<int> sameGpuOtherProcesses() const;
  // Ranks on other hosts.
  std::vector<int> otherHosts() const;

 private:
  int self_ = -1;
  std::vector<GpuRankIdentity> ranks_;
};

// Whether an MPS control daemon's "control" socket is in `pipeDirectory`.
// A heuristic: the CUDA runtime cannot be asked.
bool mpsDaemonVisible(const std::string& pipeDirectory);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_TOPOLOGY_HPP_
