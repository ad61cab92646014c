// Loading plan JSON (plan-format.md) into the in-memory model of plan.hpp, validating everything at
// load time. Every error is an Error(ErrorCode::InvalidPlan) (or SystemError for I/O) whose message
// names the source, then the JSON path of the offending field as written, then the value and the rule:
//   allreduce8.json: gpus[3].threadblocks[5].ops[12].src_buff[1].index=40 out of range (input has 32 chunks)
// docs/plan-core.md lists every rule.
//
// Thread-safety: the functions are reentrant (no shared state); the returned Plan is immutable.
#ifndef MSCCLPP_PLAN_PLAN_LOADER_HPP_
#define MSCCLPP_PLAN_PLAN_LOADER_HPP_

#include <cstdint>
#include <string>
#include <string_view>

#include "plan/plan.hpp"

namespace mscclpp::plan {

// The newest "format_version" this reader understands (plans without the key are version 0, i.e.
// MSCCL++-compiled plans, and load the same way).
constexpr int kPlanFormatVersion = 1;

struct LoadOptions {
  // -1: load and validate every rank. r >= 0: rank r completely; for the other ranks only their chunk
  // counts, channel and remote-buffer declarations (hasOps == false). Cross-rank rules (channel pairing,
  // remote buffers, switch groups, reference bounds on peers) are still checked; the other ranks'
  // threadblocks are only checked for JSON syntax, and scanned for the reduce ops they use.
  int onlyRank = -1;
  // With onlyRank >= 0: also parse and validate every other rank's threadblocks (then drop them), so
  // that a plan broken for ANY rank fails to load on EVERY rank with the same error: ranks that load
  // their own part of one file reach one verdict (the registry loads plans this way).
  bool validateAllRanks = false;
};

// What the registry needs to index a plan without its threadblocks.
struct PlanSummary {
  PlanHeader header;         // reduceOps covers every rank (gathered while skipping threadblocks)
  uint32_t inputChunks = 0;  // the same on every rank (a load rule)
  uint32_t outputChunks = 0;
  uint32_t maxScratchChunks = 0;  // the largest scratch_chunks of any rank
  uint64_t numThreadblocks = 0;   // over all ranks
};

PlanPtr loadPlanFile(const std::string& path, const LoadOptions& options = {});
// text is JSON; sourceName names it in messages and becomes PlanHeader::source.
PlanPtr loadPlanJson(std::string_view text, const std::string& sourceName, const LoadOptions& options = {});

// Header, per-rank declarations and every cross-rank rule, without parsing threadblocks (their JSON
// syntax is still checked). Cheap enough to scan plan directories with.
PlanSummary loadPlanSummaryFile(const std::string& path);
PlanSummary loadPlanSummaryJson(std::string_view text, const std::string& sourceName);
inline PlanHeader loadPlanHeader(const std::string& path) { return loadPlanSummaryFile(path).header; }

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_PLAN_LOADER_HPP_
