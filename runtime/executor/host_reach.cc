#include "executor/host_reach.hpp"

#include "core/format.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp::exec {

Refusal loadStoreAcrossHosts(const plan::Plan& p, const Communicator& comm, const char* backend) {
  auto other = [&](int a, int b) { return comm.hostIdOf(a) != comm.hostIdOf(b); };
  auto refusal = [&](const std::string& what, int a, int b) -> Refusal {
    return strFormat(
        "plan %s (%s) on the %s backend: %s of rank %d to rank %d: rank %d is on another host (%s; rank %d is on "
        "%s); across hosts plans must use port channels (memory and switch channels need the peer's memory mapped)",
        p.header.name.c_str(), p.header.source.c_str(), backend, what.c_str(), a, b, b, comm.hostIdOf(b).c_str(), a,
        comm.hostIdOf(a).c_str());
  };
  for (const plan::RankPlan& rp : p.ranks) {
    const int a = rp.rank;
    for (size_t c = 0; c < rp.memoryChannels.size(); ++c)
      if (other(a, rp.memoryChannels[c].peer))
        return refusal(strFormat("memory channel %zu", c), a, rp.memoryChannels[c].peer);
    for (size_t c = 0; c < rp.switchChannels.size(); ++c)
      for (int m : rp.switchChannels[c].ranks)
        if (other(a, m)) return refusal(strFormat("switch channel %zu (a member)", c), a, m);
    for (size_t k = 0; k < rp.remoteBuffers.size(); ++k) {
      const plan::RemoteBufferDecl& d = rp.remoteBuffers[k];
      if (d.viaMemory && other(a, d.rank))
        return refusal(
            strFormat("remote buffer %zu (%s, accessed by memory channels)", k, plan::bufferTypeName(d.type)), a,
            d.rank);
    }
  }
  return std::nullopt;
}

}  // namespace mscclpp::exec
