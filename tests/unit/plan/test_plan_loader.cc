// Valid plans load into the model with every reference resolved; onlyRank and
// summaries agree with the full load.
#include <catch2/catch.hpp>

#include "plan/plan_loader.hpp"
#include "plan/plan_names.hpp"
#include "plan_test_util.hpp"

using namespace mscclpp::plan;
using plantest::json;

namespace {

const Op& op(const RankPlan& r, size_t tb, size_t i) { return r.threadblocks.at(tb).ops.at(i); }
const BufferRef& src(const RankPlan& r, size_t tb, size_t i, size_t k) {
  const auto& t = r.threadblocks.at(tb);
  return t.refs.at(t.ops.at(i).srcBegin + k);
}
const BufferRef& dst(const RankPlan& r, size_t tb, size_t i, size_t k) {
  const auto& t = r.threadblocks.at(tb);
  return t.refs.at(t.ops.at(i).dstBegin + k);
}
std::vector<uint32_t> ids(const RankPlan& r, size_t tb, size_t i) {
  const auto& t = r.threadblocks.at(tb);
  const Op& o = t.ops.at(i);
  return std::vector<uint32_t>(t.ids.begin() + o.idsBegin, t.ids.begin() + o.idsBegin + o.nIds);
}

}  // namespace

TEST_CASE("the Simple base plan loads with every reference resolved", "[plan][loader]") {
  PlanPtr plan = plantest::load(plantest::simplePlan());
  const PlanHeader& h = plan->header;
  CHECK(h.name == "simple");
  CHECK(h.source == "t.json");
  CHECK(h.collective == Collective::AllReduce);
  CHECK(h.protocol == Protocol::Simple);
  CHECK(h.inPlace);
  CHECK(h.worldSize == 2);
  CHECK(h.numThreadsPerBlock == 512);
  CHECK(h.bufferAlignment == 16);
  CHECK(h.minMessageSize == 0);
  CHECK(h.maxMessageSize == UINT64_MAX);
  CHECK(h.reduceOps == 1u << static_cast<unsigned>(PlanReduceOp::Sum));
  CHECK(h.formatVersion == 0);
  CHECK(h.nRanksPerNode == 0);

  const RankPlan& r = plan->ranks.at(0);
  CHECK(r.rank == 0);
  CHECK(r.hasOps);
  CHECK(r.inputChunks == 4);
  REQUIRE(r.memoryChannels.size() == 1);
  CHECK(r.memoryChannels[0].peer == 1);
  CHECK(r.memoryChannels[0].pairIndex == 0);
  CHECK_FALSE(r.memoryChannels[0].implicit);
  REQUIRE(r.portChannels.size() == 1);
  REQUIRE(r.switchChannels.size() == 1);
  CHECK(r.switchChannels[0].bufferType == BufferType::Input);
  CHECK(r.switchChannels[0].ranks == std::vector<int>{0, 1});
  REQUIRE(r.remoteBuffers.size() == 2);
  CHECK(r.remoteBuffers[0].rank == 1);
  CHECK(r.remoteBuffers[0].type == BufferType::Scratch);
  CHECK(r.remoteBuffers[0].viaMemory);
  CHECK(r.remoteBuffers[0].viaPort);
  CHECK(r.remoteBuffers[1].type == BufferType::Input);
  CHECK_FALSE(r.remoteBuffers[1].viaPort);
  CHECK(r.semaphoreInitValues == std::vector<uint32_t>{0, 1});
  CHECK(r.numBarriers == 1);
  REQUIRE(r.threadblocks.size() == 2);

  const std::vector<OpType> expected0 = {OpType::Nop,     OpType::Copy,       OpType::Put,           OpType::Signal,
                                         OpType::Wait,    OpType::Reduce,     OpType::PutWithSignal, OpType::Flush,
                                         OpType::Barrier, OpType::SemRelease, OpType::ReadReduce};
  REQUIRE(r.threadblocks[0].ops.size() == expected0.size());
  for (size_t i = 0; i < expected0.size(); ++i) CHECK(op(r, 0, i).type == expected0[i]);

  CHECK(op(r, 0, 0).tbgId == 0);
  CHECK(op(r, 0, 0).tbgSize == 1);
  CHECK(src(r, 0, 1, 0).kind == RefKind::Local);
  CHECK(dst(r, 0, 1, 0).type == BufferType::Scratch);
  // put (memory): dst is remote buffer 0 of rank 0 = rank 1's scratch
  CHECK(op(r, 0, 2).channelType == ChannelType::Memory);
  CHECK(dst(r, 0, 2, 0).kind == RefKind::Remote);
  CHECK(dst(r, 0, 2, 0).id == 0);
  CHECK(dst(r, 0, 2, 0).type == BufferType::Scratch);
  CHECK(dst(r, 0, 2, 0).index == 1);
  CHECK(dst(r, 0, 2, 0).size == 1);
  CHECK(ids(r, 0, 3) == std::vector<uint32_t>{0});
  CHECK(op(r, 0, 5).reduceOp == PlanReduceOp::Sum);
  CHECK(op(r, 0, 5).nSrc == 2);
  CHECK(op(r, 0, 6).channelType == ChannelType::Port);
  CHECK(ids(r, 0, 6) == std::vector<uint32_t>{0});
  CHECK(op(r, 0, 8).barrierId == 0);
  CHECK(op(r, 0, 8).numThreadblocks == 2);
  CHECK(ids(r, 0, 9) == std::vector<uint32_t>{0});
  // rre src[1]: the threadblock's memory remote list is [0, 1]: local id 1 -> rank-level 1 (rank 1's input)
  CHECK(src(r, 0, 10, 1).kind == RefKind::Remote);
  CHECK(src(r, 0, 10, 1).id == 1);
  CHECK(src(r, 0, 10, 1).type == BufferType::Input);

  // threadblocks[1]: glres and a flattened pipeline
  CHECK(src(r, 1, 2, 0).kind == RefKind::Multicast);
  CHECK(src(r, 1, 2, 0).type == BufferType::Input);
  REQUIRE(r.threadblocks[1].ops.size() == 6);
  const Op& pipe = op(r, 1, 3);
  CHECK(pipe.type == OpType::Pipeline);
  CHECK(pipe.bodyCount == 2);
  CHECK(pipe.unitSize == 1024);
  CHECK(pipe.numChunks == 1);
  CHECK(op(r, 1, 4).type == OpType::Copy);
  CHECK(op(r, 1, 5).type == OpType::GroupStore);
  CHECK(dst(r, 1, 5, 0).index == 2);
}

TEST_CASE("the LL base plan loads; an unfused glre becomes regular", "[plan][loader]") {
  PlanPtr plan = plantest::load(plantest::packetPlan());
  CHECK(plan->header.protocol == Protocol::LL);
  CHECK(plan->header.useDoubleScratchBuffer);
  const RankPlan& r = plan->ranks.at(1);
  const auto& tb = r.threadblocks.at(0);
  REQUIRE(tb.ops.size() == 11);
  const Op& glre = tb.ops[10];
  CHECK(glre.type == OpType::GroupLoadReduce);
  CHECK(glre.channelType == ChannelType::Switch);
  CHECK(glre.reduceOp == PlanReduceOp::Sum);
  REQUIRE(glre.nSrc == 1);
  REQUIRE(glre.nDst == 1);
  const BufferRef& s = tb.refs[glre.srcBegin];
  CHECK(s.kind == RefKind::Multicast);
  CHECK(s.id == 0);
  CHECK(s.type == BufferType::Scratch);
  CHECK(s.index == 1);
  CHECK(s.size == 1);
  const BufferRef& d = tb.refs[glre.dstBegin];
  CHECK(d.kind == RefKind::Local);
  CHECK(d.type == BufferType::Output);
  CHECK(d.index == 1);
  CHECK(std::vector<uint32_t>(tb.ids.begin() + glre.idsBegin, tb.ids.begin() + glre.idsBegin + glre.nIds) ==
        std::vector<uint32_t>{0});
  // ppkt over port: one channel id per dst, leading to the dst's owner
  CHECK(tb.ops[1].channelType == ChannelType::Port);
  CHECK(tb.ops[1].nIds == 1);
  CHECK(tb.refs[tb.ops[8].dstBegin + 2].kind == RefKind::Remote);
}

namespace {
void checkSameRank(const RankPlan& a, const RankPlan& b) {
  CHECK(a.inputChunks == b.inputChunks);
  CHECK(a.outputChunks == b.outputChunks);
  CHECK(a.scratchChunks == b.scratchChunks);
  CHECK(a.numBarriers == b.numBarriers);
  CHECK(a.semaphoreInitValues == b.semaphoreInitValues);
  REQUIRE(a.threadblocks.size() == b.threadblocks.size());
  for (size_t t = 0; t < a.threadblocks.size(); ++t) {
    const auto& x = a.threadblocks[t];
    const auto& y = b.threadblocks[t];
    CHECK(x.id == y.id);
    CHECK(x.ids == y.ids);
    REQUIRE(x.ops.size() == y.ops.size());
    REQUIRE(x.refs.size() == y.refs.size());
    CHECK(std::memcmp(x.ops.data(), y.ops.data(), x.ops.size() * sizeof(Op)) == 0);
    CHECK(std::memcmp(x.refs.data(), y.refs.data(), x.refs.size() * sizeof(BufferRef)) == 0);
  }
}
}  // namespace

TEST_CASE("onlyRank loads one rank fully, the others' declarations", "[plan][loader]") {
  for (const json& j : {plantest::simplePlan(), plantest::packetPlan()}) {
    PlanPtr full = plantest::load(j);
    for (int rank = 0; rank < 2; ++rank) {
      PlanPtr part = plantest::load(j, rank);
      const RankPlan& other = part->ranks.at(static_cast<size_t>(1 - rank));
      CHECK_FALSE(other.hasOps);
      CHECK(other.threadblocks.empty());
      CHECK(other.memoryChannels.size() == 1);
      CHECK(other.remoteBuffers.size() == full->ranks[static_cast<size_t>(1 - rank)].remoteBuffers.size());
      CHECK(other.inputChunks == full->ranks[static_cast<size_t>(1 - rank)].inputChunks);
      CHECK(part->ranks.at(static_cast<size_t>(rank)).hasOps);
      checkSameRank(part->ranks.at(static_cast<size_t>(rank)), full->ranks.at(static_cast<size_t>(rank)));
      CHECK(part->header.reduceOps == full->header.reduceOps);
    }
  }
  CHECK(plantest::loadError(plantest::simplePlan(), 2) == "t.json: cannot load rank 2: the plan has 2 ranks");
}

TEST_CASE("a summary holds the header, chunk counts and reduce ops", "[plan][loader]") {
  json j = plantest::simplePlan();
  j["gpus"][1]["threadblocks"][0]["ops"][5]["reduce_op"] = "max";
  const PlanSummary s = loadPlanSummaryJson(j.dump(), "s.json");
  CHECK(s.header.name == "simple");
  CHECK(s.header.source == "s.json");
  CHECK(s.inputChunks == 4);
  CHECK(s.outputChunks == 4);
  CHECK(s.maxScratchChunks == 4);
  CHECK(s.numThreadblocks == 4);
  const uint32_t sumMax =
      (1u << static_cast<unsigned>(PlanReduceOp::Sum)) | (1u << static_cast<unsigned>(PlanReduceOp::Max));
  CHECK(s.header.reduceOps == sumMax);
  CHECK(plantest::load(j)->header.reduceOps == sumMax);
  CHECK(plantest::load(j, 0)->header.reduceOps == sumMax);  // rank 1's max is found while skipping it
  // A reducing op without reduce_op reduces with sum (the DSL's default).
  json k = plantest::simplePlan();
  for (auto& g : k["gpus"]) g["threadblocks"][0]["ops"][5]["reduce_op"] = "min";
  CHECK(loadPlanSummaryJson(k.dump(), "k.json").header.reduceOps ==
        ((1u << static_cast<unsigned>(PlanReduceOp::Min)) | (1u << static_cast<unsigned>(PlanReduceOp::Sum))));
  for (auto& g : k["gpus"]) {
    g["threadblocks"][0]["ops"][10]["reduce_op"] = "min";
    g["threadblocks"][1]["ops"][2]["reduce_op"] = "min";
  }
  CHECK(loadPlanSummaryJson(k.dump(), "k.json").header.reduceOps == (1u << static_cast<unsigned>(PlanReduceOp::Min)));
}

TEST_CASE("optional keys take their defaults and our additions are read", "[plan][loader]") {
  json j = plantest::minimalPlan("m", "allgather", 4, 1, 4, false);
  PlanPtr plan = plantest::load(j);
  CHECK(plan->header.numThreadsPerBlock == 1024);
  CHECK(plan->header.bufferAlignment == 16);
  CHECK(plan->header.minMessageSize == 0);
  CHECK(plan->header.maxMessageSize == UINT64_MAX);
  CHECK_FALSE(plan->header.useDoubleScratchBuffer);
  CHECK_FALSE(plan->header.reuseResources);
  CHECK(plan->header.formatVersion == 0);
  CHECK(plan->header.tags.empty());
  CHECK(plan->header.root == 0);
  CHECK(plan->header.nRanksPerNode == 0);
  CHECK(plan->header.reduceOps == 0);

  j["format_version"] = 1;
  j["tags"] = {"fast", "nvlink"};
  j["root"] = 3;
  j["nranks_per_node"] = 2;
  j["min_message_size"] = 1024;
  j["max_message_size"] = 18446744073709551615ull;
  j["reuse_resources"] = true;
  j["use_double_scratch_buffer"] = true;
  j["buffer_alignment"] = 128;
  plan = plantest::load(j);
  CHECK(plan->header.formatVersion == 1);
  CHECK(plan->header.tags == std::vector<std::string>{"fast", "nvlink"});
  CHECK(plan->header.root == 3);
  CHECK(plan->header.nRanksPerNode == 2);
  CHECK(plan->header.minMessageSize == 1024);
  CHECK(plan->header.maxMessageSize == UINT64_MAX);
  CHECK(plan->header.reuseResources);
  CHECK(plan->header.useDoubleScratchBuffer);
  CHECK(plan->header.bufferAlignment == 128);
}

TEST_CASE("unknown keys are ignored at every level", "[plan][loader]") {
  json j = plantest::simplePlan();
  j["compiler"] = {{"version", "9"}};
  j["gpus"][0]["note"] = "x";
  j["gpus"][0]["channels"][0]["hint"] = 1;
  j["gpus"][0]["remote_buffers"][0]["hint"] = 1;
  j["gpus"][0]["threadblocks"][0]["hint"] = {1, 2};
  j["gpus"][0]["threadblocks"][0]["channels"][0]["hint"] = 1;
  j["gpus"][0]["threadblocks"][0]["ops"][1]["comment"] = "copy";
  j["gpus"][0]["threadblocks"][0]["ops"][1]["src_buff"][0]["hint"] = true;
  PlanPtr a = plantest::load(j);
  PlanPtr b = plantest::load(plantest::simplePlan());
  checkSameRank(a->ranks[0], b->ranks[0]);
}

TEST_CASE("channel and buffer ids translate through threadblock lists", "[plan][loader]") {
  // Three ranks in a full mesh; rank 0's threadblock lists its memory channels as [1, 0].
  json j = plantest::minimalPlan("mesh", "allreduce", 3, 3, 3, false);
  for (int r = 0; r < 3; ++r) {
    j["gpus"][r]["remote_buffers"] =
        json::array({{{"rank", (r + 1) % 3}, {"type", "o"}, {"access_channel_types", {"memory"}}},
                     {{"rank", (r + 2) % 3}, {"type", "o"}, {"access_channel_types", {"memory"}}}});
  }
  auto& tb = j["gpus"][0]["threadblocks"][0];
  tb["channels"] = json::array({{{"channel_type", "memory"}, {"channel_ids", {1, 0}}}});
  tb["remote_buffer_refs"] = json::array({{{"access_channel_type", "memory"}, {"remote_buffer_ids", {1, 0}}}});
  tb["ops"].push_back({{"name", "signal"}, {"channel_type", "memory"}, {"channel_ids", {0}}});
  tb["ops"].push_back({{"name", "put"},
                       {"channel_type", "memory"},
                       {"src_buff", {{{"type", "i"}, {"index", 2}, {"size", 1}}}},
                       {"dst_buff", {{{"buffer_id", 0}, {"index", 2}, {"size", 1}}}}});
  PlanPtr plan = plantest::load(j);
  const RankPlan& r = plan->ranks[0];
  CHECK(ids(r, 0, 1) == std::vector<uint32_t>{1});  // threadblock channel 0 is rank-level memory channel 1
  CHECK(r.memoryChannels[1].peer == 2);
  CHECK(dst(r, 0, 2, 0).id == 1);  // threadblock remote buffer 0 is rank-level remote buffer 1 (rank 2's output)
  CHECK(r.remoteBuffers[1].rank == 2);
}

TEST_CASE("unpaired channels get partners; pair indexes count per peer", "[plan][loader]") {
  // Rank 0 lists two memory channels to rank 1 and one to rank 2; rank 1 lists none, rank 2 one back.
  json j = plantest::minimalPlan("pairs", "custom", 3, 1, 0, false);
  j["gpus"][0]["channels"] = json::array({{{"channel_type", "memory"}, {"connected_to", {1, 2, 1}}}});
  j["gpus"][1]["channels"] = json::array();
  j["gpus"][2]["channels"] = json::array({{{"channel_type", "memory"}, {"connected_to", {0}}}});
  PlanPtr plan = plantest::load(j);
  const auto& c0 = plan->ranks[0].memoryChannels;
  REQUIRE(c0.size() == 3);
  CHECK((c0[0].peer == 1 && c0[0].pairIndex == 0 && !c0[0].implicit));
  CHECK((c0[1].peer == 2 && c0[1].pairIndex == 0 && !c0[1].implicit));
  CHECK((c0[2].peer == 1 && c0[2].pairIndex == 1 && !c0[2].implicit));
  const auto& c1 = plan->ranks[1].memoryChannels;
  REQUIRE(c1.size() == 2);
  CHECK((c1[0].peer == 0 && c1[0].pairIndex == 0 && c1[0].implicit));
  CHECK((c1[1].peer == 0 && c1[1].pairIndex == 1 && c1[1].implicit));
  CHECK(plan->ranks[2].memoryChannels.size() == 1);
  // the other ranks' declarations are paired the same way in onlyRank mode
  CHECK(plantest::load(j, 0)->ranks[1].memoryChannels.size() == 2);
}

TEST_CASE("op names decode through the one table", "[plan][loader]") {
  CHECK(numOpTypes() == static_cast<size_t>(OpType::Pipeline) + 1);
  for (size_t i = 0; i < numOpTypes(); ++i) {
    OpType t;
    REQUIRE(opTypeFromName(std::string_view(opTypeName(static_cast<OpType>(i))), &t));
    CHECK(static_cast<size_t>(t) == i);
  }
  OpType t;
  CHECK_FALSE(opTypeFromName(std::string_view("putt"), &t));
  CHECK(isPacketOp(OpType::PutPackets));
  CHECK_FALSE(isPacketOp(OpType::Put));
  CHECK(std::string(opTypeName(OpType::ReduceCopySendPackets)) == "recspkt");
}
