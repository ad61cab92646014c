#include "plan_agreement.hpp"

#include <vector>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"
#include "core/logger.hpp"
#include "core/serial.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp::shim {

namespace {

constexpr uint32_t kAgreementMagic = 0x41475245;  // "AGRE"
constexpr size_t kSlotBytes = 1024;               // one rank's part of the all-gather
constexpr size_t kMaxName = 200;
constexpr size_t kMaxWhy = 700;
constexpr size_t kMaxDecisions = 4096;  // per communicator; every rank drops alike
constexpr int kRanksListed = 8;

struct Sent {
  CallShape shape;
  bool hasPlan = false;
  bool native = false;  // a native algorithm, not a DSL plan
  uint64_t fingerprint = 0;
  std::string name;
  std::string why;
};

std::string describeShape(const CallShape& s) {
  const CollKind kind = static_cast<CollKind>(s.kind);
  std::string out =
      strFormat("%s of %llu x %s", collPlanName(kind), static_cast<unsigned long long>(s.count), dtypeName(s.dtype));
  if (s.op >= 0) out += strFormat(", %s", redOpName(s.op));
  if (s.root >= 0) out += strFormat(", root %d", s.root);
  return out;
}

bool sameShape(const CallShape& a, const CallShape& b) {
  return a.kind == b.kind && a.count == b.count && a.dtype == b.dtype && a.op == b.op && a.root == b.root;
}

// A rank that chose a plan sends only what its
// selection skipped: a broken plan and its JSON
// path. Every rank's WARN then names the plan a peer
// found broken, whatever that peer chose after it.
std::string describeChoice(const Sent& s) {
  if (!s.hasPlan) return "no plan (" + s.why + ")";
  return (s.native ? "native algorithm " : "plan ") + s.name + s.why;
}

std::string sentReason(const LocalChoice& mine) {
  if (!mine.plan) return mine.why.substr(0, kMaxWhy);
  const size_t skipped = mine.why.find("; skipped plan ");
  return skipped == std::string::npos ? std::string() : mine.why.substr(skipped, kMaxWhy);
}

}  // namespace

CallShape shapeOf(const CollCall& call, bool inPlace) {
  CallShape s;
  s.kind = static_cast<int>(call.kind);
  s.count = call.count;
  s.dtype = call.dtype;
  // A user op's handle is local to its rank: each
  // rank creates its own. All are the same PreMulSum
  // to plans, so the shape names them alike.
  s.op =
      !isReduction(call.kind) ? -1 : (call.op < static_cast<int>(ncclNumOps) ? call.op : static_cast<int>(ncclNumOps));
  // A two-rank exchange's root is the peer, which differs
  // between the two ranks, so it is not part of the shape.
  s.root = hasRoot(call.kind) ? call.root : -1;
  s.inPlace = inPlace;
  return s;
}

size_t PlanAgreement::ShapeHash::operator()(const CallShape& s) const {
  uint64_t h = mix64(static_cast<uint64_t>(s.kind), s.count);
  h = mix64(h, (static_cast<uint64_t>(static_cast<uint32_t>(s.dtype)) << 32) | static_cast<uint32_t>(s.op));
  return static_cast<size_t>(mix64(h, (static_cast<uint64_t>(static_cast<uint32_t>(s.root)) << 1) | s.inPlace));
}

PlanAgreement::PlanAgreement(std::shared_ptr<Bootstrap> control, int rank, int nRanks)
    : control_(std::move(control)), rank_(rank), nRanks_(nRanks) {}

bool PlanAgreement::cached(const CallShape& shape, uint64_t generation, PlanChoice* choice, std::string* why) {
  if (generation != generation_) {
    decisions_.clear();
    generation_ = generation;
    return false;
  }
  auto it = decisions_.find(shape);
  if (it == decisions_.end()) return false;
  *choice = it->second.plan;
  if (why) *why = it->second.why;
  return true;
}

PlanChoice PlanAgreement::agree(const CallShape& shape, uint64_t generation, const LocalChoice& mine,
                                std::string* why) {
  std::vector<char> all(kSlotBytes * static_cast<size_t>(nRanks_), 0);
  {
    ByteWriter w;
    w.put<uint32_t>(kAgreementMagic);
    w.put<int32_t>(shape.kind);
    w.put<uint64_t>(shape.count);
    w.put<int32_t>(shape.dtype);
    w.put<int32_t>(shape.op);
    w.put<int32_t>(shape.root);
    w.put<uint8_t>(mine.plan ? 1 : 0);
    w.put<uint8_t>(mine.plan && std::string(mine.plan.kind) != "plan" ? 1 : 0);
    w.put<uint64_t>(mine.fingerprint);
    w.putString(std::string(mine.plan ? mine.plan.name : "").substr(0, kMaxName));
    w.putString(sentReason(mine));
    MSCCLPP_ENFORCE(w.bytes().size() <= kSlotBytes, ErrorCode::InternalError, "plan agreement: %zu-byte slot",
                    w.bytes().size());
    std::copy(w.bytes().begin(), w.bytes().end(), all.begin() + kSlotBytes * static_cast<size_t>(rank_));
  }
  control_->allGather(all.data(), kSlotBytes);
  std::vector<Sent> sent(static_cast<size_t>(nRanks_));
  for (int r = 0; r < nRanks_; ++r) {
    std::vector<char> slot(all.begin() + kSlotBytes * r, all.begin() + kSlotBytes * (r + 1));
    ByteReader rd(slot, "plan agreement");
    Sent& s = sent[r];
    MSCCLPP_ENFORCE(rd.get<uint32_t>("magic") == kAgreementMagic, ErrorCode::RemoteError,
                    "plan agreement: rank %d sent something else", r);
    s.shape.kind = rd.get<int32_t>("kind");
    s.shape.count = rd.get<uint64_t>("count");
    s.shape.dtype = rd.get<int32_t>("dtype");
    s.shape.op = rd.get<int32_t>("op");
    s.shape.root = rd.get<int32_t>("root");
    s.hasPlan = rd.get<uint8_t>("hasPlan") != 0;
    s.native = rd.get<uint8_t>("native") != 0;
    s.fingerprint = rd.get<uint64_t>("fingerprint");
    s.name = rd.getString("name", kMaxName);
    s.why = rd.getString("why", kMaxWhy);
  }
  // Every rank sees every shape: all refuse
  // a mismatch, naming the same calls.
  for (int r = 0; r < nRanks_; ++r) {
    MSCCLPP_ENFORCE(
        sameShape(sent[r].shape, shape), ErrorCode::InvalidUsage,
        "mismatched calls: rank %d called %s but rank %d called %s (every rank must make the same collective "
        "calls, with the same counts, datatype, reduce op and root, in the same order)",
        rank_, describeShape(shape).c_str(), r, describeShape(sent[r].shape).c_str());
  }
  bool same = true;
  for (int r = 0; r < nRanks_; ++r) {
    same = same && sent[r].hasPlan == sent[rank_].hasPlan &&
           (!sent[r].hasPlan || (sent[r].native == sent[rank_].native && sent[r].name == sent[rank_].name &&
                                 sent[r].fingerprint == sent[rank_].fingerprint));
  }
  Decision d;
  if (same) {
    d.plan = mine.plan;
    d.why = mine.why;
  } else {
    std::string list;
    for (int r = 0; r < nRanks_ && r < kRanksListed; ++r)
      list += strFormat("%srank %d: %s", r ? "; " : "", r, describeChoice(sent[r]).c_str());
    if (nRanks_ > kRanksListed) list += strFormat("; and %d more ranks", nRanks_ - kRanksListed);
    d.why = strFormat("the ranks chose differently for %s, so every rank runs it on NCCL: %s",
                      describeShape(shape).c_str(), list.c_str());
    MSCCLPP_WARN(LogShim, "rank %d: %s", rank_, d.why.c_str());
  }
  if (decisions_.size() >= kMaxDecisions) decisions_.clear();
  generation_ = generation;
  decisions_[shape] = d;
  if (why) *why = d.why;
  return d.plan;
}

}  // namespace mscclpp::shim
