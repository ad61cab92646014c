// The CPU backend's wiring over a Communicator (docs/executor.md, "The CPU
// backend"). Each rank puts its buffers and received counters in one shared
// host allocation and sends every peer its registration and offsets.
// Same-host peers map it; other hosts are reached only through port channels,
// over InfiniBand where both hosts have an HCA port, else over TCP. A plan
// that loads or stores across hosts is refused on every rank alike.
#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <set>
#include <tuple>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/serial.hpp"
#include "executor/context_image.hpp"
#include "executor/cpu/context_wiring.hpp"
#include "executor/cpu/remote_port_peers.hpp"
#include "executor/host_reach.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/memory.hpp"

namespace mscclpp::exec {
namespace {

constexpr uint64_t kMagic = 0x4d53434c45584543ull;  // "MSCLEXEC"
constexpr uint64_t kMapped = 0x4d415050ull;         // "MAPP": this rank mapped your named region
constexpr int kMappedTagBit = 0x40000000;           // directory tags stay below it
constexpr uint64_t kVersion = 3;  // 2: the building call's descriptor follows the rank; 3: the region's name flag
constexpr size_t kMaxMessage = 1 << 20;

// One rank's region as its peers see it.
struct Directory {
  uint64_t inputOff = 0, inputBytes = 0, outputOff = 0, outputBytes = 0, scratchOff = 0, scratchBytes = 0;
  // Inbound counters: (sender rank, pair index, port?) -> offset.
  std::map<std::tuple<int, int, bool>, uint64_t> counters;
};

struct Remote {
  RegisteredMemory memory;
  char* base = nullptr;
  Directory dir;
};

// The offset of `bytes` aligned at the end of *size, which it extends; an
// empty region still gets an offset of its own.
uint64_t reserveDistinct(uint64_t* size, uint64_t bytes, uint64_t align) {
  *size = (*size + align - 1) / align * align;
  uint64_t off = *size;
  *size += bytes == 0 ? 1 : bytes;
  return off;
}

void put64(std::vector<char>* out, uint64_t v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out->insert(out->end(), p, p + 8);
}

class Reader {
 public:
  Reader(const std::vector<char>& data, int peer) : data_(data), peer_(peer) {}
  uint64_t u64(const char* what) {
    MSCCLPP_ENFORCE(pos_ + 8 <= data_.size(), ErrorCode::RemoteError,
                    "executor wiring: the message from rank %d ends before its %s (%zu bytes)", peer_, what,
                    data_.size());
    uint64_t v;
    std::memcpy(&v, data_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::vector<char> bytes(uint64_t n, const char* what) {
    MSCCLPP_ENFORCE(n <= data_.size() - pos_, ErrorCode::RemoteError,
                    "executor wiring: rank %d's %s claims %llu bytes, %zu left", peer_, what,
                    static_cast<unsigned long long>(n), data_.size() - pos_);
    std::vector<char> v(data_.begin() + pos_, data_.begin() + pos_ + n);
    pos_ += (n + 7) / 8 * 8;
    return v;
  }

 private:
  const std::vector<char>& data_;
  size_t pos_ = 0;
  int peer_;
};

// base == nullptr (a peer on another host): the size only, no address.
char* bufferBase(char* base, const Directory& d, plan::BufferType t, uint64_t* bytes) {
  switch (t) {
    case plan::BufferType::Input:
      *bytes = d.inputBytes;
      return base ? base + d.inputOff : nullptr;
    case plan::BufferType::Output:
      *bytes = d.outputBytes;
      return base ? base + d.outputOff : nullptr;
    case plan::BufferType::Scratch:
      *bytes = d.scratchBytes;
      return base ? base + d.scratchOff : nullptr;
  }
  return nullptr;
}

uint64_t bufferOffset(const Directory& d, plan::BufferType t) {
  switch (t) {
    case plan::BufferType::Input:
      return d.inputOff;
    case plan::BufferType::Output:
      return d.outputOff;
    case plan::BufferType::Scratch:
      return d.scratchOff;
  }
  return 0;
}

}  // namespace

CommunicatorWiring::CommunicatorWiring(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {
  MSCCLPP_ENFORCE(comm_ != nullptr, ErrorCode::InvalidArgument, "Executor: the communicator is null");
  bootstrap_ = comm_->bootstrap()->withNamespace("mscclpp.executor");
  // An exchange waiting for a live peer has no deadline. A failed
  // communicator ends it: a dead peer, or a mismatch the monitor found.
  std::weak_ptr<Bootstrap> view = bootstrap_;
  failureHook_ = comm_->onFailure([view]() {
    if (auto b = view.lock()) b->abort();
  });
}

int CommunicatorWiring::worldSize() const { return comm_->size(); }

// Asked once per wiring; a host without an HCA says so once, at INFO.
Transport CommunicatorWiring::nearestIb() {
  if (!ibKnown_) {
    std::string why;
    ib_ = comm_->nearestIbTransport(&why);
    ibKnown_ = true;
    if (ib_ == Transport::Unknown)
      MSCCLPP_INFO(LogExec, "rank %d (host %s): no InfiniBand for port channels across hosts (%s); they use TCP",
                   comm_->rank(), comm_->hostId().c_str(), why.c_str());
  }
  return ib_;
}

Refusal CommunicatorWiring::refusal(const plan::Plan& plan) const { return loadStoreAcrossHosts(plan, *comm_, "CPU"); }

RankResources CommunicatorWiring::connect(const plan::PlanPtr& plan, int rank, const CallShape& shape,
                                          const CallDescriptor& call) {
  const plan::Plan& p = *plan;
  const int n = static_cast<int>(p.ranks.size());
  MSCCLPP_ENFORCE(n == comm_->size() && rank == comm_->rank(), ErrorCode::InvalidArgument,
                  "plan %s is written for %d ranks; the communicator has %d and this is its rank %d (asked rank %d)",
                  p.header.name.c_str(), n, comm_->size(), comm_->rank(), rank);
  const plan::RankPlan& rp = p.ranks[rank];
  if (Refusal r = refusal(p)) throw Error(ErrorCode::NotSupported, *r);
  std::set<int> crossHostPeers;  // reached only through port channels, over IB or TCP
  for (const plan::ChannelDecl& c : rp.portChannels)
    if (!comm_->isSameHost(c.peer)) crossHostPeers.insert(c.peer);
  // Our HCA port for them: the one nearest this rank, if the host has any.
  const Transport myIb = crossHostPeers.empty() ? Transport::Unknown : nearestIb();

  // Our region.
  Directory mine;
  uint64_t size = 0;
  constexpr uint64_t kPage = 4096, kLine = 64;
  if (p.header.inPlace) {
    InPlaceLayout ip = inPlaceLayout(p.header.collective, rank, shape.inputBytes, shape.outputBytes);
    uint64_t data = reserveDistinct(&size, ip.dataBytes, kPage);
    mine.inputOff = data + ip.inputOffset;
    mine.outputOff = data + ip.outputOffset;
  } else {
    mine.inputOff = reserveDistinct(&size, shape.inputBytes, kPage);
    mine.outputOff = reserveDistinct(&size, shape.outputBytes, kPage);
  }
  mine.inputBytes = shape.inputBytes;
  mine.outputBytes = shape.outputBytes;
  mine.scratchBytes = shape.scratchBytes;
  mine.scratchOff = reserveDistinct(&size, shape.scratchBytes, kPage);
  for (int port = 0; port < 2; ++port) {
    for (const plan::ChannelDecl& c : port ? rp.portChannels : rp.memoryChannels)
      mine.counters[{c.peer, c.pairIndex, port != 0}] = reserveDistinct(&size, 8, kLine);
  }
  std::shared_ptr<void> region = allocSharedHostBytes(size);  // zeroed
  char* base = static_cast<char*>(region.get());
  TransportFlags transports =
      crossHostPeers.empty() ? TransportFlags(Transport::HostShm) : Transport::HostShm | Transport::Tcp;
  if (myIb != Transport::Unknown) transports |= myIb;
  RegisteredMemory reg = comm_->registerMemory(base, size, transports);

  // Tell every other rank where things are.
  std::vector<char> msg;
  put64(&msg, kMagic);
  put64(&msg, kVersion);
  put64(&msg, static_cast<uint64_t>(rank));
  {
    ByteWriter w;
    call.write(w);
    put64(&msg, w.bytes().size());
    msg.insert(msg.end(), w.bytes().begin(), w.bytes().end());
    msg.resize((msg.size() + 7) / 8 * 8, 0);
  }
  std::vector<char> wire = reg.serialize();
  put64(&msg, wire.size());
  msg.insert(msg.end(), wire.begin(), wire.end());
  msg.resize((msg.size() + 7) / 8 * 8, 0);
  for (uint64_t v :
       {mine.inputOff, mine.inputBytes, mine.outputOff, mine.outputBytes, mine.scratchOff, mine.scratchBytes})
    put64(&msg, v);
  put64(&msg, mine.counters.size());
  for (const auto& [key, off] : mine.counters) {
    put64(&msg, static_cast<uint64_t>(std::get<0>(key)));
    put64(&msg, static_cast<uint64_t>(std::get<1>(key)));
    put64(&msg, std::get<2>(key) ? 1 : 0);
    put64(&msg, off);
  }
  // A named region (MSCCLPP_HOST_SHM=posix) asks the ranks on this host
  // to say when they mapped it: its name then goes, so that nothing is
  // left in /dev/shm should every process of the job be killed.
  const bool named = sharedHostHasName(base);
  put64(&msg, named ? 1 : 0);
  const std::shared_ptr<Bootstrap>& bs = bootstrap_;
  const int tag = static_cast<int>(sequence_++ & 0x3fffffff);
  // Each pair across hosts first tells each other its HCA port, so both ends
  // pick the same kind: IB when both have one, else TCP. On the executor's
  // view, which a failed communicator aborts, as the directories below.
  std::map<int, Transport> kinds;
  for (int q : crossHostPeers) {
    const uint64_t v = static_cast<uint64_t>(myIb);
    bs->send(&v, sizeof(v), q, tag | 0x40000000);
  }
  for (int q : crossHostPeers) {
    uint64_t v = 0;
    bs->recv(&v, sizeof(v), q, tag | 0x40000000);
    const Transport theirs = static_cast<Transport>(v);
    MSCCLPP_ENFORCE(theirs == Transport::Unknown || isIbTransport(theirs), ErrorCode::RemoteError,
                    "executor wiring: rank %d's HCA port %llu is not IB0..IB7", q, static_cast<unsigned long long>(v));
    kinds[q] = myIb != Transport::Unknown && theirs != Transport::Unknown ? myIb : Transport::Tcp;
  }
  // Connections before the directories: connect() posts our endpoint at
  // once, and the futures are read only once every directory arrived, so
  // every peer posted its endpoint before we wait for it.
  std::map<int, std::shared_future<std::shared_ptr<Connection>>> pending;
  // The high tag bit keeps the executor's connections apart from ones the user makes on this communicator.
  for (int q : crossHostPeers) pending[q] = comm_->connect(q, tag | 0x40000000, kinds[q]);
  for (int q = 0; q < n; ++q)
    if (q != rank) bs->send(msg, q, tag);

  std::vector<Remote> remotes(n);
  remotes[rank].base = base;
  remotes[rank].dir = mine;
  for (int q = 0; q < n; ++q) {
    if (q == rank) continue;
    std::vector<char> data = bs->recv(q, tag, kMaxMessage);
    Reader r(data, q);
    MSCCLPP_ENFORCE(
        r.u64("magic") == kMagic && r.u64("version") == kVersion && r.u64("rank") == static_cast<uint64_t>(q),
        ErrorCode::RemoteError, "executor wiring: rank %d sent a message that is not a version-%llu directory", q,
        static_cast<unsigned long long>(kVersion));
    {
      std::vector<char> bytes = r.bytes(r.u64("call size"), "call");
      ByteReader cr(bytes, "executor wiring: the peer's call");
      const CallDescriptor theirs = CallDescriptor::read(cr);
      // Every rank gets every peer's descriptor: all of them refuse, each naming both calls.
      MSCCLPP_ENFORCE(sameCall(call, theirs), ErrorCode::InvalidUsage,
                      "mismatched calls: rank %d called %s but rank %d called %s (every rank must make the same "
                      "collective calls, with the same counts, datatype, reduce op and root, in the same order)",
                      rank, call.describe().c_str(), q, theirs.describe().c_str());
    }
    Remote& rm = remotes[q];
    rm.memory = RegisteredMemory::deserialize(r.bytes(r.u64("registration size"), "registration"));
    rm.base = static_cast<char*>(rm.memory.data());
    MSCCLPP_ENFORCE(rm.base != nullptr || !comm_->isSameHost(q), ErrorCode::NotSupported,
                    "plan %s on the CPU backend: rank %d is on this host (%s) but its memory cannot be mapped here",
                    p.header.name.c_str(), q, comm_->hostIdOf(q).c_str());
    Directory& d = rm.dir;
    d.inputOff = r.u64("input offset"), d.inputBytes = r.u64("input size");
    d.outputOff = r.u64("output offset"), d.outputBytes = r.u64("output size");
    d.scratchOff = r.u64("scratch offset"), d.scratchBytes = r.u64("scratch size");
    const uint64_t nCounters = r.u64("counter count");
    MSCCLPP_ENFORCE(nCounters <= 1u << 20, ErrorCode::RemoteError, "executor wiring: rank %d claims %llu counters", q,
                    static_cast<unsigned long long>(nCounters));
    for (uint64_t i = 0; i < nCounters; ++i) {
      int sender = static_cast<int>(r.u64("counter sender"));
      int pair = static_cast<int>(r.u64("counter pair"));
      bool port = r.u64("counter kind") != 0;
      d.counters[{sender, pair, port}] = r.u64("counter offset");
    }
    for (uint64_t off : {d.inputOff + d.inputBytes, d.outputOff + d.outputBytes, d.scratchOff + d.scratchBytes}) {
      MSCCLPP_ENFORCE(off <= rm.memory.size(), ErrorCode::RemoteError,
                      "executor wiring: rank %d's directory points past its %zu-byte region", q, rm.memory.size());
    }
    for (const auto& [key, off] : d.counters) {
      MSCCLPP_ENFORCE(off % 8 == 0 && off + 8 <= rm.memory.size(), ErrorCode::RemoteError,
                      "executor wiring: rank %d's counter offset %llu is outside its region or unaligned", q,
                      static_cast<unsigned long long>(off));
    }
    if (r.u64("name flag") != 0 && comm_->isSameHost(q)) bs->send(&kMapped, sizeof(kMapped), q, tag | kMappedTagBit);
  }
  if (named) {
    for (int q = 0; q < n; ++q) {
      if (q == rank || !comm_->isSameHost(q)) continue;
      uint64_t mapped = 0;
      bs->recv(&mapped, sizeof(mapped), q, tag | kMappedTagBit);
    }
    unlinkSharedHostName(base);
  }

  RankResources res;
  res.input = base + mine.inputOff;
  res.output = base + mine.outputOff;
  res.scratch = base + mine.scratchOff;
  res.inputBytes = mine.inputBytes;
  res.outputBytes = mine.outputBytes;
  res.scratchBytes = mine.scratchBytes;
  for (const plan::RemoteBufferDecl& d : rp.remoteBuffers) {
    uint64_t bytes = 0;
    char* b = bufferBase(remotes[d.rank].base, remotes[d.rank].dir, d.type, &bytes);
    res.remoteBuffers.push_back({b, bytes});
  }
  auto counterOf = [&](int owner, int sender, int pair, bool port) {
    auto it = remotes[owner].dir.counters.find({sender, pair, port});
    MSCCLPP_ENFORCE(it != remotes[owner].dir.counters.end(), ErrorCode::RemoteError,
                    "plan %s: rank %d has no %s channel paired with rank %d's channel %d", p.header.name.c_str(), owner,
                    port ? "port" : "memory", sender, pair);
    return reinterpret_cast<uint64_t*>(remotes[owner].base + it->second);
  };
  for (const plan::ChannelDecl& c : rp.memoryChannels) {
    res.memoryInbound.push_back(counterOf(rank, c.peer, c.pairIndex, false));
    res.memoryOutbound.push_back(counterOf(c.peer, rank, c.pairIndex, false));
  }
  std::shared_ptr<RemotePortPeers> cross;
  if (!crossHostPeers.empty()) {
    cross = std::make_shared<RemotePortPeers>();
    cross->planName = p.header.name;
    cross->rank = rank;
    std::map<int, std::shared_ptr<Connection>> connections;
    for (auto& [q, future] : pending) connections[q] = future.get();
    cross->channels.resize(rp.portChannels.size());
    for (size_t c = 0; c < rp.portChannels.size(); ++c) {
      const plan::ChannelDecl& d = rp.portChannels[c];
      RemotePortPeers::Channel& ch = cross->channels[c];
      ch.peer = d.peer;
      if (!crossHostPeers.count(d.peer)) continue;
      ch.peerHost = comm_->hostIdOf(d.peer);
      ch.connection = connections.at(d.peer);
      ch.peerRegion = remotes[d.peer].memory;
      auto it = remotes[d.peer].dir.counters.find({rank, d.pairIndex, true});
      MSCCLPP_ENFORCE(it != remotes[d.peer].dir.counters.end(), ErrorCode::RemoteError,
                      "plan %s: rank %d has no port channel paired with rank %d's channel %d", p.header.name.c_str(),
                      d.peer, rank, d.pairIndex);
      ch.peerCounterOffset = it->second;
    }
    for (uint64_t off : {mine.inputOff, mine.outputOff, mine.scratchOff}) cross->memories.push_back({rank, reg, off});
    for (const plan::RemoteBufferDecl& d : rp.remoteBuffers)
      cross->memories.push_back({d.rank, remotes[d.rank].memory, bufferOffset(remotes[d.rank].dir, d.type)});
  }
  for (size_t c = 0; c < rp.portChannels.size(); ++c) {
    const plan::ChannelDecl& d = rp.portChannels[c];
    res.portInbound.push_back(counterOf(rank, d.peer, d.pairIndex, true));
    // Across hosts the proxy signals through the connection; the outbound word is its local source.
    res.portOutbound.push_back(cross && cross->crossesHost(static_cast<uint32_t>(c))
                                   ? &cross->channels[c].outbound
                                   : counterOf(d.peer, rank, d.pairIndex, true));
  }
  res.remotePorts = cross;
  if (cross) {
    std::string peers;
    for (int q : crossHostPeers)
      peers += strFormat("%s%d over %s", peers.empty() ? "" : ", ", q, transportName(kinds[q]));
    MSCCLPP_INFO(LogExec, "plan %s rank %d (host %s): port channels to rank(s) on other hosts: %s",
                 p.header.name.c_str(), rank, comm_->hostId().c_str(), peers.c_str());
  }
  for (const plan::SwitchChannelDecl& s : rp.switchChannels) {
    SwitchGroupResource g;
    g.bytes = UINT64_MAX;
    for (size_t i = 0; i < s.ranks.size(); ++i) {
      uint64_t bytes = 0;
      g.members.push_back(bufferBase(remotes[s.ranks[i]].base, remotes[s.ranks[i]].dir, s.bufferType, &bytes));
      g.bytes = std::min(g.bytes, bytes);
      if (s.ranks[i] == rank) g.myIndex = static_cast<uint32_t>(i);
    }
    if (s.ranks.empty()) g.bytes = 0;
    res.switchGroups.push_back(std::move(g));
  }
  // Nobody runs before every rank imported every region: a rank whose plan
  // never waits could finish, exit and free its region during an import.
  bs->barrier();
  // Keep our region, its registration and every imported mapping alive with the context.
  auto keep = std::make_shared<std::pair<std::shared_ptr<void>, std::vector<RegisteredMemory>>>();
  keep->first = region;
  keep->second.push_back(reg);
  for (auto& rm : remotes)
    if (rm.memory.valid()) keep->second.push_back(rm.memory);
  res.keepAlive = keep;
  return res;
}

}  // namespace mscclpp::exec
