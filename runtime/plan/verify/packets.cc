// LL packets carry their call's flag, and a packet read waits for its own call's flag.
// It completes after that call's writes to its bytes and never sees another call's.
// Each read gets an exec edge from each of those writes.
// Bytes no op writes in the reader's call leave the read waiting forever.
#include <algorithm>

#include "core/format.hpp"
#include "plan/verify/event_graph.hpp"

namespace mscclpp::plan::verify {
namespace {

struct PacketWrite {
  uint64_t begin, end;
  uint32_t event;
};

}  // namespace

void addPacketEdges(Graph* g, FindingSink* sink) {
  const int n = g->nRanks();
  // Writes per call and rank, sorted by begin.
  std::vector<std::vector<PacketWrite>> writes(static_cast<size_t>(g->calls) * n);
  std::vector<uint64_t> longest(writes.size(), 0);
  for (uint32_t ev = 0; ev < g->events.size(); ++ev) {
    const Event& e = g->events[ev];
    for (uint32_t m = e.moveBegin; m < e.moveBegin + e.moveCount; ++m) {
      const Move& mv = g->moves[m];
      for (uint32_t l = mv.locBegin; l < mv.locBegin + mv.nSrc + mv.nDst; ++l) {
        const AccessLoc& a = g->locs[l];
        if (a.access != Access::PktWrite) continue;
        const size_t bucket = static_cast<size_t>(e.call) * n + a.loc.rank;
        writes[bucket].push_back({a.loc.off, a.loc.off + a.loc.physLen(), ev});
        longest[bucket] = std::max(longest[bucket], a.loc.physLen());
      }
    }
  }
  // Two writes of one call to the same packets
  // are left to the symbolic execution,
  // which knows whether they carry the same data.
  for (auto& w : writes)
    std::sort(w.begin(), w.end(), [](const PacketWrite& x, const PacketWrite& y) { return x.begin < y.begin; });
  for (uint32_t ev = 0; ev < g->events.size(); ++ev) {
    const Event& e = g->events[ev];
    bool blocked = false;
    for (uint32_t m = e.moveBegin; m < e.moveBegin + e.moveCount && !blocked; ++m) {
      const Move& mv = g->moves[m];
      for (uint32_t l = mv.locBegin; l < mv.locBegin + mv.nSrc && !blocked; ++l) {
        const AccessLoc& a = g->locs[l];
        if (a.access != Access::PktRead) continue;
        const size_t bucket = static_cast<size_t>(e.call) * n + a.loc.rank;
        const auto& w = writes[bucket];
        const uint64_t begin = a.loc.off, end = a.loc.off + a.loc.physLen();
        // Writes overlapping [begin, end) start before end and end after begin.
        auto first = std::lower_bound(w.begin(), w.end(), begin > longest[bucket] ? begin - longest[bucket] : 0,
                                      [](const PacketWrite& x, uint64_t v) { return x.begin < v; });
        std::vector<std::pair<uint64_t, uint64_t>> covered;
        for (auto it = first; it != w.end() && it->begin < end; ++it) {
          if (it->end <= begin) continue;
          if (it->event != ev) g->addEdge(it->event, ev, false);
          covered.push_back({std::max(begin, it->begin), std::min(end, it->end)});
        }
        std::sort(covered.begin(), covered.end());
        uint64_t reach = begin;
        for (const auto& [cb, ce] : covered) {
          if (cb > reach) break;
          reach = std::max(reach, ce);
        }
        if (reach >= end) continue;
        const uint64_t gapEnd = [&] {
          for (const auto& [cb, ce] : covered)
            if (cb > reach) return cb;
          return end;
        }();
        const Place place = describePlace(*g->plan, g->layout, a.loc.rank, a.loc.phys, true, reach, gapEnd);
        Finding f;
        f.kind = FindingKind::Deadlock;
        f.at = g->site(ev);
        f.buffer = place.buffer;
        f.chunks = place.chunks;
        f.call = e.call;
        f.message = strFormat(
            "reads LL packets at %s %s (src_buff[%u]) that no op of any rank writes in the same "
            "call: the packets never carry this call's flag, so the read waits forever",
            place.buffer.c_str(), place.chunks.c_str(), a.refPos);
        sink->add("pktnone " + siteKey(f.at) + " " + std::to_string(a.refPos), f);
        g->blocked.push_back({ev, "reads LL packets no op writes in its call"});
        blocked = true;
      }
    }
  }
}

}  // namespace mscclpp::plan::verify
