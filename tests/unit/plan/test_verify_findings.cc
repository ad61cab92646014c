// The verifier's findings on small hand-written plans: each way of breaking a
// correct plan is named, with rank, threadblock, op, buffer and chunk (and the
// DSL line when the plan carries it).
#include <catch2/catch.hpp>
#include <string>

#include "plan/verify/verify.hpp"
#include "plan_test_util.hpp"
#include "verify_test_plans.hpp"

using namespace verifytest;
using mscclpp::plan::verify::Finding;
using mscclpp::plan::verify::FindingKind;

namespace {

const Finding& first(const mscclpp::plan::verify::Result& r, FindingKind kind) {
  for (const auto& f : r.findings)
    if (f.kind == kind) return f;
  FAIL("no finding of the kind: " << text(r));
  return r.findings.front();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a correct put/signal/wait allgather is proven for every size", "[verify][findings]") {
  const auto r = verify(allgatherPut("ok"));
  INFO(text(r));
  CHECK(r.proven);
  CHECK(r.sizesStandForAll);
  CHECK(r.chunkSizes.size() == 1);
}

TEST_CASE("race: no nop between the put and its signal", "[verify][findings]") {
  const auto r = verify(allgatherPut("no-nop-before-signal"));
  INFO(text(r));
  const Finding& f = first(r, FindingKind::Race);
  // The peer's host reads the output the put wrote; the signal after the put has no barrier before it.
  CHECK(contains(f.message, "with no nop between"));
  CHECK(f.other.name == "put");
  CHECK(f.other.op == 6);
  CHECK(contains(f.buffer, "output"));
  CHECK(contains(f.chunks, "chunk "));
}

TEST_CASE("race: nothing orders the peer's put before the host read", "[verify][findings]") {
  const auto r = verify(allgatherPut("no-signal-wait"));
  INFO(text(r));
  const Finding& f = first(r, FindingKind::Race);
  CHECK((f.at.name == "put" || f.other.name == "put"));
  CHECK(contains(f.buffer, "output"));
}

TEST_CASE("wrong result: a put into the wrong chunk", "[verify][findings]") {
  const auto r = verify(allgatherPut("shifted-put"));
  INFO(text(r));
  const Finding& f = first(r, FindingKind::WrongResult);
  CHECK(contains(f.message, "allgather needs input chunk 0 of rank"));
  CHECK(f.at.valid());
  CHECK(contains(f.chunks, "chunk "));
}

TEST_CASE("leftover: a signal no wait consumes", "[verify][findings]") {
  const auto r = verify(allgatherPut("extra-signal"));
  INFO(text(r));
  const Finding& f = first(r, FindingKind::Leftover);
  CHECK(f.at.rank == 0);
  CHECK(f.at.name == "signal");
  CHECK(contains(f.message, "left over at the end of every call"));
}

TEST_CASE("deadlock: both ranks wait before they signal", "[verify][findings]") {
  const auto r = verify(allgatherPut("wait-first"));
  INFO(text(r));
  const Finding& f = first(r, FindingKind::Deadlock);
  CHECK(contains(f.message, "cycle"));
  CHECK(f.at.name == "rlxwait");
}

TEST_CASE("deadlock: a wait nobody signals", "[verify][findings]") {
  auto plan = allgatherPut("ok");
  plan["gpus"][1]["threadblocks"][0]["ops"].erase(8);  // rank 1's signal
  const auto r = verify(plan);
  INFO(text(r));
  const Finding& f = first(r, FindingKind::Deadlock);
  CHECK(f.at.rank == 0);
  CHECK(f.at.name == "wait");
  CHECK(contains(f.message, "can never complete"));
}

TEST_CASE("findings name the DSL source line when the plan carries it", "[verify][findings]") {
  auto plan = allgatherPut("no-nop-before-signal");
  for (int r = 0; r < 2; ++r) {
    auto& ops = plan["gpus"][r]["threadblocks"][0]["ops"];
    for (size_t i = 0; i < ops.size(); ++i) ops[i]["source"] = "allgather.py:" + std::to_string(10 + i);
  }
  const auto r = verify(plan);
  const Finding& f = first(r, FindingKind::Race);
  CHECK(f.other.source == "allgather.py:16");
  CHECK(contains(mscclpp::plan::verify::formatResult(*plantest::load(plan), r), "(put, allgather.py:16)"));
}

TEST_CASE("LL packets: one-way traffic reuses the last call's scratch", "[verify][findings][ll]") {
  // Rank 0 broadcasts its input as packets into rank 1's scratch; rank 1
  // unpacks. Nothing tells rank 0 that rank 1 has read the packets before the
  // next call overwrites them.
  for (bool doubleScratch : {false, true}) {
    INFO("double scratch " << doubleScratch);
    auto plan = twoRankPlan(
        "ll_broadcast", "broadcast", false, "LL", 1, 1, 1,
        {data("ppkt", {local("i", 0)}, {remote(2, 0)}, true), data("copy", {local("i", 0)}, {local("o", 0)})},
        {data("upkt", {local("s", 0)}, {local("o", 0)})});
    plan["use_double_scratch_buffer"] = doubleScratch;
    const auto r = verify(plan);
    INFO(text(r));
    const Finding& f = first(r, FindingKind::Race);
    CHECK(contains(f.message, "consecutive calls"));
    CHECK(contains(f.buffer, "scratch (LL packets"));
    if (doubleScratch) CHECK(contains(f.message, "double scratch alternates halves"));
  }
}

TEST_CASE("LL packets nobody writes in the call: the read waits forever", "[verify][findings][ll]") {
  auto plan =
      twoRankPlan("ll_nowrite", "broadcast", false, "LL", 1, 1, 1, {data("copy", {local("i", 0)}, {local("o", 0)})},
                  {data("upkt", {local("s", 0)}, {local("o", 0)})});
  const auto r = verify(plan);
  INFO(text(r));
  const Finding& f = first(r, FindingKind::Deadlock);
  CHECK(f.at.rank == 1);
  CHECK(f.at.name == "upkt");
  CHECK(contains(f.message, "no op of any rank writes in the same call"));
}

TEST_CASE("sendrecv: the output must be another rank's whole input", "[verify][findings]") {
  auto make = [](bool fromPeer) {
    std::vector<json> ops[2];
    for (int r = 0; r < 2; ++r) {
      ops[r] = {sync("rlxsignal"), sync("rlxwait"), op("nop")};
      if (fromPeer)
        ops[r].push_back(data("put", {local("i", 0)}, {remote(1, 0)}, true));
      else
        ops[r].push_back(data("copy", {local("i", 0)}, {local("o", 0)}));
      ops[r].insert(ops[r].end(), {op("nop"), sync("signal"), sync("wait"), op("nop")});
    }
    return twoRankPlan("sendrecv", "sendrecv", false, "Simple", 1, 1, 0, ops[0], ops[1]);
  };
  const auto good = verify(make(true));
  INFO(text(good));
  CHECK(good.proven);
  const auto bad = verify(make(false));
  INFO(text(bad));
  CHECK(contains(first(bad, FindingKind::WrongResult).message, "one other rank's whole input"));
}

TEST_CASE("semaphores: releases without acquires are left over", "[verify][findings]") {
  auto plan = allgatherPut("ok");
  for (int r = 0; r < 2; ++r) {
    plan["gpus"][r]["semaphores"] = json::array({{{"init_value", 0}}});
    plan["gpus"][r]["threadblocks"][0]["ops"].push_back({{"name", "sem_release"}, {"semaphore_ids", {0}}});
  }
  const auto r = verify(plan);
  INFO(text(r));
  CHECK(contains(first(r, FindingKind::Leftover).message, "semaphore 0"));
}

TEST_CASE("thread-block groups: every slice arrangement is checked", "[verify][findings][tbg]") {
  // One rank's allreduce is a copy; three threadblocks copy slices 0, 1, 2 of 3
  // of the chunk. The broken plan copies slice 1 twice and never slice 2, which
  // is empty at chunks of 1 or 2 alignment units.
  auto make = [](int lastSlice) {
    json tbs = json::array();
    for (int t = 0; t < 3; ++t) {
      json copy = data("copy", {local("i", 0)}, {local("o", 0)});
      copy["tbg_info"] = {{"tb_id", t == 2 ? lastSlice : t}, {"tbg_size", 3}};
      tbs.push_back({{"id", t}, {"ops", {copy}}, {"channels", json::array()}});
    }
    json rank = {{"id", 0},
                 {"input_chunks", 1},
                 {"output_chunks", 1},
                 {"scratch_chunks", 0},
                 {"channels", json::array()},
                 {"remote_buffers", json::array()},
                 {"threadblocks", tbs}};
    return json{{"name", "tbg_copy"},
                {"collective", "allreduce"},
                {"protocol", "Simple"},
                {"inplace", false},
                {"gpus", {rank}}};
  };
  const auto good = verify(make(2));
  INFO(text(good));
  CHECK(good.proven);
  CHECK(good.sizesStandForAll);
  CHECK(good.chunkSizes.size() > 50);  // u = 1 .. 2 * 3^3 + 3 alignment units
  const auto bad = verify(make(1));
  INFO(text(bad));
  const Finding& f = first(bad, FindingKind::WrongResult);
  CHECK(f.chunkBytes >= 3 * 16);  // at 1 or 2 units slice 2 is empty and the plan is right
  CHECK(contains(f.message, "nothing from any input"));
  CHECK(verifytest::has(bad, FindingKind::Race));  // the two copies of slice 1 write the same bytes
}
