// Interval maps over one buffer's bytes.
// ContentMap says what each byte holds; AccessMap, who accessed it since its last write.
// Both split at access boundaries, so a plan of whole chunks keeps one entry per chunk.
#ifndef MSCCLPP_PLAN_VERIFY_BUFFER_STATE_HPP_
#define MSCCLPP_PLAN_VERIFY_BUFFER_STATE_HPP_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "plan/verify/event_graph.hpp"
#include "plan/verify/terms.hpp"

namespace mscclpp::plan::verify {

struct Piece {
  uint64_t begin, end;  // relative to the range read, or absolute in a map
  Value value;          // relative to the caller's begin, as ContentMap::read returns it
  uint32_t writer = kNone;
  uint8_t call = 0;  // LL packets: the call whose flag they carry
};

class ContentMap {
 public:
  // The contents of [begin, end) as pieces moved so that position 0 is begin.
  // Bytes never written come back as undefined pieces.
  void read(uint64_t begin, uint64_t end, std::vector<Piece>* out) const;
  // Writes pieces covering [0, end - begin) at begin.
  void write(uint64_t begin, uint64_t end, const std::vector<Piece>& pieces);
  // Forgets [begin, end): the other map, packets or data,
  // overwrote those bytes.
  void erase(uint64_t begin, uint64_t end);

 private:
  struct Entry {
    uint64_t end;
    Value value;  // absolute: value at position p is value's contributions at p + delta + shift
    uint32_t writer;
    uint8_t call;
  };
  void split(uint64_t pos);
  std::map<uint64_t, Entry> map_;
};

struct PastAccess {
  uint32_t event;
  Access access;
};

class AccessMap {
 public:
  // Calls check(earlier, segmentBegin, segmentEnd) for each earlier access
  // the new one must follow, then records it.
  // Those are the last write and, for a write, the reads since.
  template <class F>
  void access(uint64_t begin, uint64_t end, uint32_t event, Access a, F&& check);

 private:
  struct Entry {
    uint64_t end;
    bool written = false;
    PastAccess lastWrite{kNone, Access::Write};
    std::vector<PastAccess> reads;
  };
  void cover(uint64_t begin, uint64_t end);
  std::map<uint64_t, Entry> map_;
};

template <class F>
void AccessMap::access(uint64_t begin, uint64_t end, uint32_t event, Access a, F&& check) {
  if (begin >= end) return;
  cover(begin, end);
  const bool write = isWrite(a);
  for (auto it = map_.find(begin); it != map_.end() && it->first < end; ++it) {
    Entry& e = it->second;
    if (e.written && e.lastWrite.event != event) check(e.lastWrite, it->first, e.end);
    if (write) {
      for (const PastAccess& r : e.reads)
        if (r.event != event) check(r, it->first, e.end);
      e.reads.clear();
      e.written = true;
      e.lastWrite = {event, a};
    } else if (e.reads.empty() || e.reads.back().event != event) {
      e.reads.push_back({event, a});
    }
  }
}

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_BUFFER_STATE_HPP_
