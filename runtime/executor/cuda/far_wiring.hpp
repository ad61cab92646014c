// How a GPU context reaches ranks on other hosts (docs/cuda-backend.md,
// "Port channels across hosts"): the plan checks every rank makes alike
// before any exchange, then the wiring around the directory exchange:
//   before: our reaches registered for TCP (and IB), IB or TCP agreed per
//           pair, the connects posted
//   after:  the connections, and FarPorts' channels and memory table built
//           from the peers' directories
// Ownership: the context's, for its build. Thread-safety: the build's thread.
#ifndef MSCCLPP_EXECUTOR_CUDA_FAR_WIRING_HPP_
#define MSCCLPP_EXECUTOR_CUDA_FAR_WIRING_HPP_

#include <array>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "executor/cuda/far_ports.hpp"
#include "executor/cuda/gpu_topology.hpp"
#include "mscclpp/communicator.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// Whether `rank` has a port channel to a rank on another host.
bool hasFarPorts(const plan::Plan& p, const GpuTopology& topo, int rank);

// A range of device memory that a context's directory names (a reach).
struct MemoryRange {
  char* ptr;
  uint64_t bytes;
};
// A buffer as a directory describes it: which of its owner's reaches holds
// it (kNoReach: none), where, how large.
constexpr uint64_t kNoReach = UINT64_MAX;
struct BufferRef {
  uint64_t reach = kNoReach, offset = 0, bytes = 0;
};
// What a peer's directory says for its port channels across hosts: its
// reaches' TCP/IB registrations (none mapped here), where its input, output
// and scratch lie in them, and its counters' offsets in reach 0.
struct FarPeer {
  using CounterKey = std::tuple<int, int, bool>;  // (sender, pair index, port?)
  std::vector<RegisteredMemory> regions;
  BufferRef input, output, scratch;
  std::map<CounterKey, uint64_t> counterOffsets;
};

class FarWiring {
 public:
  // Before the directories. When a peer is on another host: registers every
  // reach for TCP, and IB where this host has an HCA port; agrees on IB or
  // TCP with each port-channel peer on another host (both ends pick the
  // same); posts the connects. Nothing when every peer is on this host.
  FarWiring(std::string name, Communicator& comm, Bootstrap& bs, const GpuTopology& topo, int rank,
            const std::vector<plan::ChannelDecl>& portChannels, const std::vector<MemoryRange>& reaches, int tag);

  bool farPeers() const { return farPeers_; }  // some peer is on another host
  // Our reaches' registrations, one per reach (empty without farPeers()).
  const std::vector<RegisteredMemory>& registrations() const { return regs_; }
  const std::vector<char>& serialized(size_t reach) const { return serialized_.at(reach); }

  // After the directories: the port channels to other hosts, or null when
  // none crosses. mine: our input, output, scratch; peers: by rank, the
  // directories of those on other hosts (null for the others).
  std::unique_ptr<FarPorts> connect(const plan::RankPlan& rp, const std::array<BufferRef, 3>& mine,
                                    const std::vector<const FarPeer*>& peers);

 private:
  std::string name_;
  Communicator& comm_;
  const GpuTopology& topo_;
  int rank_;
  bool farPeers_ = false;
  std::set<int> portPeers_;  // port-channel peers on other hosts
  std::vector<RegisteredMemory> regs_;
  std::vector<std::vector<char>> serialized_;
  std::map<int, Transport> kinds_;
  std::map<int, std::shared_future<std::shared_ptr<Connection>>> pending_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_FAR_WIRING_HPP_
