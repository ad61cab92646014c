// Symbolic contents: a byte at position p holds a multiset of rank and shift pairs,
// meaning the reduction of input_rank[p + shift] over them.
// A copy adds the distance moved to the shifts; a reduction joins multisets.
// Values are interned as terms with the smallest shift factored out,
// so equal contents compare as two integers and moving them costs nothing.
#ifndef MSCCLPP_PLAN_VERIFY_TERMS_HPP_
#define MSCCLPP_PLAN_VERIFY_TERMS_HPP_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mscclpp::plan::verify {

struct Contribution {
  uint32_t rank;
  int64_t delta;
  bool operator<(const Contribution& o) const { return rank != o.rank ? rank < o.rank : delta < o.delta; }
  bool operator==(const Contribution& o) const { return rank == o.rank && delta == o.delta; }
};

// The content of a byte at position p:
// term's contributions at delta + shift.
// Term 0 is undefined: nothing traced to input data wrote it,
// such as stale packets.
struct Value {
  uint32_t term = 0;
  int64_t shift = 0;
  bool defined() const { return term != 0; }
  Value moved(int64_t by) const { return term == 0 ? Value() : Value{term, shift + by}; }
  bool operator==(const Value& o) const { return term == o.term && (term == 0 || shift == o.shift); }
  bool operator!=(const Value& o) const { return !(*this == o); }
};

class TermTable {
 public:
  TermTable();
  // input_rank[p + shift] itself.
  Value input(uint32_t rank, int64_t shift);
  Value make(std::vector<Contribution> contributions);
  // The reduction of several values at one position.
  Value reduce(const Value* values, size_t n);
  // The same contributions, each once: min and max ignore repeats.
  Value distinct(Value v);
  const std::vector<Contribution>& contributions(uint32_t term) const { return terms_[term]; }
  // "input chunk 3 of ranks 0-2,4-7": the value
  // at pos of a buffer of chunkBytes chunks.
  std::string describe(Value v, uint64_t pos, uint64_t chunkBytes) const;

 private:
  struct Hash {
    size_t operator()(const std::vector<Contribution>& v) const;
  };
  std::vector<std::vector<Contribution>> terms_;
  std::unordered_map<std::vector<Contribution>, uint32_t, Hash> index_;
  std::vector<Contribution> scratch_;
};

// "0-2,4,6-7"
std::string rankList(const std::vector<uint32_t>& sortedRanks);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_TERMS_HPP_
