#include "plan/verify/schedule.hpp"

#include <deque>

#include "core/format.hpp"

namespace mscclpp::plan::verify {
namespace {

struct Parked {
  uint32_t event;
  uint64_t claim;
};

std::string counterText(const Graph& g, uint32_t c) {
  const Counter& k = g.counters[c];
  if (k.kind == CounterKind::Semaphore) return strFormat("semaphore %u of rank %u", k.index, k.rank);
  return strFormat("%s channel %u of rank %u (signalled by rank %d)", k.kind == CounterKind::Memory ? "memory" : "port",
                   k.index, k.rank, k.peer);
}

// A cycle among the events that never ran: "A waits for B, which ...".
void reportCycle(const Graph& g, const std::vector<uint32_t>& indeg, const std::vector<uint32_t>& index,
                 FindingSink* sink) {
  const size_t n = g.events.size();
  std::vector<uint32_t> seenAt(n, kNone);
  for (uint32_t startEv = 0; startEv < n; ++startEv) {
    if (index[startEv] != kNone || indeg[startEv] == 0) continue;
    std::vector<uint32_t> path;
    uint32_t cur = startEv;
    while (cur != kNone && seenAt[cur] == kNone) {
      seenAt[cur] = static_cast<uint32_t>(path.size());
      path.push_back(cur);
      uint32_t next = kNone;
      for (uint32_t p = g.predBegin[cur]; p < g.predBegin[cur + 1]; ++p)
        if (index[g.pred[p]] == kNone) {
          next = g.pred[p];
          break;
        }
      cur = next;
    }
    if (cur == kNone || seenAt[cur] >= path.size() || path[seenAt[cur]] != cur) return;  // met an earlier walk
    // The cycle is path from seenAt[cur], walked backwards:
    // each waits for the next.
    std::string text;
    OpSite first;
    size_t steps = 0;
    for (size_t i = seenAt[cur]; i < path.size(); ++i) {
      const Event& e = g.events[path[i]];
      if (e.tb < 0 || e.op == kNone) continue;
      if (!(e.kind == EvKind::Wait || e.kind == EvKind::SemAcquire || e.kind == EvKind::BarrierArrive ||
            e.kind == EvKind::Signal || e.kind == EvKind::SemRelease || e.kind == EvKind::Push ||
            e.kind == EvKind::SignalInc || e.kind == EvKind::FlushWait))
        continue;
      const OpSite s = g.site(path[i]);
      if (!first.valid()) first = s;
      if (steps < 8) text += (steps ? " <- " : "") + describeSite(s);
      ++steps;
    }
    Finding f;
    f.kind = FindingKind::Deadlock;
    f.at = first;
    f.call = g.events[cur].call;
    f.message = "waits in a cycle (each op below can run only after the one to its right): " + text +
                (steps > 8 ? " <- ..." : "") + " <- back to the first";
    sink->add("cycle " + siteKey(first), f);
    return;
  }
}

}  // namespace

Schedule simulate(const Graph& g, FindingSink* sink) {
  const size_t n = g.events.size();
  Schedule s;
  s.index.assign(n, kNone);
  s.order.reserve(n);
  std::vector<uint32_t> indeg(n);
  for (size_t i = 0; i < n; ++i) indeg[i] = g.predBegin[i + 1] - g.predBegin[i];
  // Uses per event.
  std::vector<uint32_t> prodBegin(n + 1, 0), consBegin(n + 1, 0);
  for (const auto& u : g.producers) ++prodBegin[u.event + 1];
  for (const auto& u : g.consumers) ++consBegin[u.event + 1];
  for (size_t i = 0; i < n; ++i) {
    prodBegin[i + 1] += prodBegin[i];
    consBegin[i + 1] += consBegin[i];
  }
  std::vector<uint32_t> prodCounter(g.producers.size()), consCounter(g.consumers.size());
  {
    std::vector<uint32_t> p(prodBegin.begin(), prodBegin.end() - 1), c(consBegin.begin(), consBegin.end() - 1);
    for (const auto& u : g.producers) prodCounter[p[u.event]++] = u.counter;
    for (const auto& u : g.consumers) consCounter[c[u.event]++] = u.counter;
  }
  std::vector<uint8_t> blocked(n, 0);
  for (const auto& [ev, why] : g.blocked) blocked[ev] = 1;
  const size_t nc = g.counters.size();
  std::vector<uint64_t> value(nc, 0), claims(nc, 0);
  for (size_t c = 0; c < nc; ++c) value[c] = g.counters[c].init;
  std::vector<std::deque<Parked>> parked(nc);
  std::vector<uint32_t> unsatisfied(n, 0);
  std::vector<uint8_t> started(n, 0);
  std::deque<uint32_t> ready;
  auto start = [&](uint32_t e) {
    started[e] = 1;
    if (blocked[e]) return;
    uint32_t missing = 0;
    for (uint32_t u = consBegin[e]; u < consBegin[e + 1]; ++u) {
      const uint32_t c = consCounter[u];
      if (g.counters[c].kind == CounterKind::Semaphore) {
        if (value[c] > 0 && parked[c].empty()) {
          --value[c];
        } else {
          parked[c].push_back({e, 0});
          ++missing;
        }
      } else {
        const uint64_t claim = ++claims[c];
        if (value[c] < claim) {
          parked[c].push_back({e, claim});
          ++missing;
        }
      }
    }
    unsatisfied[e] = missing;
    if (missing == 0) ready.push_back(e);
  };
  auto wake = [&](uint32_t c) {
    auto& q = parked[c];
    const bool sem = g.counters[c].kind == CounterKind::Semaphore;
    while (!q.empty() && (sem ? value[c] > 0 : q.front().claim <= value[c])) {
      const uint32_t e = q.front().event;
      q.pop_front();
      if (sem) --value[c];
      if (--unsatisfied[e] == 0) ready.push_back(e);
    }
  };
  for (uint32_t e = 0; e < n; ++e)
    if (indeg[e] == 0) start(e);
  while (!ready.empty()) {
    const uint32_t e = ready.front();
    ready.pop_front();
    s.index[e] = static_cast<uint32_t>(s.order.size());
    s.order.push_back(e);
    for (uint32_t u = prodBegin[e]; u < prodBegin[e + 1]; ++u) {
      const uint32_t c = prodCounter[u];
      if (c == kNone) continue;
      ++value[c];
      wake(c);
    }
    for (uint32_t k = g.succBegin[e]; k < g.succBegin[e + 1]; ++k)
      if (--indeg[g.succ[k]] == 0) start(g.succ[k]);
  }
  s.complete = s.order.size() == n;
  if (s.complete) return s;
  // Stuck: waits that started and whose counter never reached them.
  bool reported = false;
  for (size_t c = 0; c < nc; ++c) {
    if (parked[c].empty() || g.shortCounters[c]) {
      reported |= !parked[c].empty();
      continue;
    }
    const Parked& p = parked[c].front();
    Finding f;
    f.kind = FindingKind::Deadlock;
    f.at = g.site(p.event);
    f.call = g.events[p.event].call;
    if (g.counters[c].kind == CounterKind::Semaphore) {
      f.message = strFormat("waits forever on %s: no release is left that can still run", counterText(g, c).c_str());
    } else {
      f.message = strFormat(
          "waits forever for signal #%llu on %s: only %llu arrive, the others come after ops "
          "that wait themselves",
          static_cast<unsigned long long>(p.claim), counterText(g, c).c_str(),
          static_cast<unsigned long long>(value[c]));
    }
    sink->add("stuck " + siteKey(f.at), f);
    reported = true;
  }
  for (const auto& [ev, why] : g.blocked) reported |= started[ev] != 0;
  if (!reported) reportCycle(g, indeg, s.index, sink);
  return s;
}

}  // namespace mscclpp::plan::verify
