// Loads plan JSON into the model of plan.hpp and validates all of it at load time.
// Errors are InvalidPlan, or SystemError for I/O, naming source, JSON path, value and rule:
//   allreduce8.json: gpus[3].threadblocks[5].ops[12].src_buff[1].index=40 out of range (input has 32 chunks)
// docs/plan-core.md lists every rule.
// Thread-safety: the functions share no state; the returned Plan is immutable.
#ifndef MSCCLPP_PLAN_PLAN_LOADER_HPP_
#define MSCCLPP_PLAN_PLAN_LOADER_HPP_

#include <cstdint>
#include <string>
#include <string_view>

#include "plan/plan.hpp"

namespace mscclpp::plan {

// The newest format_version this reader understands.
// A plan without the key, as MSCCL++ writes it,
// is version 0 and loads the same way.
constexpr int kPlanFormatVersion = 2;

struct LoadOptions {
  // -1 loads and validates every rank.
  // r >= 0 loads rank r in full and only the
  // declarations of the others (hasOps false).
  // Cross-rank rules still hold;
  // other ranks' threadblocks get a syntax
  // check and a scan for their reduce ops.
  int onlyRank = -1;
  // With onlyRank >= 0, also validates the other ranks' threadblocks,
  // then drops them.
  // A plan broken for any rank then fails on every rank with the same error,
  // so all ranks reach one verdict.
  // The registry loads plans this way.
  bool validateAllRanks = false;
};

// What the registry needs to index a plan without its threadblocks.
struct PlanSummary {
  PlanHeader header;         // reduceOps covers every rank
  uint32_t inputChunks = 0;  // equal on every rank, by a load rule
  uint32_t outputChunks = 0;
  uint32_t maxScratchChunks = 0;  // the largest scratch_chunks of any rank
  uint64_t numThreadblocks = 0;   // over all ranks
};

PlanPtr loadPlanFile(const std::string& path, const LoadOptions& options = {});
// sourceName names the text in messages and becomes PlanHeader::source.
PlanPtr loadPlanJson(std::string_view text, const std::string& sourceName, const LoadOptions& options = {});

// Header, declarations and cross-rank rules;
// threadblocks get a syntax check only.
// Cheap enough to scan plan directories with.
PlanSummary loadPlanSummaryFile(const std::string& path);
PlanSummary loadPlanSummaryJson(std::string_view text, const std::string& sourceName);
inline PlanHeader loadPlanHeader(const std::string& path) { return loadPlanSummaryFile(path).header; }

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_LOADER_HPP_
