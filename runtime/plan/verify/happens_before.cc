#include "plan/verify/happens_before.hpp"

#include <algorithm>

namespace mscclpp::plan::verify {
namespace {

bool isHost(EvKind k) { return k == EvKind::HostIn || k == EvKind::HostOut; }

}  // namespace

HappensBefore::HappensBefore(const Graph& g, const Schedule& s, bool strictBoundaries)
    : g_(g), s_(s), nRanks_(g.plan->ranks.size()), strict_(strictBoundaries) {
  const size_t n = g.events.size();
  endStrong_.assign(n * nRanks_, kNoCall);
  endAny_.assign(n * nRanks_, kNoCall);
  startAny_.assign(n * nRanks_, 0);
  for (size_t i = s.order.size(); i-- > 0;) {
    const uint32_t e = s.order[i];
    uint8_t* es = &endStrong_[static_cast<size_t>(e) * nRanks_];
    uint8_t* ea = &endAny_[static_cast<size_t>(e) * nRanks_];
    const Event& ev = g.events[e];
    if (ev.kind == EvKind::KernelEnd) es[ev.rank] = ea[ev.rank] = ev.call;
    for (uint32_t k = g.succBegin[e]; k < g.succBegin[e + 1]; ++k) {
      const uint32_t m = g.succ[k];
      if (s.index[m] == kNone) continue;
      const uint8_t* ms = &endStrong_[static_cast<size_t>(m) * nRanks_];
      const uint8_t* ma = &endAny_[static_cast<size_t>(m) * nRanks_];
      for (size_t r = 0; r < nRanks_; ++r) ea[r] = std::min(ea[r], ma[r]);
      if (g.succStrong[k])
        for (size_t r = 0; r < nRanks_; ++r) es[r] = std::min(es[r], ms[r]);
    }
  }
  for (uint32_t e : s.order) {
    uint8_t* sa = &startAny_[static_cast<size_t>(e) * nRanks_];
    const Event& ev = g.events[e];
    if (ev.kind == EvKind::KernelStart) sa[ev.rank] = static_cast<uint8_t>(ev.call + 1);
    for (uint32_t k = g.predBegin[e]; k < g.predBegin[e + 1]; ++k) {
      const uint32_t m = g.pred[k];
      if (s.index[m] == kNone) continue;
      const uint8_t* ma = &startAny_[static_cast<size_t>(m) * nRanks_];
      for (size_t r = 0; r < nRanks_; ++r) sa[r] = std::max(sa[r], ma[r]);
    }
  }
  stamp_.assign(n, 0);
}

bool HappensBefore::ordered(uint32_t a, uint32_t b, bool strong) {
  if (a == b) return true;
  if (s_.index[a] == kNone || s_.index[b] == kNone) return true;  // one never ran: nothing to order
  const Event& A = g_.events[a];
  const Event& B = g_.events[b];
  if (isHost(B.kind)) {
    if (isHost(A.kind) && A.rank == B.rank) return true;  // the host's own order on that rank
    // B follows the end of call `after` on its rank.
    const int after = B.kind == EvKind::HostOut ? B.call : B.call - 1;
    if (after < 0) return false;
    const uint8_t v = strong && strict_ ? endStrong(a, B.rank) : endAny(a, B.rank);
    return v != kNoCall && v <= after;
  }
  if (isHost(A.kind)) {
    // The host's access completes before call `before` launches on its rank.
    const int before = A.kind == EvKind::HostIn ? A.call : A.call + 1;
    const uint8_t v = startAny(b, A.rank);
    return v != 0 && static_cast<int>(v) - 1 >= before;
  }
  if (A.call == B.call) return intraCall(a, b, strong);
  if (A.call > B.call) return false;
  for (uint32_t r = 0; r < nRanks_; ++r) {
    const uint8_t e = strong && strict_ ? endStrong(a, r) : endAny(a, r);
    const uint8_t st = startAny(b, r);
    if (e != kNoCall && st != 0 && static_cast<int>(e) + 1 <= static_cast<int>(st) - 1) return true;
  }
  return false;
}

bool HappensBefore::intraCall(uint32_t a, uint32_t b, bool strong) {
  const Event& A = g_.events[a];
  if (programOrdered(A, g_.events[b])) return true;
  const uint64_t key = (static_cast<uint64_t>(a) << 33) | (static_cast<uint64_t>(b) << 1) | (strong ? 1 : 0);
  auto hit = cache_.find(key);
  if (hit != cache_.end()) return hit->second;
  if (++stampValue_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    stampValue_ = 1;
  }
  const uint32_t lo = s_.index[a];
  bool found = false;
  stack_.clear();
  stack_.push_back(b);
  stamp_[b] = stampValue_;
  while (!stack_.empty() && !found) {
    const uint32_t x = stack_.back();
    stack_.pop_back();
    for (uint32_t k = g_.predBegin[x]; k < g_.predBegin[x + 1]; ++k) {
      if (strong && !g_.predStrong[k]) continue;
      const uint32_t p = g_.pred[k];
      if (p == a) {
        found = true;
        break;
      }
      const uint32_t ip = s_.index[p];
      if (ip == kNone || ip < lo || stamp_[p] == stampValue_) continue;
      const Event& P = g_.events[p];
      if (P.call != A.call || isHost(P.kind) || P.kind == EvKind::KernelStart) continue;
      if (programOrdered(A, P)) {
        found = true;
        break;
      }
      stamp_[p] = stampValue_;
      stack_.push_back(p);
    }
  }
  cache_.emplace(key, found);
  return found;
}

}  // namespace mscclpp::plan::verify
