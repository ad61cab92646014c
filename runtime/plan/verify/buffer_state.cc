#include "plan/verify/buffer_state.hpp"

namespace mscclpp::plan::verify {
namespace {

// Cuts the entry of an interval map that contains pos in two at pos.
template <class Map>
void splitAt(Map& map, uint64_t pos) {
  auto it = map.upper_bound(pos);
  if (it == map.begin()) return;
  --it;
  if (it->first == pos || it->second.end <= pos) return;
  auto tail = it->second;
  it->second.end = pos;
  map.emplace(pos, std::move(tail));
}

}  // namespace

void ContentMap::split(uint64_t pos) { splitAt(map_, pos); }

void ContentMap::read(uint64_t begin, uint64_t end, std::vector<Piece>* out) const {
  out->clear();
  uint64_t at = begin;
  auto it = map_.upper_bound(begin);
  if (it != map_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > begin) it = prev;
  }
  for (; it != map_.end() && it->first < end; ++it) {
    const uint64_t b = std::max(it->first, begin), e = std::min(it->second.end, end);
    if (b > at) out->push_back({at - begin, b - begin, Value(), kNone, 0});
    out->push_back({b - begin, e - begin, it->second.value.moved(static_cast<int64_t>(begin)), it->second.writer,
                    it->second.call});
    at = e;
  }
  if (at < end) out->push_back({at - begin, end - begin, Value(), kNone, 0});
}

void ContentMap::erase(uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  split(begin);
  split(end);
  map_.erase(map_.lower_bound(begin), map_.lower_bound(end));
}

void ContentMap::write(uint64_t begin, uint64_t end, const std::vector<Piece>& pieces) {
  erase(begin, end);
  for (const Piece& p : pieces) {
    if (p.end <= p.begin) continue;
    map_.emplace(begin + p.begin, Entry{begin + p.end, p.value.moved(-static_cast<int64_t>(begin)), p.writer, p.call});
  }
}

void AccessMap::cover(uint64_t begin, uint64_t end) {
  // Splits the entries at begin and end and fills gaps with empty entries.
  splitAt(map_, begin);
  splitAt(map_, end);
  uint64_t at = begin;
  auto it = map_.lower_bound(begin);
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  for (; it != map_.end() && it->first < end; ++it) {
    if (it->first > at) gaps.push_back({at, it->first});
    at = it->second.end;
  }
  if (at < end) gaps.push_back({at, end});
  for (const auto& [b, e] : gaps) {
    Entry x;
    x.end = e;
    map_.emplace(b, std::move(x));
  }
}

}  // namespace mscclpp::plan::verify
