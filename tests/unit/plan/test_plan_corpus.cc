// Every plan of the MSCCL++ reference corpus (tests/data/reference-plans) loads
// and validates, per rank and in full, and the MSCCL++-specific spellings are
// read as documented.
#include <catch2/catch.hpp>
#include <cstring>

#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"
#include "plan_test_util.hpp"

using namespace mscclpp::plan;

namespace {
std::string corpus(const std::string& rel) { return plantest::referencePlansDir() + "/mscclpp/" + rel; }
}  // namespace

TEST_CASE("reference plans validate whole, per rank and as summaries", "[plan][corpus]") {
  const auto files = plantest::referencePlanFiles();
  REQUIRE(files.size() == 64);
  for (const std::string& file : files) {
    INFO(file);
    PlanPtr full;
    try {
      full = loadPlanFile(file);
    } catch (const mscclpp::Error& e) {
      FAIL(e.what());
    }
    const PlanSummary summary = loadPlanSummaryFile(file);
    CHECK(summary.header.name == full->header.name);
    CHECK(summary.header.reduceOps == full->header.reduceOps);
    CHECK(summary.inputChunks == full->ranks[0].inputChunks);
    for (int r = 0; r < full->header.worldSize; ++r) {
      LoadOptions options;
      options.onlyRank = r;
      PlanPtr part = loadPlanFile(file, options);
      const RankPlan& a = part->ranks[static_cast<size_t>(r)];
      const RankPlan& b = full->ranks[static_cast<size_t>(r)];
      REQUIRE(a.threadblocks.size() == b.threadblocks.size());
      for (size_t t = 0; t < a.threadblocks.size(); ++t) {
        CHECK(a.threadblocks[t].ids == b.threadblocks[t].ids);
        REQUIRE(a.threadblocks[t].ops.size() == b.threadblocks[t].ops.size());
        CHECK(std::memcmp(a.threadblocks[t].ops.data(), b.threadblocks[t].ops.data(),
                          a.threadblocks[t].ops.size() * sizeof(Op)) == 0);
      }
      for (size_t o = 0; o < part->ranks.size(); ++o) {
        CHECK(part->ranks[o].memoryChannels.size() == full->ranks[o].memoryChannels.size());
        CHECK(part->ranks[o].portChannels.size() == full->ranks[o].portChannels.size());
        CHECK(part->ranks[o].hasOps == (static_cast<int>(o) == r));
      }
    }
  }
}

TEST_CASE("MSCCL++ spellings: buff, unfused glre, ranked local refs", "[plan][corpus]") {
  // "buff" instead of "buffer_type" on switch channels; no buffer_alignment/min/max keys.
  PlanPtr pipeline = loadPlanFile(corpus("committed/allreduce_pipeline.json"));
  REQUIRE(pipeline->ranks[0].switchChannels.size() == 1);
  CHECK(pipeline->ranks[0].switchChannels[0].bufferType == BufferType::Scratch);
  CHECK(pipeline->ranks[0].switchChannels[0].ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(pipeline->header.bufferAlignment == 16);
  CHECK(pipeline->header.reuseResources);
  // pipelines are flattened: op 0 of threadblock 0 is a pipeline followed by its 11 body ops
  const auto& tb0 = pipeline->ranks[0].threadblocks[0];
  CHECK(tb0.ops[0].type == OpType::Pipeline);
  CHECK(tb0.ops[0].bodyCount == 11);
  CHECK(tb0.ops[0].unitSize == 524288);
  CHECK(tb0.ops.size() == 12);

  // glre in its unfused form becomes src = multicast of switch channel 0, dst = local scratch chunk 0
  PlanPtr glre = loadPlanFile(corpus("generated/ut_switch_reduce_test.json"));
  const auto& tb = glre->ranks[0].threadblocks.at(0);
  REQUIRE(tb.ops.size() == 1);
  CHECK(tb.ops[0].type == OpType::GroupLoadReduce);
  CHECK(tb.refs[tb.ops[0].srcBegin].kind == RefKind::Multicast);
  CHECK(tb.refs[tb.ops[0].srcBegin].type == BufferType::Input);
  CHECK(tb.refs[tb.ops[0].dstBegin].kind == RefKind::Local);
  CHECK(tb.refs[tb.ops[0].dstBegin].type == BufferType::Scratch);
  CHECK(glre->ranks[1].threadblocks.empty());

  // local references carrying "rank"; max_message_size 18446744073709551615
  PlanPtr gstore = loadPlanFile(corpus("generated/sn_allgather_nvls_zero_copy_8.json"));
  CHECK(gstore->header.maxMessageSize == UINT64_MAX);
  CHECK(gstore->ranks[3].threadblocks[0].refs[0].kind == RefKind::Local);

  // A rank that only flushes lists port channels its peer does not: the peer gets an implicit partner.
  PlanPtr flush = loadPlanFile(corpus("generated/ut_flush_test.json"));
  REQUIRE(flush->ranks[1].portChannels.size() == 1);
  CHECK(flush->ranks[1].portChannels[0].implicit);
  CHECK(flush->ranks[1].portChannels[0].peer == 0);
  CHECK_FALSE(flush->ranks[0].portChannels[0].implicit);
}

TEST_CASE("threadblock channel lists map to rank-level channels", "[plan][corpus]") {
  PlanPtr plan = loadPlanFile(corpus("generated/sn_allreduce_pkt_8.json"));
  // threadblock 1 of rank 0 lists remote buffers [1, 0, 2, ...]; its respkt's
  // dst[1] says buffer_id 1 (rank-level 0, rank 1's scratch) and dst[2]
  // buffer_id 0 (rank-level 1, rank 2's scratch).
  const auto& tb = plan->ranks[0].threadblocks[1];
  const Op& respkt = tb.ops[1];
  REQUIRE(respkt.type == OpType::ReduceSendPackets);
  CHECK(respkt.nSrc == 8);
  CHECK(respkt.nDst == 8);
  const BufferRef& d1 = tb.refs[respkt.dstBegin + 1];
  const BufferRef& d2 = tb.refs[respkt.dstBegin + 2];
  CHECK(d1.kind == RefKind::Remote);
  CHECK(d1.id == 0);
  CHECK(d2.id == 1);
  CHECK(plan->ranks[0].remoteBuffers[0].rank == 1);
  CHECK(plan->ranks[0].remoteBuffers[1].rank == 2);
  CHECK(d2.type == BufferType::Scratch);
  CHECK(d2.index == 57);
}
