#include "plan/verify/terms.hpp"

#include <algorithm>
#include <map>

#include "core/format.hpp"

namespace mscclpp::plan::verify {

size_t TermTable::Hash::operator()(const std::vector<Contribution>& v) const {
  uint64_t h = 1469598103934665603ull;
  for (const Contribution& c : v) {
    h = (h ^ c.rank) * 1099511628211ull;
    h = (h ^ static_cast<uint64_t>(c.delta)) * 1099511628211ull;
  }
  return static_cast<size_t>(h ^ (h >> 29));
}

TermTable::TermTable() { terms_.emplace_back(); }

Value TermTable::make(std::vector<Contribution> c) {
  if (c.empty()) return Value();
  std::sort(c.begin(), c.end());
  int64_t low = c[0].delta;
  for (const Contribution& x : c) low = std::min(low, x.delta);
  for (Contribution& x : c) x.delta -= low;
  auto it = index_.find(c);
  if (it != index_.end()) return Value{it->second, low};
  const uint32_t id = static_cast<uint32_t>(terms_.size());
  terms_.push_back(c);
  index_.emplace(std::move(c), id);
  return Value{id, low};
}

Value TermTable::input(uint32_t rank, int64_t shift) { return make({{rank, shift}}); }

Value TermTable::reduce(const Value* values, size_t n) {
  scratch_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (!values[i].defined()) return Value();
    for (const Contribution& c : terms_[values[i].term]) scratch_.push_back({c.rank, c.delta + values[i].shift});
  }
  return make(scratch_);
}

Value TermTable::distinct(Value v) {
  if (!v.defined()) return v;
  std::vector<Contribution> c = terms_[v.term];
  c.erase(std::unique(c.begin(), c.end()), c.end());
  Value d = make(std::move(c));
  return d.moved(v.shift);
}

std::string rankList(const std::vector<uint32_t>& r) {
  std::string s;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + (j == i ? std::to_string(r[i]) : strFormat("%u-%u", r[i], r[j]));
    i = j + 1;
  }
  return s;
}

std::string TermTable::describe(Value v, uint64_t pos, uint64_t chunkBytes) const {
  if (!v.defined()) return "nothing from any input (never written, or LL packets of another call)";
  // Group contributions by the input position they read.
  std::map<int64_t, std::vector<uint32_t>> byOffset;
  for (const Contribution& c : terms_[v.term])
    byOffset[static_cast<int64_t>(pos) + c.delta + v.shift].push_back(c.rank);
  std::string text;
  size_t total = 0;
  for (auto& [off, ranks] : byOffset) {
    total += ranks.size();
    std::sort(ranks.begin(), ranks.end());
    std::vector<uint32_t> once = ranks;
    once.erase(std::unique(once.begin(), once.end()), once.end());
    std::string where;
    if (off < 0 || chunkBytes == 0) {
      where = strFormat("input byte %lld", static_cast<long long>(off));
    } else if (static_cast<uint64_t>(off) % chunkBytes == 0) {
      where = strFormat("input chunk %llu", static_cast<unsigned long long>(static_cast<uint64_t>(off) / chunkBytes));
    } else {
      where = strFormat("input chunk %llu byte %llu",
                        static_cast<unsigned long long>(static_cast<uint64_t>(off) / chunkBytes),
                        static_cast<unsigned long long>(static_cast<uint64_t>(off) % chunkBytes));
    }
    std::string part = where + (once.size() == 1 ? " of rank " : " of ranks ") + rankList(once);
    if (once.size() != ranks.size()) {
      std::vector<uint32_t> twice;
      for (size_t i = 1; i < ranks.size(); ++i)
        if (ranks[i] == ranks[i - 1] && (twice.empty() || twice.back() != ranks[i])) twice.push_back(ranks[i]);
      part += " (rank " + rankList(twice) + " more than once)";
    }
    text += (text.empty() ? "" : " + ") + part;
  }
  return total > 1 ? "the reduction of " + text : text;
}

}  // namespace mscclpp::plan::verify
