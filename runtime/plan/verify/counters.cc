// Which signal a wait is sure to have seen, and counts left over at the end of a call.
// A consumer X, at least the m-th of its counter, completes after m - init producers.
// A producer S surely precedes X when fewer than m - init producers
// can complete without S, namely those not ordered after S.
// The order used never overstates, so every edge added holds in every schedule.
// docs/plan-verifier.md, "The model", has the details.
#include <algorithm>
#include <set>

#include "core/format.hpp"
#include "plan/verify/event_graph.hpp"

namespace mscclpp::plan::verify {
namespace {

const char* channelWord(CounterKind k) { return k == CounterKind::Memory ? "memory" : "port"; }

// Findings for a counter whose producers
// and consumers do not balance in a call.
void reportCounts(Graph* g, size_t c, const std::vector<uint32_t>& P, const std::vector<uint32_t>& C,
                  FindingSink* sink) {
  const Counter& k = g->counters[c];
  if (P.empty() && C.empty()) return;
  // Counts of the first call; every call runs the same ops.
  size_t p0 = 0, q0 = 0;
  for (uint32_t i : P) p0 += g->events[g->producers[i].event].call == 0;
  for (uint32_t i : C) q0 += g->events[g->consumers[i].event].call == 0;
  if (p0 == q0) return;
  // The first call's last producer names a surplus best,
  // its last consumer a shortfall.
  uint32_t lastProducer = kNone;
  for (uint32_t i : P)
    if (g->events[g->producers[i].event].call == 0) lastProducer = g->producers[i].event;
  const OpSite prodSite = lastProducer == kNone ? OpSite() : g->site(lastProducer);
  uint32_t lastConsumer = kNone;
  for (uint32_t i : C)
    if (g->events[g->consumers[i].event].call == 0) lastConsumer = g->consumers[i].event;
  const OpSite consSite = lastConsumer == kNone ? OpSite() : g->site(lastConsumer);
  Finding f;
  f.call = 0;
  if (k.kind != CounterKind::Semaphore) {
    const std::string peerChannel = k.peerChannel >= 0 ? std::to_string(k.peerChannel) : std::string("?");
    if (p0 > q0) {
      f.kind = FindingKind::Leftover;
      f.at = prodSite;
      f.other = consSite;
      f.message = strFormat(
          "rank %d signals its %s channel %s (paired with rank %u's channel %u) %zu time(s) per call but rank %u "
          "waits on it %zu time(s): %zu signal(s) are left over at the end of every call, so the next call's waits "
          "on that channel return early, before the data they wait for",
          k.peer, channelWord(k.kind), peerChannel.c_str(), k.rank, k.index, p0, k.rank, q0, p0 - q0);
    } else {
      f.kind = FindingKind::Deadlock;
      f.at = consSite;
      f.other = prodSite;
      g->shortCounters[c] = 1;
      f.message = strFormat(
          "rank %u waits %zu time(s) per call on its %s channel %u (to rank %d) but rank %d signals the paired "
          "channel %s only %zu time(s): wait #%zu can never complete",
          k.rank, q0, channelWord(k.kind), k.index, k.peer, k.peer, peerChannel.c_str(), p0, p0 + 1);
    }
    sink->add(strFormat("count %s r%u c%u", channelWord(k.kind), k.rank, k.index), f);
    return;
  }
  f.at = q0 > p0 ? consSite : prodSite;
  f.other = q0 > p0 ? prodSite : consSite;
  if (q0 > k.init + p0) {
    f.kind = FindingKind::Deadlock;
    g->shortCounters[c] = 1;
    f.message = strFormat(
        "rank %u acquires semaphore %u %zu time(s) per call but it starts at %u and is released "
        "only %zu time(s): acquire #%zu can never complete",
        k.rank, k.index, q0, k.init, p0, static_cast<size_t>(k.init) + p0 + 1);
  } else {
    f.kind = FindingKind::Leftover;
    f.message = strFormat(
        "rank %u releases semaphore %u %zu time(s) per call and acquires it %zu time(s): its count "
        "%s by %zu every call (it starts at %u), so a later call %s",
        k.rank, k.index, p0, q0, p0 > q0 ? "grows" : "shrinks", p0 > q0 ? p0 - q0 : q0 - p0, k.init,
        p0 > q0 ? "acquires units meant for no one and runs ahead of its data" : "runs out of units and hangs");
  }
  sink->add(strFormat("count sem r%u s%u", k.rank, k.index), f);
}

// Reachability in execution order over the edges so far, within one call.
// It tells whether one producer or consumer
// must complete before another's block runs it,
// for instance through a barrier.
class Reach {
 public:
  explicit Reach(const Graph& g) : g_(g) {
    const size_t n = g.events.size();
    begin_.assign(n + 1, 0);
    for (const Edge& e : g.edges) ++begin_[e.from + 1];
    for (size_t i = 0; i < n; ++i) begin_[i + 1] += begin_[i];
    next_.resize(g.edges.size());
    std::vector<uint32_t> at(begin_.begin(), begin_.end() - 1);
    for (const Edge& e : g.edges) next_[at[e.from]++] = e.to;
    stamp_.assign(n, 0);
  }
  // Which targets, events of from's call, run after from in every schedule.
  std::vector<uint8_t> after(uint32_t from, const std::vector<uint32_t>& targets) {
    std::vector<uint8_t> hit(targets.size(), 0);
    if (++value_ == 0) {
      std::fill(stamp_.begin(), stamp_.end(), 0);
      value_ = 1;
    }
    const uint8_t call = g_.events[from].call;
    std::vector<uint32_t> stack{from};
    stamp_[from] = value_;
    size_t found = 0;
    while (!stack.empty() && found < targets.size()) {
      const uint32_t x = stack.back();
      stack.pop_back();
      for (uint32_t k = begin_[x]; k < begin_[x + 1]; ++k) {
        const uint32_t y = next_[k];
        if (stamp_[y] == value_ || g_.events[y].call != call) continue;
        stamp_[y] = value_;
        for (size_t t = 0; t < targets.size(); ++t)
          if (targets[t] == y && !hit[t]) hit[t] = 1, ++found;
        stack.push_back(y);
      }
    }
    return hit;
  }

 private:
  const Graph& g_;
  std::vector<uint32_t> begin_, next_, stamp_;
  uint32_t value_ = 0;
};

// Whether b runs after a in every schedule:
// by program order and kernel boundaries,
// or by reach when they share a call but not a block.
struct OrderOf {
  const Graph* g;
  Reach* reach;
  std::vector<std::vector<uint8_t>>* memo;  // per element of list: the elements after it
  const std::vector<uint32_t>* list;        // anchor events of one counter's producers or consumers
  bool operator()(size_t i, size_t j) {
    const Event& a = g->events[(*list)[i]];
    const Event& b = g->events[(*list)[j]];
    if (b.call != a.call) return b.call > a.call;
    if (programOrdered(a, b)) return true;
    if (a.block == b.block) return false;
    auto& row = (*memo)[i];
    if (row.empty()) row = reach->after((*list)[i], *list);
    return row[j] != 0;
  }
};

}  // namespace

void addCounterEdges(Graph* g, FindingSink* sink) {
  const size_t nc = g->counters.size();
  g->shortCounters.assign(nc, 0);
  std::vector<std::vector<uint32_t>> prod(nc), cons(nc);
  for (uint32_t i = 0; i < g->producers.size(); ++i)
    if (g->producers[i].counter != kNone) prod[g->producers[i].counter].push_back(i);
  for (uint32_t i = 0; i < g->consumers.size(); ++i) cons[g->consumers[i].counter].push_back(i);
  auto anchorId = [&](uint32_t ev) { return g->events[ev].anchor != kNone ? g->events[ev].anchor : ev; };
  for (size_t c = 0; c < nc; ++c) reportCounts(g, c, prod[c], cons[c], sink);
  // Edges of other counters and barriers can prove more edges:
  // repeat until none is new.
  std::set<std::pair<uint32_t, uint32_t>> have;
  for (int round = 0; round < 8; ++round) {
    Reach reach(*g);
    std::vector<Edge> added;
    for (size_t c = 0; c < nc; ++c) {
      const Counter& k = g->counters[c];
      const auto& P = prod[c];
      const auto& C = cons[c];
      if (P.empty() || C.empty()) continue;
      std::vector<uint32_t> pEv, cEv;
      for (uint32_t i : P) pEv.push_back(anchorId(g->producers[i].event));
      for (uint32_t i : C) cEv.push_back(g->consumers[i].event);
      std::vector<std::vector<uint8_t>> pMemo(P.size()), cMemo(C.size());
      OrderOf pAfter{g, &reach, &pMemo, &pEv}, cAfter{g, &reach, &cMemo, &cEv};
      // Producers that can complete while producer i has not:
      // those not ordered after it.
      std::vector<size_t> notAfter(P.size());
      for (size_t i = 0; i < P.size(); ++i) {
        size_t after = 0;
        for (size_t j = 0; j < P.size(); ++j)
          if (j != i && pAfter(i, j)) ++after;
        notAfter[i] = P.size() - 1 - after;
      }
      for (size_t ci = 0; ci < C.size(); ++ci) {
        const CounterUse& x = g->consumers[C[ci]];
        // x is at least the m-th consumer to complete.
        size_t m = 1;
        for (size_t cj = 0; cj < C.size(); ++cj)
          if (cj != ci && cEv[cj] != cEv[ci] && cAfter(cj, ci)) ++m;
        if (m <= k.init) continue;
        const size_t need = m - k.init;
        std::vector<size_t> guaranteed;
        for (size_t i = 0; i < P.size(); ++i)
          if (notAfter[i] < need) guaranteed.push_back(i);
        // Keep the latest guaranteed producers, as the others precede them.
        // Releasing ones are kept apart:
        // a release sequence continues through later relaxed increments.
        for (int strongPass = 1; strongPass >= 0; --strongPass) {
          std::vector<size_t> set;
          for (size_t i : guaranteed)
            if (!strongPass || !g->producers[P[i]].relaxed) set.push_back(i);
          for (size_t i : set) {
            bool dominated = false;
            for (size_t j : set)
              if (j != i && pAfter(i, j)) dominated = true;
            if (dominated) continue;
            const bool releases = !g->producers[P[i]].relaxed;
            if (!strongPass && releases && !x.relaxed) continue;  // already added as strong
            const uint32_t from = g->producers[P[i]].event;
            if (have.insert({from, x.event}).second)
              added.push_back({from, x.event, strongPass && releases && !x.relaxed});
          }
        }
      }
    }
    if (added.empty()) break;
    for (const Edge& e : added) g->addEdge(e.from, e.to, e.strong);
  }
}

}  // namespace mscclpp::plan::verify
