#include "alltoallv_group.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"
#include "core/logger.hpp"
#include "core/serial.hpp"
#include "plan/registry.hpp"

namespace mscclpp::shim {

namespace {

// Bootstrap tags of the two rounds, apart from the shim's other messages.
constexpr int kCountsTag = 0x4132 << 8;             // round 1: a rank's counts to each peer of its calls
constexpr int kVerdictTag = 0x4133 << 8;            // round 2: the leader's decision to every other rank
constexpr uint32_t kGroupCountsMagic = 0x41325641;  // "A2VA"

// Round 1: what a rank tells each peer of its calls.
struct Told {
  bool candidate = false;
  bool talksToAll = false;
  int32_t dtype = -1;
  uint64_t planSet = 0;   // digest of the rank's alltoallv plans (allToAllVPlanSet)
  bool selector = false;  // a user selector may choose otherwise
  std::vector<uint64_t> send, recv;
};

// Round 2: what the leader decided.
enum class Verdict : uint32_t { Plan, Nccl, Mismatch };
enum class NcclBecause : uint32_t { NotCandidate, Datatype, PlanSets, NoPlan };

struct Decided {
  Verdict verdict = Verdict::Nccl;
  NcclBecause because = NcclBecause::NoPlan;
  int32_t rank = -1, peer = -1;  // Nccl: the rank it is about; Mismatch: receiver and sender
  uint64_t sends = 0, receives = 0;
  std::vector<uint64_t> counts;  // n x n when Plan
};

std::vector<char> encodeTold(const Told& t, int n) {
  ByteWriter w;
  w.put<uint32_t>(kGroupCountsMagic);
  w.put<uint8_t>(t.candidate);
  w.put<uint8_t>(t.talksToAll);
  w.put<uint8_t>(t.selector);
  w.put<int32_t>(t.dtype);
  w.put<uint64_t>(t.planSet);
  for (int i = 0; i < n; ++i) w.put<uint64_t>(t.send[i]);
  for (int i = 0; i < n; ++i) w.put<uint64_t>(t.recv[i]);
  return std::move(w.bytes());
}

Told decodeTold(const std::vector<char>& bytes, int n, int peer) {
  const std::string what = strFormat("rank %d's all-to-all-v counts", peer);
  ByteReader r(bytes, what.c_str());
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kGroupCountsMagic, ErrorCode::RemoteError,
                  "rank %d sent something else than its all-to-all-v counts", peer);
  Told t;
  t.candidate = r.get<uint8_t>("candidate") != 0;
  t.talksToAll = r.get<uint8_t>("talksToAll") != 0;
  t.selector = r.get<uint8_t>("selector") != 0;
  t.dtype = r.get<int32_t>("dtype");
  t.planSet = r.get<uint64_t>("planSet");
  t.send.resize(n);
  t.recv.resize(n);
  for (int i = 0; i < n; ++i) t.send[i] = r.get<uint64_t>("send");
  for (int i = 0; i < n; ++i) t.recv[i] = r.get<uint64_t>("recv");
  return t;
}

std::vector<char> encodeDecided(const Decided& d, int n) {
  ByteWriter w;
  w.put<uint32_t>(kGroupCountsMagic);
  w.put<uint32_t>(static_cast<uint32_t>(d.verdict));
  w.put<uint32_t>(static_cast<uint32_t>(d.because));
  w.put<int32_t>(d.rank);
  w.put<int32_t>(d.peer);
  w.put<uint64_t>(d.sends);
  w.put<uint64_t>(d.receives);
  for (size_t i = 0; i < static_cast<size_t>(n) * n; ++i) w.put<uint64_t>(d.verdict == Verdict::Plan ? d.counts[i] : 0);
  return std::move(w.bytes());
}

Decided decodeDecided(const std::vector<char>& bytes, int n, int leader) {
  const std::string what = strFormat("rank %d's all-to-all-v decision", leader);
  ByteReader r(bytes, what.c_str());
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kGroupCountsMagic, ErrorCode::RemoteError,
                  "rank %d sent something else than its all-to-all-v decision", leader);
  Decided d;
  const uint32_t verdict = r.get<uint32_t>("verdict"), because = r.get<uint32_t>("because");
  MSCCLPP_ENFORCE(
      verdict <= static_cast<uint32_t>(Verdict::Mismatch) && because <= static_cast<uint32_t>(NcclBecause::NoPlan),
      ErrorCode::RemoteError, "rank %d sent an all-to-all-v decision this rank cannot read", leader);
  d.verdict = static_cast<Verdict>(verdict);
  d.because = static_cast<NcclBecause>(because);
  d.rank = r.get<int32_t>("rank");
  d.peer = r.get<int32_t>("peer");
  d.sends = r.get<uint64_t>("sends");
  d.receives = r.get<uint64_t>("receives");
  d.counts.resize(static_cast<size_t>(n) * n);
  for (uint64_t& c : d.counts) c = r.get<uint64_t>("counts");
  return d;
}

std::string mismatchText(int receiver, int sender, uint64_t receives, uint64_t sends, int dtype) {
  return strFormat(
      "mismatched grouped send/recv: rank %d receives %llu x %s from rank %d, but rank %d sends it %llu x %s (NCCL "
      "would hang or copy short)",
      receiver, static_cast<unsigned long long>(receives), dtypeName(dtype), sender, sender,
      static_cast<unsigned long long>(sends), dtypeName(dtype));
}

// The digest of this process's alltoallv plans for n ranks, as selection
// reads them; ranks with equal digests and no user selector choose alike.
struct PlanSetCache {
  std::mutex mutex;
  uint64_t generation = UINT64_MAX;
  int nRanks = -1;
  uint64_t digest = 0;
  bool any = false;
};

uint64_t allToAllVPlanSet(int n, bool* any) {
  static PlanSetCache cache;
  plan::Registry& registry = plan::Registry::instance();
  const uint64_t generation = registry.generation();
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.generation == generation && cache.nRanks == n) {
    *any = cache.any;
    return cache.digest;
  }
  uint64_t digest = 0x5bd1e995;
  bool found = false;
  const size_t count = registry.count();
  for (size_t i = 0; i < count; ++i) {
    mscclppPlanInfo info{};
    if (!registry.info(i, &info) || info.worldSize != n || std::strcmp(info.collective, "alltoallv") != 0) continue;
    found = true;
    digest = mix64(digest, hashString(info.name));
    digest = mix64(digest, info.minMessageBytes);
    digest = mix64(digest, info.maxMessageBytes);
    for (int t = 0; t < info.nTags; ++t) digest = mix64(digest, hashString(info.tags[t]));
  }
  cache.generation = generation;
  cache.nRanks = n;
  cache.digest = digest;
  cache.any = found;
  *any = found;
  return digest;
}

// The leader's decision from every rank's counts.
Decided decide(const std::vector<Told>& all, int n, RankLink& link, PlanChoice* plan, std::string* why) {
  Decided d;
  for (int r = 0; r < n; ++r) {
    if (!all[r].candidate) {
      d.because = NcclBecause::NotCandidate;
      d.rank = r;
      return d;
    }
    if (all[r].dtype != all[0].dtype) {
      d.because = NcclBecause::Datatype;
      d.rank = r;
      return d;
    }
  }
  for (int s = 0; s < n; ++s)
    for (int t = 0; t < n; ++t)
      if (all[s].send[t] != all[t].recv[s]) {
        d.verdict = Verdict::Mismatch;
        d.rank = t;
        d.peer = s;
        d.sends = all[s].send[t];
        d.receives = all[t].recv[s];
        return d;
      }
  for (int r = 0; r < n; ++r)
    if (all[r].planSet != all[0].planSet || all[r].selector) {
      d.because = NcclBecause::PlanSets;
      d.rank = r;
      return d;
    }
  d.counts.resize(static_cast<size_t>(n) * n);
  for (int s = 0; s < n; ++s)
    for (int t = 0; t < n; ++t) d.counts[static_cast<size_t>(s) * n + t] = all[s].send[t];
  *plan = link.selectAllToAllVPlan(d.counts, all[0].dtype, why);
  if (!*plan) {
    d.because = NcclBecause::NoPlan;
    return d;
  }
  d.verdict = Verdict::Plan;
  return d;
}

std::string ncclReason(const Decided& d) {
  switch (d.because) {
    case NcclBecause::NotCandidate:
      return strFormat("rank %d's grouped sends and receives do not form an all-to-all(v)", d.rank);
    case NcclBecause::Datatype:
      return strFormat("rank %d's grouped sends and receives use another datatype than rank 0's", d.rank);
    case NcclBecause::PlanSets:
      return strFormat(
          "rank %d's alltoallv plans differ from rank 0's, or a plan selector is installed, so the ranks might choose "
          "different plans",
          d.rank);
    case NcclBecause::NoPlan:
      break;
  }
  return "no alltoallv plan serves these counts";
}

}  // namespace

AllToAllVGroup readAllToAllVGroup(const std::vector<const CollCall*>& p2p, int rank, int n) {
  AllToAllVGroup g;
  g.sendCounts.assign(n, 0);
  g.recvCounts.assign(n, 0);
  std::vector<const CollCall*> sends(n, nullptr), recvs(n, nullptr);
  std::vector<bool> talks(n, false);
  auto fail = [&](std::string why) {
    g.candidate = false;
    g.why = std::move(why);
    return g;
  };
  g.candidate = true;
  for (const CollCall* c : p2p) {
    std::vector<const CollCall*>& slot = c->kind == CollKind::Send ? sends : recvs;
    if (slot[c->root] != nullptr)
      return fail(strFormat("two %ss with rank %d", c->kind == CollKind::Send ? "send" : "receive", c->root));
    slot[c->root] = c;
    talks[c->root] = true;
    if (g.dtype < 0) {
      g.dtype = c->dtype;
      g.stream = c->stream;
    }
    if (c->dtype != g.dtype) return fail("calls of two datatypes");
    if (c->stream != g.stream) return fail("calls on two streams");
  }
  g.talksToAll = true;
  for (int p = 0; p < n; ++p) {
    if (p != rank && talks[p]) g.peers.push_back(p);
    if (p != rank && !talks[p]) g.talksToAll = false;
  }
  // Segments lie one after the other in peer order, from one base per side.
  const uint64_t elem = dtypeSize(g.dtype);
  uint64_t sendAt = 0, recvAt = 0;
  for (int p = 0; p < n; ++p) {
    if (const CollCall* s = sends[p]) {
      g.sendCounts[p] = s->count;
      if (s->count > 0) {
        const char* base = static_cast<const char*>(s->sendbuff) - sendAt * elem;
        if (g.sendBase == nullptr) g.sendBase = base;
        if (base != g.sendBase) return fail(strFormat("the send to rank %d does not follow the one before", p));
      }
      sendAt += s->count;
    }
    if (const CollCall* r = recvs[p]) {
      g.recvCounts[p] = r->count;
      if (r->count > 0) {
        char* base = static_cast<char*>(r->recvbuff) - recvAt * elem;
        if (g.recvBase == nullptr) g.recvBase = base;
        if (base != g.recvBase) return fail(strFormat("the receive from rank %d does not follow the one before", p));
      }
      recvAt += r->count;
    }
  }
  return g;
}

bool allToAllVPlansRegistered(int nRanks) {
  bool any = false;
  (void)allToAllVPlanSet(nRanks, &any);
  return any;
}

AllToAllVDecision decideAllToAllV(RankLink& link, const AllToAllVGroup& mine) {
  const int n = link.nRanks(), me = link.rank();
  Told told;
  told.candidate = mine.candidate;
  told.talksToAll = mine.talksToAll;
  told.dtype = mine.dtype;
  bool any = false;
  told.planSet = allToAllVPlanSet(n, &any);
  told.selector = plan::Registry::instance().hasSelector();
  told.send = mine.sendCounts;
  told.recv = mine.recvCounts;
  AllToAllVDecision out;
  // A rank's calls with itself match or not on its own.
  if (mine.candidate && mine.sendCounts[me] != mine.recvCounts[me])
    throw Error(ErrorCode::InvalidUsage, mismatchText(me, me, mine.recvCounts[me], mine.sendCounts[me], mine.dtype));

  // Round 1, with the peers of this rank's calls only: they are in this group too.
  const std::vector<char> bytes = encodeTold(told, n);
  for (int p : mine.peers) link.send(p, kCountsTag, bytes.data(), bytes.size());
  std::vector<Told> all(n);
  std::vector<bool> heard(n, false);
  all[me] = told;
  heard[me] = true;
  std::vector<char> in(bytes.size());
  for (int p : mine.peers) {
    link.recv(p, kCountsTag, in.data(), in.size());
    all[p] = decodeTold(in, n, p);
    heard[p] = true;
  }
  int leader = -1;
  for (int r = 0; r < n && leader < 0; ++r)
    if (heard[r] && all[r].talksToAll) leader = r;
  if (leader < 0) {
    // No rank has calls with every peer: no rank knows the whole matrix,
    // so these calls are no all-to-all and NCCL runs them. A mismatch with
    // a peer is still this rank's and the peer's error.
    for (int p : mine.peers) {
      if (all[p].send[me] != told.recv[p])
        throw Error(ErrorCode::InvalidUsage, mismatchText(me, p, told.recv[p], all[p].send[me], mine.dtype));
      if (told.send[p] != all[p].recv[me])
        throw Error(ErrorCode::InvalidUsage, mismatchText(p, me, all[p].recv[me], told.send[p], mine.dtype));
    }
    out.why = "no rank has sends or receives with every other rank";
    return out;
  }
  Decided d;
  if (leader == me) {
    d = decide(all, n, link, &out.plan, &out.why);
    const std::vector<char> verdict = encodeDecided(d, n);
    for (int r = 0; r < n; ++r)
      if (r != me) link.send(r, kVerdictTag, verdict.data(), verdict.size());
  } else {
    std::vector<char> verdict(encodeDecided(Decided(), n).size());
    link.recv(leader, kVerdictTag, verdict.data(), verdict.size());
    d = decodeDecided(verdict, n, leader);
    if (d.verdict == Verdict::Plan) {
      // The same plan set, the same counts: this rank's own choice is the leader's.
      out.plan = link.selectAllToAllVPlan(d.counts, mine.dtype, &out.why);
      MSCCLPP_ENFORCE(out.plan, ErrorCode::InternalError,
                      "rank %d chose an alltoallv plan for these grouped calls, this rank none: %s", leader,
                      out.why.c_str());
    }
  }
  if (d.verdict == Verdict::Mismatch)
    throw Error(ErrorCode::InvalidUsage, mismatchText(d.rank, d.peer, d.receives, d.sends, mine.dtype));
  if (d.verdict == Verdict::Nccl) {
    if (d.because != NcclBecause::NoPlan || out.why.empty()) out.why = ncclReason(d);
    if (d.because == NcclBecause::NotCandidate && d.rank == me) out.why += ": " + mine.why;
    return out;
  }
  out.onPlan = true;
  out.counts = std::move(d.counts);
  return out;
}

}  // namespace mscclpp::shim
