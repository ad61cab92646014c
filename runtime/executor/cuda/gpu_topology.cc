#include "executor/cuda/gpu_topology.hpp"

#include <sys/stat.h>

#include <cstring>

#include "core/enforce.hpp"

namespace mscclpp::exec {

GpuTopology::GpuTopology(int self, std::vector<GpuRankIdentity> ranks) : self_(self), ranks_(std::move(ranks)) {
  MSCCLPP_ENFORCE(self_ >= 0 && self_ < static_cast<int>(ranks_.size()), ErrorCode::InternalError,
                  "GPU topology: rank %d of %zu", self_, ranks_.size());
  for (size_t r = 0; r < ranks_.size(); ++r) {
    MSCCLPP_ENFORCE(ranks_[r].magic == kGpuIdentityMagic && ranks_[r].rank == static_cast<int32_t>(r),
                    ErrorCode::RemoteError,
                    "GPU executor: rank %zu sent an identity that is not a GPU executor's (magic 0x%llx, rank %d)", r,
                    static_cast<unsigned long long>(ranks_[r].magic), ranks_[r].rank);
  }
}

bool GpuTopology::sameHost(int rank) const { return of(rank).hostHash == of(self_).hostHash; }

bool GpuTopology::sameProcess(int rank) const {
  return sameHost(rank) && of(rank).pid == of(self_).pid && of(rank).processToken == of(self_).processToken;
}

bool GpuTopology::sameGpu(int rank) const {
  return sameHost(rank) && std::memcmp(of(rank).uuid, of(self_).uuid, sizeof(of(self_).uuid)) == 0;
}

std::vector<int> GpuTopology::coResidentRanks() const {
  std::vector<int> v;
  for (int r = 0; r < size(); ++r)
    if (sameProcess(r) && sameGpu(r)) v.push_back(r);
  return v;
}

size_t GpuTopology::coResidentCount() const {
  size_t n = 0;
  for (int r = 0; r < size(); ++r) n += sameProcess(r) && sameGpu(r) ? 1 : 0;
  return n;
}

std::vector<int> GpuTopology::residentRanks(bool mpsActive) const {
  std::vector<int> v;
  for (int r = 0; r < size(); ++r)
    if (sameGpu(r) && (mpsActive || sameProcess(r))) v.push_back(r);
  return v;
}

std::vector<std::vector<int>> GpuTopology::processGpuGroups() const {
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < size(); ++r) {
    const GpuRankIdentity& a = of(r);
    bool placed = false;
    for (std::vector<int>& g : groups) {
      const GpuRankIdentity& b = of(g.front());
      if (a.hostHash == b.hostHash && a.pid == b.pid && a.processToken == b.processToken &&
          std::memcmp(a.uuid, b.uuid, sizeof(a.uuid)) == 0) {
        g.push_back(r);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({r});
  }
  return groups;
}

std::vector<int> GpuTopology::sameGpuOtherProcesses() const {
  std::vector<int> v;
  for (int r = 0; r < size(); ++r)
    if (sameGpu(r) && !sameProcess(r)) v.push_back(r);
  return v;
}

std::vector<int> GpuTopology::otherHosts() const {
  std::vector<int> v;
  for (int r = 0; r < size(); ++r)
    if (!sameHost(r)) v.push_back(r);
  return v;
}

bool mpsDaemonVisible(const std::string& pipeDirectory) {
  if (pipeDirectory.empty()) return false;
  struct stat st {};
  return ::stat((pipeDirectory + "/control").c_str(), &st) == 0;
}

}  // namespace mscclpp::exec
