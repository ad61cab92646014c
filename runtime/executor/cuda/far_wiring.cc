#include "executor/cuda/far_wiring.hpp"

#include <utility>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp::exec {
namespace {

// Tag bits of the exchanges for ranks on other hosts: the transport kind on
// the executor's bootstrap view, and the connections on the communicator
// (the CPU backend's use 1 << 30).
constexpr int kFarKindTagBit = 1 << 29;
constexpr int kFarConnectionTagBit = 1 << 29;

}  // namespace

// The hardware-queue check counts one stream more for such a rank's group.
bool hasFarPorts(const plan::Plan& p, const GpuTopology& topo, int rank) {
  if (rank < 0 || rank >= static_cast<int>(p.ranks.size())) return false;
  for (const plan::ChannelDecl& c : p.ranks[static_cast<size_t>(rank)].portChannels)
    if (c.peer < topo.size() && topo.of(rank).hostHash != topo.of(c.peer).hostHash) return true;
  return false;
}

// Registrations, the kind agreement and the connects come before the
// directories: a directory carries the registrations, and the connects are
// posted before them and read after, when every peer posted its end.
FarWiring::FarWiring(std::string name, Communicator& comm, Bootstrap& bs, const GpuTopology& topo, int rank,
                     const std::vector<plan::ChannelDecl>& portChannels, const std::vector<MemoryRange>& reaches,
                     int tag)
    : name_(std::move(name)), comm_(comm), topo_(topo), rank_(rank), serialized_(reaches.size()) {
  for (int q = 0; q < topo.size(); ++q) farPeers_ |= q != rank_ && !topo.sameHost(q);
  for (const plan::ChannelDecl& c : portChannels)
    if (!topo.sameHost(c.peer)) portPeers_.insert(c.peer);
  if (!farPeers_) return;
  std::string why;
  Transport myIb = portPeers_.empty() ? Transport::Unknown : comm.nearestIbTransport(&why);
  if (myIb != Transport::Unknown) {
    // Device memory the HCA cannot register (no GPUDirect RDMA on this
    // host, memory it cannot pin) is a fact of this rank alone: it falls
    // back to TCP and says so in the kind it sends, instead of failing
    // before its peers hear from it.
    try {
      for (size_t i = 0; i < reaches.size(); ++i)
        regs_.push_back(comm.registerMemory(reaches[i].ptr, reaches[i].bytes, TransportFlags(Transport::Tcp) | myIb));
    } catch (const Error& e) {
      why = strFormat("registering device memory for %s: %s", transportName(myIb), e.what());
      regs_.clear();
      myIb = Transport::Unknown;
    }
  }
  if (!portPeers_.empty() && myIb == Transport::Unknown)
    MSCCLPP_INFO(LogExec, "%s (host %s): no InfiniBand for port channels across hosts (%s); they use TCP",
                 name_.c_str(), comm.hostId().c_str(), why.c_str());
  if (regs_.empty()) {
    for (size_t i = 0; i < reaches.size(); ++i)
      regs_.push_back(comm.registerMemory(reaches[i].ptr, reaches[i].bytes, Transport::Tcp));
  }
  for (size_t i = 0; i < reaches.size(); ++i) serialized_[i] = regs_[i].serialize();
  // Both ends of a pair pick the same kind: IB when both have a port, else TCP.
  for (int q : portPeers_) {
    const uint64_t v = static_cast<uint64_t>(myIb);
    bs.send(&v, sizeof(v), q, tag | kFarKindTagBit);
  }
  for (int q : portPeers_) {
    uint64_t v = 0;
    bs.recv(&v, sizeof(v), q, tag | kFarKindTagBit);
    const Transport theirs = static_cast<Transport>(v);
    MSCCLPP_ENFORCE(theirs == Transport::Unknown || isIbTransport(theirs), ErrorCode::RemoteError,
                    "%s: rank %d's HCA port %llu is not IB0..IB7", name_.c_str(), q, ull(v));
    kinds_[q] = myIb != Transport::Unknown && theirs != Transport::Unknown ? myIb : Transport::Tcp;
  }
  for (int q : portPeers_) pending_[q] = comm.connect(q, tag | kFarConnectionTagBit, kinds_[q]);
}

// The proxy writes through the connection from our registrations into the
// peer's, and raises the peer's counter there: each channel gets its
// connection and the peer's counter, each proxy memory id its registration.
std::unique_ptr<FarPorts> FarWiring::connect(const plan::RankPlan& rp, const std::array<BufferRef, 3>& mine,
                                             const std::vector<const FarPeer*>& peers) {
  if (portPeers_.empty()) return nullptr;
  auto far = std::make_unique<FarPorts>(name_, rp.portChannels.size());
  std::map<int, int> connectionOf;
  for (auto& [q, future] : pending_) {
    std::shared_ptr<Connection> connection;
    try {
      connection = future.get();
    } catch (const Error& e) {
      throw Error(e.code(), strFormat("%s: connecting to rank %d (host %s) over %s for its port channels: %s",
                                      name_.c_str(), q, comm_.hostIdOf(q).c_str(), transportName(kinds_[q]), e.what()));
    }
    connectionOf[q] = far->addConnection(std::move(connection));
  }
  for (size_t c = 0; c < rp.portChannels.size(); ++c) {
    const plan::ChannelDecl& d = rp.portChannels[c];
    if (topo_.sameHost(d.peer)) continue;
    const FarPeer& p = *peers.at(static_cast<size_t>(d.peer));
    auto it = p.counterOffsets.find(FarPeer::CounterKey{rank_, d.pairIndex, true});
    MSCCLPP_ENFORCE(it != p.counterOffsets.end() && !p.regions.empty(), ErrorCode::RemoteError,
                    "%s: rank %d has no port channel paired with this rank's channel %d", name_.c_str(), d.peer,
                    d.pairIndex);
    FarPorts::Channel& ch = far->channel(static_cast<uint32_t>(c));
    ch.peer = d.peer;
    ch.peerHost = comm_.hostIdOf(d.peer);
    ch.connection = connectionOf.at(d.peer);
    ch.peerRegion = p.regions[0];
    ch.peerCounterOffset = it->second;
  }
  // Proxy memory ids: our input, output and scratch, then the remote buffers.
  std::vector<FarPorts::Memory>& mem = far->memories();
  for (const BufferRef& b : mine) {
    FarPorts::Memory m;
    m.owner = rank_;
    if (b.reach != kNoReach) m.region = regs_.at(b.reach), m.offset = b.offset;
    mem.push_back(m);
  }
  for (const plan::RemoteBufferDecl& d : rp.remoteBuffers) {
    FarPorts::Memory m;
    m.owner = d.rank;
    if (!topo_.sameHost(d.rank)) {
      const FarPeer& p = *peers.at(static_cast<size_t>(d.rank));
      const BufferRef& b = d.type == plan::BufferType::Input    ? p.input
                           : d.type == plan::BufferType::Output ? p.output
                                                                : p.scratch;
      if (b.reach != kNoReach && b.reach < p.regions.size()) m.region = p.regions[b.reach], m.offset = b.offset;
    }
    mem.push_back(m);
  }
  std::string list;
  for (int q : portPeers_) list += strFormat("%s%d over %s", list.empty() ? "" : ", ", q, transportName(kinds_[q]));
  MSCCLPP_INFO(LogExec, "%s (host %s): port channels to rank(s) on other hosts: %s", name_.c_str(),
               comm_.hostId().c_str(), list.c_str());
  return far;
}

}  // namespace mscclpp::exec
