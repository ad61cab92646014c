// Internal to the plan loader: the loader object shared by plan_loader.cc (header, per-rank
// declarations, cross-rank rules) and threadblock_loader.cc (threadblocks and ops).
#ifndef MSCCLPP_PLAN_PLAN_LOADER_IMPL_HPP_
#define MSCCLPP_PLAN_PLAN_LOADER_IMPL_HPP_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plan/json_reader.hpp"
#include "plan/load_context.hpp"
#include "plan/plan.hpp"
#include "plan/plan_loader.hpp"

namespace mscclpp::plan::detail {

// Gathers the reduce ops of ops met while skipping threadblocks: an object whose "name" is a reducing
// op contributes its "reduce_op" (default sum).
class ReduceOpScanner : public json::SkipObserver {
 public:
  void onStringMember(int depth, std::string_view key, std::string_view rawValue) override;
  void onObjectEnd(int depth) override;
  uint32_t mask() const { return mask_; }

 private:
  struct Level {
    bool reduces = false;
    int op = -1;
  };
  Level levels_[json::kMaxDepth + 1];
  uint32_t mask_ = 0;
};

// Facts about one rank's declarations that op resolution needs beyond RankPlan.
struct RankFacts {
  size_t listedMemory = 0;  // channels listed in the plan; implicit ones follow them in RankPlan
  size_t listedPort = 0;
  // Per listed channel: whether the peer lists the channel it pairs with (else nobody can signal it).
  std::vector<bool> memoryPeerListed;
  std::vector<bool> portPeerListed;
  // Per switch channel: where it was declared (channels[c].rank_groups[g]).
  std::vector<std::pair<size_t, size_t>> switchOrigin;
  const json::Value* threadblocks = nullptr;  // the skipped array of this rank in the pass-1 document
};

class PlanLoader {
 public:
  PlanLoader(std::string_view text, const std::string& source);
  std::shared_ptr<Plan> load(const LoadOptions& options);
  PlanSummary summarize();

 private:
  // Pass 1: the whole text with every rank's threadblocks skipped; header, declarations, cross-rank rules.
  void declare();
  void readHeader(const json::Value& root);
  void readRank(int r, const json::Value& gpu, const Path& at);
  void readChannels(int r, const json::Value& list, const Path& at);
  void readRemoteBuffers(int r, const json::Value& list, const Path& at);
  void checkSameChunks();
  void pairChannels();
  void pairChannelType(ChannelType type);
  void checkSwitchGroups();
  void checkRemoteBufferChannels();
  // Pass 2 (threadblock_loader.cc): rank r's threadblocks and ops.
  void loadThreadblocks(int r);
  void traceUnknownKeys(const json::Value& object, const Path& at, const char* const* known, size_t nKnown) const;

  std::string_view text_;
  std::string source_;
  Checker check_;
  json::Parser parser_;
  json::Document doc_;
  ReduceOpScanner scanner_;
  std::shared_ptr<Plan> plan_;
  std::vector<RankFacts> facts_;
  std::vector<uint32_t> memberStamp_;  // per rank: the group being read that lists it (duplicate check)
  uint32_t stamp_ = 0;
  bool traceKeys_ = false;
};

}  // namespace mscclpp::plan::detail

#endif  // MSCCLPP_PLAN_PLAN_LOADER_IMPL_HPP_
