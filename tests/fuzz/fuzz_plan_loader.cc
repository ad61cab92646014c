// libFuzzer target for the plan loader. Any input must either load or throw
// mscclpp::Error; a loaded plan must satisfy every guarantee the executor
// relies on (checked below: a violation traps, which libFuzzer reports as a
// crash). Built only with -Dfuzzing=true (clang); see docs/plan-core.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"
#include "plan/plan_sizing.hpp"
#include "plan/verify/verify.hpp"

namespace {

using namespace mscclpp::plan;

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

uint64_t chunks(const Plan& plan, int rank, BufferType type) {
  const RankPlan& r = plan.ranks[static_cast<size_t>(rank)];
  return type == BufferType::Input ? r.inputChunks : type == BufferType::Output ? r.outputChunks : r.scratchChunks;
}

void checkRef(const Plan& plan, const RankPlan& rank, const BufferRef& ref) {
  FUZZ_CHECK(ref.size >= 1);
  const uint64_t end = static_cast<uint64_t>(ref.index) + ref.size;
  switch (ref.kind) {
    case RefKind::Local:
      FUZZ_CHECK(end <= chunks(plan, rank.rank, ref.type));
      break;
    case RefKind::Remote: {
      FUZZ_CHECK(ref.id < rank.remoteBuffers.size());
      const RemoteBufferDecl& rb = rank.remoteBuffers[ref.id];
      FUZZ_CHECK(rb.type == ref.type);
      FUZZ_CHECK(rb.rank >= 0 && rb.rank < plan.header.worldSize && rb.rank != rank.rank);
      FUZZ_CHECK(end <= chunks(plan, rb.rank, ref.type));
      break;
    }
    case RefKind::Multicast: {
      FUZZ_CHECK(ref.id < rank.switchChannels.size());
      for (int m : rank.switchChannels[ref.id].ranks) {
        FUZZ_CHECK(m >= 0 && m < plan.header.worldSize);
        FUZZ_CHECK(end <= chunks(plan, m, ref.type));
      }
      break;
    }
  }
}

void checkPlan(const Plan& plan) {
  FUZZ_CHECK(plan.header.worldSize >= 1);
  FUZZ_CHECK(plan.ranks.size() == static_cast<size_t>(plan.header.worldSize));
  FUZZ_CHECK(plan.header.minMessageSize <= plan.header.maxMessageSize);
  for (const RankPlan& rank : plan.ranks) {
    for (const auto* list : {&rank.memoryChannels, &rank.portChannels}) {
      for (const ChannelDecl& c : *list)
        FUZZ_CHECK(c.peer >= 0 && c.peer < plan.header.worldSize && c.peer != rank.rank);
    }
    for (const ThreadblockPlan& tb : rank.threadblocks) {
      for (size_t i = 0; i < tb.ops.size(); ++i) {
        const Op& op = tb.ops[i];
        FUZZ_CHECK(static_cast<uint64_t>(op.srcBegin) + op.nSrc <= tb.refs.size());
        FUZZ_CHECK(static_cast<uint64_t>(op.dstBegin) + op.nDst <= tb.refs.size());
        FUZZ_CHECK(static_cast<uint64_t>(op.idsBegin) + op.nIds <= tb.ids.size());
        FUZZ_CHECK(op.tbgSize >= 1 && op.tbgId < op.tbgSize);
        for (uint32_t k = 0; k < op.nSrc; ++k) checkRef(plan, rank, tb.refs[op.srcBegin + k]);
        for (uint32_t k = 0; k < op.nDst; ++k) checkRef(plan, rank, tb.refs[op.dstBegin + k]);
        const size_t channelCount = op.channelType == ChannelType::Memory   ? rank.memoryChannels.size()
                                    : op.channelType == ChannelType::Port   ? rank.portChannels.size()
                                    : op.channelType == ChannelType::Switch ? rank.switchChannels.size()
                                                                            : rank.semaphoreInitValues.size();
        for (uint32_t k = 0; k < op.nIds; ++k) FUZZ_CHECK(tb.ids[op.idsBegin + k] < channelCount);
        if (op.type == OpType::Barrier) FUZZ_CHECK(op.barrierId < rank.numBarriers && op.numThreadblocks >= 1);
        if (op.type == OpType::Pipeline) {
          FUZZ_CHECK(i + op.bodyCount < tb.ops.size() + 1);
          for (uint32_t b = 1; b <= op.bodyCount; ++b) FUZZ_CHECK(tb.ops[i + b].type != OpType::Pipeline);
          FUZZ_CHECK(op.unitSize >= 1 && op.numChunks >= 1);
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const PlanSummary summary = loadPlanSummaryJson(text, "fuzz.json");
    FUZZ_CHECK(summary.header.worldSize >= 1);
  } catch (const mscclpp::Error&) {
  }
  try {
    PlanPtr plan = loadPlanJson(text, "fuzz.json");
    checkPlan(*plan);
    // The verifier takes any plan that loads (a small model limit keeps each input fast).
    mscclpp::plan::verify::Options verifyOptions;
    verifyOptions.maxEvents = 5000;
    verifyOptions.maxFindings = 4;
    const auto verdict = mscclpp::plan::verify::verifyPlan(*plan, verifyOptions);
    FUZZ_CHECK(verdict.proven == verdict.findings.empty());
    for (uint64_t bytes : {uint64_t{0}, uint64_t{1024}, uint64_t{1} << 40, UINT64_MAX}) {
      uint64_t in = 0, out = 0;
      if (callBytes(plan->header.collective, bytes, 4, plan->header.worldSize, &in, &out)) {
        const SizingResult s = sizePlan(plan->header, plan->ranks[0], in, out, 4);
        FUZZ_CHECK(s.ok == s.reason.empty());
      }
    }
    LoadOptions options;
    options.onlyRank = plan->header.worldSize - 1;
    PlanPtr part = loadPlanJson(text, "fuzz.json", options);
    checkPlan(*part);
  } catch (const mscclpp::Error&) {
  }
  return 0;
}
