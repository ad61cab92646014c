#include "plan/verify/symbolic.hpp"

#include <algorithm>

#include "core/format.hpp"
#include "plan/verify/buffer_state.hpp"
#include "plan/verify/collective_spec.hpp"

namespace mscclpp::plan::verify {
namespace {

bool isRead(Access a) { return !isWrite(a); }

const char* accessVerb(Access a) {
  switch (a) {
    case Access::Read:
      return "reads";
    case Access::PktRead:
      return "reads LL packets from";
    case Access::RawPktRead:
      return "forwards the LL packet bytes of";
    case Access::Write:
      return "writes";
    case Access::PktWrite:
      return "writes LL packets to";
  }
  return "?";
}

class Executor {
 public:
  Executor(const Graph& g, const Schedule& s, HappensBefore* hb, TermTable* terms, FindingSink* sink,
           std::vector<std::pair<uint32_t, uint32_t>>* flows)
      : g_(g), s_(s), hb_(hb), terms_(terms), sink_(sink), flows_(flows) {
    const size_t n = g.plan->ranks.size();
    content_.resize(n * kPhysBuffers);
    packets_.resize(n);
    history_.resize(n * kPhysBuffers);
    // A plan reducing only with min or max serves only those,
    // which ignore repeats.
    const uint32_t idempotent =
        (1u << static_cast<unsigned>(PlanReduceOp::Min)) | (1u << static_cast<unsigned>(PlanReduceOp::Max)) | 1u;
    setSemantics_ = g.plan->header.reduceOps != 0 && (g.plan->header.reduceOps & ~idempotent) == 0;
  }

  uint64_t run();

 private:
  ContentMap& content(uint32_t rank, uint8_t phys) { return content_[rank * kPhysBuffers + phys]; }
  AccessMap& history(uint32_t rank, uint8_t phys) { return history_[rank * kPhysBuffers + phys]; }
  void record(uint32_t event, const AccessLoc& a);
  void record(uint32_t event, uint32_t rank, uint8_t phys, uint64_t begin, uint64_t end, Access access, bool packet);
  void check(const PastAccess& earlier, uint32_t event, Access access, uint32_t rank, uint8_t phys, bool packet,
             uint64_t begin, uint64_t end);
  void reportTwice(uint32_t earlier, uint32_t event, uint32_t rank, uint64_t begin, uint64_t end);
  std::string syncHint(uint32_t event, bool after) const;
  // This call's packet writes already holding what the new write writes:
  // writing the same packets twice is harmless.
  void sameWriters(const AccessLoc& a, uint64_t len, std::vector<uint32_t>* same);
  void readLoc(uint32_t event, const AccessLoc& a, uint64_t len, std::vector<Piece>* out);
  void writeLoc(uint32_t event, const AccessLoc& a, uint64_t len, const std::vector<Piece>& pieces, bool forwarded);
  void runMove(uint32_t event, const Move& m);
  void selfConflicts(uint32_t event);
  bool sameSource(uint32_t moveA, uint32_t moveB) const;
  void hostIn(uint32_t event);
  void hostOut(uint32_t event);

  const Graph& g_;
  const Schedule& s_;
  HappensBefore* hb_;
  TermTable* terms_;
  FindingSink* sink_;
  std::vector<std::pair<uint32_t, uint32_t>>* flows_;
  bool setSemantics_ = false;
  std::vector<ContentMap> content_;
  std::vector<ContentMap> packets_;  // per rank, keyed by half the packets' scratch offset
  std::vector<AccessMap> history_;
  uint64_t accesses_ = 0;
  std::vector<std::vector<Piece>> srcPieces_;
  std::vector<Piece> result_;
  std::vector<uint32_t> sameWriters_;  // for the packet write being recorded
};

void Executor::reportTwice(uint32_t earlier, uint32_t event, uint32_t rank, uint64_t begin, uint64_t end) {
  const Place place = describePlace(*g_.plan, g_.layout, rank, kScratchBuffer, true, begin, end);
  Finding f;
  f.kind = FindingKind::Race;
  f.at = g_.site(event);
  f.other = g_.site(earlier);
  f.buffer = place.buffer;
  f.chunks = place.chunks;
  f.call = g_.events[event].call;
  f.message = strFormat(
      "writes LL packets to %s %s that %s also writes in the same call with other data: both carry "
      "the call's flag, so a reader may see either",
      place.buffer.c_str(), place.chunks.c_str(), describeSite(f.other).c_str());
  sink_->add("pktww " + siteKey(f.at) + " " + siteKey(f.other), f);
}

void Executor::sameWriters(const AccessLoc& a, uint64_t len, std::vector<uint32_t>* same) {
  same->clear();
  std::vector<Piece> old;
  const uint64_t key = a.loc.off / 2;
  packets_[a.loc.rank].read(key, key + len, &old);
  std::vector<uint32_t> differ;
  size_t j = 0;
  for (const Piece& p : old) {
    if (p.writer == kNone) continue;
    bool equal = true;
    for (; j < result_.size() && result_[j].end <= p.begin; ++j) {
    }
    for (size_t k = j; k < result_.size() && result_[k].begin < p.end; ++k)
      if (result_[k].value != p.value) equal = false;
    (equal ? *same : differ).push_back(p.writer);
  }
  // A writer equal somewhere but different elsewhere is not harmless.
  for (uint32_t d : differ) same->erase(std::remove(same->begin(), same->end(), d), same->end());
}

void Executor::check(const PastAccess& earlier, uint32_t event, Access access, uint32_t rank, uint8_t phys, bool packet,
                     uint64_t begin, uint64_t end) {
  if (isRead(earlier.access) && isRead(access)) return;
  const Event& A = g_.events[earlier.event];
  const Event& B = g_.events[event];
  bool strong = true;
  if (isRead(earlier.access)) {
    strong = false;
  } else if (earlier.access == Access::PktWrite) {
    // A packet read waits for its own call's
    // flag and reads only that call's writes.
    // The order of another call's writes is their own concern.
    if (access == Access::PktRead) return;
    if (access == Access::PktWrite && A.call == B.call) {
      // Both carry this call's flag: a reader takes whichever it sees,
      // so they must write the same.
      if (std::find(sameWriters_.begin(), sameWriters_.end(), earlier.event) == sameWriters_.end())
        reportTwice(earlier.event, event, rank, begin, end);
      return;
    }
    strong = access != Access::PktWrite;
  }
  if (hb_->ordered(earlier.event, event, strong)) return;
  const bool execOnly = strong && hb_->ordered(earlier.event, event, false);
  const Place place = describePlace(*g_.plan, g_.layout, rank, phys, packet, begin, end);
  Finding f;
  f.kind = FindingKind::Race;
  f.at = g_.site(event);
  f.other = g_.site(earlier.event);
  f.buffer = place.buffer;
  f.chunks = place.chunks;
  f.call = B.call;
  const std::string a = describeSite(f.other), b = describeSite(f.at);
  std::string when;
  if (A.call != B.call) {
    when = strFormat(" (consecutive calls: this op in call %d, the other in call %d", B.call, A.call);
    if (phys == kScratchBuffer && g_.plan->header.useDoubleScratchBuffer && B.call - A.call == 2)
      when += "; double scratch alternates halves, so every second call reuses this half";
    when += ")";
  }
  std::string why;
  if (execOnly) {
    why =
        "only execution order (a relaxed signal/wait or an LL packet) lies between them, which does not make the "
        "write visible: a release signal and an acquire wait (or a barrier) are needed";
  } else if (A.block == B.block && A.block != kNone && A.call == B.call) {
    why = "they run on different threads of one threadblock with no block-wide barrier (nop) between them";
  } else {
    why = "no signal/wait, barrier or semaphore orders them";
  }
  why += syncHint(earlier.event, true) + syncHint(event, false);
  f.message = strFormat("%s %s %s, which %s %s, but %s%s", accessVerb(access), place.buffer.c_str(),
                        place.chunks.c_str(), a.c_str(), accessVerb(earlier.access), why.c_str(), when.c_str());
  sink_->add(
      strFormat("race %s %s %d%s", siteKey(f.at).c_str(), siteKey(f.other).c_str(), phys, A.call != B.call ? " x" : ""),
      f);
}

// A likely cause to name: an op all threads run,
// next to a signal or wait with no block-wide barrier between.
// A signal after it releases one thread only;
// a wait before it covers one thread only.
std::string Executor::syncHint(uint32_t event, bool after) const {
  const Event& e = g_.events[event];
  if (e.block == kNone || e.pos == kNone || e.thread != kAllThreads) return "";
  const uint32_t n = static_cast<uint32_t>(g_.events.size());
  for (uint32_t i = event; after ? i + 1 < n : i > 0;) {
    i = after ? i + 1 : i - 1;
    const Event& x = g_.events[i];
    if (x.pos == kNone) continue;  // the proxy's work, not the block's
    if (x.block != e.block || x.call != e.call || x.syncPoint) return "";
    const bool releases = x.kind == EvKind::Signal || x.kind == EvKind::SemRelease || x.kind == EvKind::Push;
    const bool acquires = x.kind == EvKind::Wait || x.kind == EvKind::SemAcquire;
    if (after ? releases : acquires) {
      const OpSite s = g_.site(i);
      return after ? strFormat(
                         "; op %d (%s) follows op %d in its threadblock with no nop between, so it releases "
                         "only its own thread's part",
                         s.op, s.name.c_str(), static_cast<int>(e.op))
                   : strFormat(
                         "; op %d (%s) precedes op %d in its threadblock with no nop between, so only its own "
                         "thread waited",
                         s.op, s.name.c_str(), static_cast<int>(e.op));
    }
  }
  return "";
}

void Executor::record(uint32_t event, uint32_t rank, uint8_t phys, uint64_t begin, uint64_t end, Access access,
                      bool packet) {
  ++accesses_;
  history(rank, phys).access(begin, end, event, access, [&](const PastAccess& earlier, uint64_t b, uint64_t e) {
    check(earlier, event, access, rank, phys, packet, b, e);
  });
}

void Executor::record(uint32_t event, const AccessLoc& a) {
  record(event, a.loc.rank, a.loc.phys, a.loc.off, a.loc.off + a.loc.physLen(), a.access, a.loc.packet);
}

void Executor::readLoc(uint32_t event, const AccessLoc& a, uint64_t len, std::vector<Piece>* out) {
  if (!a.loc.packet) {
    content(a.loc.rank, a.loc.phys).read(a.loc.off, a.loc.off + len, out);
    return;
  }
  const uint64_t key = a.loc.off / 2;
  packets_[a.loc.rank].read(key, key + len, out);
  if (a.access == Access::PktRead) {
    const uint8_t call = g_.events[event].call;
    for (Piece& p : *out)
      if (p.call != call) p.value = Value();  // the read never accepts another call's packets
  }
}

void Executor::writeLoc(uint32_t event, const AccessLoc& a, uint64_t len, const std::vector<Piece>& pieces,
                        bool forwarded) {
  const uint8_t call = g_.events[event].call;
  std::vector<Piece> tagged = pieces;
  for (Piece& p : tagged) {
    p.writer = event;
    if (!forwarded) p.call = call;
  }
  if (!a.loc.packet) {
    content(a.loc.rank, a.loc.phys).write(a.loc.off, a.loc.off + len, tagged);
    if (a.loc.phys == kScratchBuffer) packets_[a.loc.rank].erase(a.loc.off / 2, (a.loc.off + len + 1) / 2);
    return;
  }
  const uint64_t key = a.loc.off / 2;
  packets_[a.loc.rank].write(key, key + len, tagged);
  content(a.loc.rank, a.loc.phys).erase(a.loc.off, a.loc.off + 2 * len);
}

void Executor::runMove(uint32_t event, const Move& m) {
  const AccessLoc* locs = &g_.locs[m.locBegin];
  if (srcPieces_.size() < m.nSrc) srcPieces_.resize(m.nSrc);
  const Event& e = g_.events[event];
  for (uint32_t k = 0; k < m.nSrc; ++k) {
    record(event, locs[k]);
    readLoc(event, locs[k], m.len, &srcPieces_[k]);
    if (flows_ != nullptr && e.call == 0)
      for (const Piece& p : srcPieces_[k])
        if (p.writer != kNone && g_.events[p.writer].tb >= 0 && g_.events[p.writer].rank != e.rank)
          flows_->push_back({p.writer, event});
  }
  if (m.nDst == 0) return;
  result_.clear();
  if (!m.reduce || m.nSrc == 1) {
    result_ = srcPieces_[0];
  } else {
    // Cut [0, len) at every source's boundaries and reduce each piece.
    std::vector<uint64_t> cuts;
    for (uint32_t k = 0; k < m.nSrc; ++k)
      for (const Piece& p : srcPieces_[k]) cuts.push_back(p.end);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<size_t> at(m.nSrc, 0);
    std::vector<Value> vals(m.nSrc);
    uint64_t begin = 0;
    for (uint64_t cut : cuts) {
      for (uint32_t k = 0; k < m.nSrc; ++k) {
        while (srcPieces_[k][at[k]].end <= begin) ++at[k];
        vals[k] = srcPieces_[k][at[k]].value;
      }
      result_.push_back({begin, cut, terms_->reduce(vals.data(), vals.size()), kNone, 0});
      begin = cut;
    }
  }
  const bool forwarded = locs[0].access == Access::RawPktRead;
  for (uint32_t d = 0; d < m.nDst; ++d) {
    const AccessLoc& a = locs[m.nSrc + d];
    if (a.access == Access::PktWrite) sameWriters(a, m.len, &sameWriters_);
    record(event, a);
    sameWriters_.clear();
    writeLoc(event, a, m.len, result_, forwarded);
  }
}

// Whether two copy moves of one op read the same source bytes,
// so write the same data.
bool Executor::sameSource(uint32_t a, uint32_t b) const {
  const Move& x = g_.moves[a];
  const Move& y = g_.moves[b];
  if (x.reduce || y.reduce || x.nSrc != 1 || y.nSrc != 1 || x.len != y.len) return a == b;
  const Loc& s = g_.locs[x.locBegin].loc;
  const Loc& t = g_.locs[y.locBegin].loc;
  return s.rank == t.rank && s.phys == t.phys && s.off == t.off && s.packet == t.packet;
}

// Accesses of one op to overlapping bytes from different threads.
// A write and a read of one byte are fine only
// at the same position of the op's range: one thread reads it,
// then writes it.
void Executor::selfConflicts(uint32_t event) {
  const Event& e = g_.events[event];
  struct Span {
    uint32_t rank;
    uint8_t phys;
    uint64_t begin, end;
    bool write;
    uint32_t move;
    const AccessLoc* loc;
  };
  std::vector<Span> spans;
  bool anyWrite = false;
  for (uint32_t mi = e.moveBegin; mi < e.moveBegin + e.moveCount; ++mi) {
    const Move& m = g_.moves[mi];
    for (uint32_t l = m.locBegin; l < m.locBegin + m.nSrc + m.nDst; ++l) {
      const AccessLoc& a = g_.locs[l];
      const bool w = isWrite(a.access);
      anyWrite |= w;
      spans.push_back({a.loc.rank, a.loc.phys, a.loc.off, a.loc.off + a.loc.physLen(), w, mi, &a});
    }
  }
  if (!anyWrite || spans.size() < 2) return;
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) {
    return x.rank != y.rank ? x.rank < y.rank : x.phys != y.phys ? x.phys < y.phys : x.begin < y.begin;
  });
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      const Span& x = spans[i];
      const Span& y = spans[j];
      if (y.rank != x.rank || y.phys != x.phys || y.begin >= x.end) break;
      if (!x.write && !y.write) continue;
      // Same position of the same move: each thread reads its elements,
      // then writes them.
      if (x.move == y.move && x.begin == y.begin && x.loc->loc.packet == y.loc->loc.packet &&
          (x.write != y.write || x.end == y.end))
        continue;
      // Bytes written twice with the same data,
      // two copies of one source, are harmless.
      if (x.write && y.write && x.begin == y.begin && x.end == y.end && sameSource(x.move, y.move)) continue;
      const Place place =
          describePlace(*g_.plan, g_.layout, x.rank, x.phys, x.loc->loc.packet, y.begin, std::min(x.end, y.end));
      Finding f;
      f.kind = FindingKind::Race;
      f.at = g_.site(event);
      f.buffer = place.buffer;
      f.chunks = place.chunks;
      f.call = e.call;
      auto role = [](const AccessLoc* l) { return strFormat("%s[%u]", l->src ? "src_buff" : "dst_buff", l->refPos); };
      f.message = strFormat(
          "%s and %s of this op overlap at %s %s at different element positions: the threads "
          "of the block %s them in no defined order",
          role(x.loc).c_str(), role(y.loc).c_str(), place.buffer.c_str(), place.chunks.c_str(),
          x.write && y.write ? "write" : "read and write");
      sink_->add("self " + siteKey(f.at), f);
      return;
    }
  }
}

void Executor::hostIn(uint32_t event) {
  const Event& e = g_.events[event];
  const Plan& plan = *g_.plan;
  const RankLayout& R = g_.layout.ranks[e.rank];
  const bool scatterNonRoot =
      plan.header.collective == Collective::Scatter && static_cast<int>(e.rank) != plan.header.root;
  // The output holds nothing defined; the input holds the rank's input,
  // its part of the data buffer when in place.
  std::vector<Piece> undefined;
  if (R.outputPhys != R.inputPhys || R.outputBase != R.inputBase || R.outputBytes != R.inputBytes) {
    const uint64_t ob = R.outputBase, oe = R.outputBase + R.outputBytes;
    undefined = {{0, oe - ob, Value(), event, e.call}};
    record(event, e.rank, R.outputPhys, ob, oe, Access::Write, false);
    content(e.rank, R.outputPhys).write(ob, oe, undefined);
  }
  const uint64_t ib = R.inputBase, ie = R.inputBase + R.inputBytes;
  const Value in = scatterNonRoot ? Value() : terms_->input(e.rank, 0);
  record(event, e.rank, R.inputPhys, ib, ie, Access::Write, false);
  content(e.rank, R.inputPhys).write(ib, ie, {{0, ie - ib, in, event, e.call}});
}

void Executor::hostOut(uint32_t event) {
  const Event& e = g_.events[event];
  const Plan& plan = *g_.plan;
  const RankLayout& R = g_.layout.ranks[e.rank];
  const bool defined = hasDefinition(plan.header.collective);
  Expectation x = expectedOutput(plan, g_.layout, e.rank, terms_);
  if (defined && !x.checked) return;  // this rank's output is not part of the result
  const uint64_t ob = R.outputBase, oe = R.outputBase + R.outputBytes;
  record(event, e.rank, R.outputPhys, ob, oe, Access::Read, false);
  if (!defined) return;
  std::vector<Piece> have;
  content(e.rank, R.outputPhys).read(ob, oe, &have);
  for (Piece& p : have) p.value = p.value.moved(-static_cast<int64_t>(ob)), p.begin += ob, p.end += ob;
  if (x.anyOneRank && !have.empty() && have[0].value.defined()) {
    const auto& c = terms_->contributions(have[0].value.term);
    if (c.size() == 1) {
      const Value want = terms_->input(c[0].rank, -static_cast<int64_t>(ob));
      if (plan.header.worldSize == 1 || c[0].rank != e.rank) x.pieces = {{ob, oe, want}};
    }
  }
  if (x.anyOneRank && x.pieces.empty())
    x.pieces = {{ob, oe, terms_->input((e.rank + 1) % plan.header.worldSize, -static_cast<int64_t>(ob))}};
  // Compare piece by piece.
  uint64_t wrongBytes = 0;
  const Piece* firstWrong = nullptr;
  Value firstWant;
  uint64_t firstBegin = 0, firstEnd = 0;
  size_t hi = 0;
  for (const ExpectedPiece& want : x.pieces) {
    for (; hi < have.size() && have[hi].begin < want.end; ++hi) {
      const Piece& p = have[hi];
      if (p.end <= want.begin) continue;
      Value got = p.value, exp = want.value;
      if (setSemantics_) got = terms_->distinct(got), exp = terms_->distinct(exp);
      const uint64_t b = std::max(p.begin, want.begin), en = std::min(p.end, want.end);
      if (got != exp) {
        wrongBytes += en - b;
        if (!firstWrong) firstWrong = &p, firstWant = want.value, firstBegin = b, firstEnd = en;
      }
      if (p.end > want.end) break;  // the piece continues into the next expected piece
    }
  }
  if (!firstWrong) return;
  const Place place = describePlace(plan, g_.layout, e.rank, R.outputPhys, false, firstBegin, firstEnd);
  Finding f;
  f.kind = FindingKind::WrongResult;
  f.at = firstWrong->writer != kNone ? g_.site(firstWrong->writer) : g_.site(event);
  f.buffer = place.buffer;
  f.chunks = place.chunks;
  f.call = e.call;
  const uint64_t chunk = g_.layout.chunk;
  f.message =
      strFormat("after call %d, %s %s holds %s, but %s needs %s there (%llu wrong byte(s) on this rank%s)", e.call,
                place.buffer.c_str(), place.chunks.c_str(),
                terms_->describe(firstWrong->value, firstBegin, chunk).c_str(), collectiveName(plan.header.collective),
                x.anyOneRank ? "one other rank's whole input" : terms_->describe(firstWant, firstBegin, chunk).c_str(),
                static_cast<unsigned long long>(wrongBytes),
                firstWrong->writer != kNone ? "; the op named last wrote it" : "; no op wrote it");
  sink_->add(strFormat("wrong r%u", e.rank), f);
}

uint64_t Executor::run() {
  for (uint32_t event : s_.order) {
    const Event& e = g_.events[event];
    switch (e.kind) {
      case EvKind::HostIn:
        hostIn(event);
        continue;
      case EvKind::HostOut:
        hostOut(event);
        continue;
      default:
        break;
    }
    if (e.moveCount == 0) continue;
    for (uint32_t mi = e.moveBegin; mi < e.moveBegin + e.moveCount; ++mi) runMove(event, g_.moves[mi]);
    selfConflicts(event);
  }
  return accesses_;
}

}  // namespace

uint64_t runSymbolic(const Graph& g, const Schedule& s, HappensBefore* hb, TermTable* terms, FindingSink* sink,
                     std::vector<std::pair<uint32_t, uint32_t>>* dataFlows) {
  Executor x(g, s, hb, terms, sink, dataFlows);
  return x.run();
}

}  // namespace mscclpp::plan::verify
