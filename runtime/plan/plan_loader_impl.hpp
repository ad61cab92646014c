// Internal to the plan loader: the loader shared by its two passes.
// plan_loader.cc reads the header, declarations and cross-rank rules;
// threadblock_loader.cc reads threadblocks and ops.
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

// Gathers the reduce ops of the threadblocks pass 1 skips.
// An object named by a reducing op adds its reduce_op, by default sum.
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

// Facts about one rank's declarations that
// op resolution needs beyond RankPlan.
struct RankFacts {
  size_t listedMemory = 0;  // channels the plan lists; implicit ones follow in RankPlan
  size_t listedPort = 0;
  // Per listed channel: whether the peer lists its pair; if not,
  // nothing can signal it.
  std::vector<bool> memoryPeerListed;
  std::vector<bool> portPeerListed;
  // Per switch channel: its declaration, channels[c].rank_groups[g].
  std::vector<std::pair<size_t, size_t>> switchOrigin;
  const json::Value* threadblocks = nullptr;  // this rank's skipped array in pass 1's document
};

// Unknown keys are ignored, not refused;
// with MSCCLPP_DEBUG=TRACE the loader logs each one.
void logUnknownKeys(const Checker& check, const json::Document& doc, const json::Value& object, const Path& at,
                    const char* const* known, size_t nKnown);

// Checks that entry is an object and returns its channel type,
// read under typeKey.
// The rank's and the threadblocks' channel lists share this reader,
// so their checks and messages stay the same.
// With allowSwitch false only memory and port are accepted.
ChannelType readChannelType(const Checker& check, const json::Document& doc, const json::Value& entry, const Path& at,
                            const char* typeKey, bool allowSwitch);

// Variable-size plans (variable_sizes_loader.cc): the header's
// variable_sizes, a rank's chunks, a reference's segment, an op's shape.
void readVariableSizes(const Checker& check, const json::Document& doc, const json::Value& root, const Path& top,
                       bool traceKeys, PlanHeader* h);
void checkVariableRank(const Checker& check, const json::Document& doc, const json::Value& gpu, const Path& at,
                       const PlanHeader& h, const RankPlan& rp);
void readSegment(const Checker& check, const json::Document& doc, const json::Value& ref, const Path& at,
                 const PlanHeader& h, bool traceKeys, BufferRef* out);
void checkVariableOp(const Checker& check, const Path& at, const PlanHeader& h, const Op& op);

class PlanLoader {
 public:
  PlanLoader(std::string_view text, const std::string& source);
  std::shared_ptr<Plan> load(const LoadOptions& options);
  PlanSummary summarize();

 private:
  // Pass 1: the text without threadblocks; header, declarations,
  // cross-rank rules.
  void declare();
  void readHeader(const json::Value& root);
  void readRank(int r, const json::Value& gpu, const Path& at);
  void readChannels(int r, const json::Value& list, const Path& at);
  void readRemoteBuffers(int r, const json::Value& list, const Path& at);
  void pairChannels();
  void pairChannelType(ChannelType type);
  void checkSwitchGroups();
  void checkRemoteBufferChannels();
  // Pass 2, in threadblock_loader.cc: rank r's threadblocks and ops.
  void loadThreadblocks(int r);
  template <size_t N>
  void traceUnknownKeys(const json::Value& object, const Path& at, const char* const (&known)[N]) const {
    if (traceKeys_) logUnknownKeys(check_, doc_, object, at, known, N);
  }

  std::string_view text_;
  std::string source_;
  Checker check_;
  json::Parser parser_;
  json::Document doc_;
  ReduceOpScanner scanner_;
  std::shared_ptr<Plan> plan_;
  std::vector<RankFacts> facts_;
  std::vector<uint32_t> memberStamp_;  // per rank: the last group listing it, to find duplicates
  uint32_t stamp_ = 0;
  bool traceKeys_ = false;
};

}  // namespace mscclpp::plan::detail

#endif  // MSCCLPP_PLAN_PLAN_LOADER_IMPL_HPP_
