// Every plan op on its own, in a minimal plan built in code, run on the CPU
// backend and checked value by value.
#include <catch2/catch.hpp>

#include "exec_test_util.hpp"
#include "executor/emulation/emulator.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

const json kMem01 = json::array({{{"channel_type", "memory"}, {"connected_to", {1}}}});
const json kMem10 = json::array({{{"channel_type", "memory"}, {"connected_to", {0}}}});
const json kTbMem0 = json::array({{{"channel_type", "memory"}, {"channel_ids", {0}}}});
const json kTbPort0 = json::array({{{"channel_type", "port"}, {"channel_ids", {0}}}});
const json kPort01 = json::array({{{"channel_type", "port"}, {"connected_to", {1}}}});
const json kPort10 = json::array({{{"channel_type", "port"}, {"connected_to", {0}}}});

json remoteBuf(int rank, const char* type, const char* access = "memory") {
  return {{"rank", rank}, {"type", type}, {"access_channel_types", {access}}};
}
json rbRefs(const char* access = "memory") {
  return json::array({{{"access_channel_type", access}, {"remote_buffer_ids", {0}}}});
}
json mem(json ids = {0}) { return {{"channel_type", "memory"}, {"channel_ids", ids}}; }
json port(json ids = {0}) { return {{"channel_type", "port"}, {"channel_ids", ids}}; }

float f(uint64_t i, int rank) { return static_cast<float>(1 + (i % 13) + 100 * rank); }

}  // namespace

TEST_CASE("copy and nop: local copy between chunks", "[exec][ops]") {
  json p = planJson("copy", "custom", "Simple", false,
                    {gpu(0, 2, 2, 0,
                         {threadblock(0, {op("copy", {lref("i", 0)}, {lref("o", 1)}), op("nop"),
                                          op("copy", {lref("i", 1)}, {lref("o", 0)})})})});
  ThreadRun run(loadPlan(p), 2 * 1040, 2 * 1040);
  run.fillInput<float>(0, [](uint64_t i) { return f(i, 0); });
  run.poisonOutputs();
  REQUIRE(run.launch() == "");
  const uint64_t n = 1040 / 4;
  for (uint64_t i = 0; i < n; ++i) {
    REQUIRE(run.output<float>(0)[n + i] == f(i, 0));
    REQUIRE(run.output<float>(0)[i] == f(n + i, 0));
  }
}

TEST_CASE("re: local reduction of three sources with each native op", "[exec][ops]") {
  json p = planJson("re", "custom", "Simple", false,
                    {gpu(0, 3, 1, 0,
                         {threadblock(0, {op("re", {lref("i", 0), lref("i", 1), lref("i", 2)}, {lref("o", 0)},
                                             {{"reduce_op", "sum"}})})})});
  for (ReduceOp rop : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min}) {
    ThreadRun run(loadPlan(p), 3 * 64, 64, DataType::Int32);
    run.fillInput<int32_t>(0, [](uint64_t i) { return static_cast<int32_t>((i * 7) % 11) - 5; });
    REQUIRE(run.launch(DataType::Int32, rop) == "");
    for (uint64_t i = 0; i < 16; ++i) {
      int32_t a = run.input<int32_t>(0)[i], b = run.input<int32_t>(0)[16 + i], c = run.input<int32_t>(0)[32 + i];
      int32_t expect = rop == ReduceOp::Sum    ? a + b + c
                       : rop == ReduceOp::Prod ? a * b * c
                       : rop == ReduceOp::Max  ? std::max({a, b, c})
                                               : std::min({a, b, c});
      REQUIRE(run.output<int32_t>(0)[i] == expect);
    }
  }
}

TEST_CASE("put, signal and wait over a memory channel", "[exec][ops]") {
  bool relaxed = GENERATE(false, true);
  const char* sig = relaxed ? "rlxsignal" : "signal";
  const char* wt = relaxed ? "rlxwait" : "wait";
  json p = planJson(
      "put", "custom", "Simple", false,
      {gpu(0, 1, 1, 0,
           {threadblock(0, {op("put", {lref("i", 0)}, {rref(0, 0)}, mem()), op("nop"), op(sig, {}, {}, mem())}, kTbMem0,
                        rbRefs())},
           kMem01, {remoteBuf(1, "o")}),
       gpu(1, 1, 1, 0,
           {threadblock(0, {op(wt, {}, {}, mem()), op("nop"), op("copy", {lref("o", 0)}, {lref("i", 0)})}, kTbMem0)},
           kMem10)});
  ThreadRun run(loadPlan(p), 4096, 4096);
  run.fillInput<float>(0, [](uint64_t i) { return f(i, 0); });
  for (int it = 0; it < 3; ++it) {
    run.poisonOutputs();
    REQUIRE(run.launch() == "");
    for (uint64_t i = 0; i < 1024; ++i) {
      REQUIRE(run.output<float>(1)[i] == f(i, 0));
      REQUIRE(run.input<float>(1)[i] == f(i, 0));
    }
  }
}

TEST_CASE("get keeps the remote and the local offset apart", "[exec][ops]") {
  // Remote src index 1, local dst index 0: a get must not swap the two offsets.
  json p = planJson("get", "custom", "Simple", false,
                    {gpu(0, 2, 2, 0, {threadblock(0, {op("signal", {}, {}, mem())}, kTbMem0)}, kMem01),
                     gpu(1, 2, 2, 0,
                         {threadblock(0, {op("wait", {}, {}, mem()), op("get", {rref(0, 1)}, {lref("o", 0)}, mem())},
                                      kTbMem0, rbRefs())},
                         kMem10, {remoteBuf(0, "i")})});
  ThreadRun run(loadPlan(p), 2 * 2048, 2 * 2048);
  run.fillInput<float>(0, [](uint64_t i) { return f(i, 0); });
  run.poisonOutputs();
  REQUIRE(run.launch() == "");
  for (uint64_t i = 0; i < 512; ++i) REQUIRE(run.output<float>(1)[i] == f(512 + i, 0));
}

TEST_CASE("res, rre and rres reduce and store across ranks", "[exec][ops]") {
  // rank 0: o0 = i0 + i1 locally and into rank 1's o0 (res); rank 1 then reads
  // rank 0's o0 and adds its own i0 into o1 (rre) and stores the same into rank
  // 0's o1 (rres).
  json p = planJson(
      "res", "custom", "Simple", false,
      {gpu(0, 2, 2, 0,
           {threadblock(0,
                        {op("res", {lref("i", 0), lref("i", 1)}, {lref("o", 0), rref(0, 0)},
                            {{"channel_type", "memory"}, {"reduce_op", "sum"}}),
                         op("nop"), op("signal", {}, {}, mem()), op("wait", {}, {}, mem())},
                        kTbMem0, rbRefs())},
           kMem01, {remoteBuf(1, "o")}),
       gpu(1, 2, 2, 0,
           {threadblock(0,
                        {op("wait", {}, {}, mem()),
                         op("rre", {lref("i", 0), rref(0, 0)}, {lref("o", 1)},
                            {{"channel_type", "memory"}, {"reduce_op", "sum"}}),
                         op("rres", {lref("i", 1), rref(0, 0)}, {lref("i", 1), rref(1, 1)},
                            {{"channel_type", "memory"}, {"reduce_op", "sum"}}),
                         op("nop"), op("signal", {}, {}, mem())},
                        kTbMem0, json::array({{{"access_channel_type", "memory"}, {"remote_buffer_ids", {0, 1}}}}))},
           kMem10, {remoteBuf(0, "o"), remoteBuf(0, "o")})});
  ThreadRun run(loadPlan(p), 2 * 1024, 2 * 1024);
  for (int r = 0; r < 2; ++r) run.fillInput<float>(r, [r](uint64_t i) { return f(i, r); });
  std::vector<float> in1(run.input<float>(1), run.input<float>(1) + 512);
  run.poisonOutputs();
  REQUIRE(run.launch() == "");
  for (uint64_t i = 0; i < 256; ++i) {
    float s0 = f(i, 0) + f(256 + i, 0);
    REQUIRE(run.output<float>(0)[i] == s0);
    REQUIRE(run.output<float>(1)[i] == s0);
    REQUIRE(run.output<float>(1)[256 + i] == in1[i] + s0);
    REQUIRE(run.input<float>(1)[256 + i] == in1[256 + i] + s0);
    REQUIRE(run.output<float>(0)[256 + i] == in1[256 + i] + s0);
  }
}

TEST_CASE("packet ops: ppkt, cpkt, rppkt, upkt and the reductions", "[exec][ops][packets]") {
  PacketType pt = GENERATE(PacketType::LL16, PacketType::LL8);
  // rank 0 puts its i0 as packets into rank 1's s0 (ppkt), and copies its i1 to
  // local packets s1 (cpkt) which it forwards to rank 1's s1 (rppkt). Rank 1:
  // o0 = unpack(s0) (upkt); o1 = i0 + pkts(s0) + pkts(s1) (repkt); recspkt: i1
  // = i1 + pkts(s1), copy as packets into its s2 and into rank 0's s2; rank 0
  // unpacks s2 into o0; rank 1 recpkt: o2 = i2 + pkts(s2) and packets to s3.
  json p = planJson(
      "packets", "custom", "LL", false,
      {gpu(0, 3, 3, 3,
           {threadblock(0,
                        {op("ppkt", {lref("i", 0)}, {rref(0, 0)}, {{"channel_type", "memory"}}),
                         op("cpkt", {lref("i", 1)}, {lref("s", 1)}),
                         op("rppkt", {lref("s", 1)}, {rref(0, 1)}, {{"channel_type", "memory"}}),
                         op("upkt", {lref("s", 2)}, {lref("o", 0)})},
                        kTbMem0, rbRefs())},
           kMem01, {remoteBuf(1, "s")}),
       gpu(1, 3, 3, 4,
           {threadblock(
               0,
               {op("upkt", {lref("s", 0)}, {lref("o", 0)}),
                op("repkt", {lref("i", 0), lref("s", 0), lref("s", 1)}, {lref("o", 1)}, {{"reduce_op", "sum"}}),
                op("recspkt", {lref("i", 1), lref("s", 1)}, {lref("i", 1), lref("s", 2), rref(0, 2)},
                   {{"channel_type", "memory"}, {"reduce_op", "sum"}}),
                op("recpkt", {lref("i", 2), lref("s", 2)}, {lref("o", 2), lref("s", 3)}, {{"reduce_op", "sum"}}),
                op("upkt", {lref("s", 3)}, {lref("i", 0)})},
               kTbMem0, rbRefs())},
           kMem10, {remoteBuf(0, "s")})});
  ThreadRun run(loadPlan(p), 3 * 528, 3 * 528);  // 132 floats per chunk: LL16 payloads split evenly
  const uint64_t n = 132;
  for (int it = 0; it < 3; ++it) {  // flags advance; stale packets of the last launch must not pass
    for (int r = 0; r < 2; ++r) run.fillInput<float>(r, [r, it](uint64_t i) { return f(i, r) + it; });
    std::vector<float> in1(run.input<float>(1), run.input<float>(1) + 3 * n);
    run.poisonOutputs();
    REQUIRE(run.launch(DataType::Float32, ReduceOp::Sum, pt) == "");
    for (uint64_t i = 0; i < n; ++i) {
      const float a = f(i, 0) + it, b = f(n + i, 0) + it;
      REQUIRE(run.output<float>(1)[i] == a);
      REQUIRE(run.output<float>(1)[n + i] == in1[i] + a + b);
      const float s2 = in1[n + i] + b;
      REQUIRE(run.input<float>(1)[n + i] == s2);
      REQUIRE(run.output<float>(0)[i] == s2);
      REQUIRE(run.output<float>(1)[2 * n + i] == in1[2 * n + i] + s2);
      REQUIRE(run.input<float>(1)[i] == in1[2 * n + i] + s2);
    }
  }
}

TEST_CASE("respkt sends the reduction as packets to a peer", "[exec][ops][packets]") {
  json p = planJson("respkt", "custom", "LL", false,
                    {gpu(0, 1, 1, 2,
                         {threadblock(0,
                                      {op("ppkt", {lref("i", 0)}, {rref(0, 0)}, {{"channel_type", "memory"}}),
                                       op("upkt", {lref("s", 1)}, {lref("o", 0)})},
                                      kTbMem0, rbRefs())},
                         kMem01, {remoteBuf(1, "s")}),
                     gpu(1, 1, 1, 2,
                         {threadblock(0,
                                      {op("respkt", {lref("i", 0), lref("s", 0)}, {lref("o", 0), rref(0, 1)},
                                          {{"channel_type", "memory"}, {"reduce_op", "sum"}})},
                                      kTbMem0, rbRefs())},
                         kMem10, {remoteBuf(0, "s")})});
  ThreadRun run(loadPlan(p), 1024, 1024, DataType::Float64);
  for (int r = 0; r < 2; ++r) {
    double* in = run.input<double>(r);
    for (int i = 0; i < 128; ++i) in[i] = 0.5 * i + r;
  }
  for (PacketType pt : {PacketType::LL16, PacketType::LL8}) {
    run.poisonOutputs();
    REQUIRE(run.launch(DataType::Float64, ReduceOp::Sum, pt) == "");
    for (int i = 0; i < 128; ++i) {
      REQUIRE(run.output<double>(0)[i] == i + 1.0);
      REQUIRE(run.output<double>(1)[i] == i + 1.0);
    }
  }
}

TEST_CASE("port channel ops through the proxy", "[exec][ops][port]") {
  json p = planJson(
      "port", "custom", "LL", false,
      {gpu(0, 4, 4, 2,
           {threadblock(0,
                        {op("put", {lref("i", 0)}, {rref(0, 0)}, port()), op("signal", {}, {}, port()),
                         op("flush", {}, {}, port()), op("pws", {lref("i", 1)}, {rref(0, 1)}, port()),
                         op("pwsf", {lref("i", 2)}, {rref(0, 2)}, port()), op("cpkt", {lref("i", 3)}, {lref("s", 0)}),
                         op("ppkt", {lref("s", 0)}, {rref(1, 1)}, port())},
                        kTbPort0, json::array({{{"access_channel_type", "port"}, {"remote_buffer_ids", {0, 1}}}}))},
           kPort01, {remoteBuf(1, "o", "port"), remoteBuf(1, "s", "port")}),
       gpu(1, 4, 4, 2,
           {threadblock(0,
                        {op("wait", {}, {}, port()), op("wait", {}, {}, port()), op("wait", {}, {}, port()),
                         op("upkt", {lref("s", 1)}, {lref("o", 3)})},
                        kTbPort0)},
           kPort10)});
  ThreadRun run(loadPlan(p), 4 * 256, 4 * 256);
  run.fillInput<float>(0, [](uint64_t i) { return f(i, 0); });
  for (int it = 0; it < 3; ++it) {
    run.poisonOutputs();
    REQUIRE(run.launch() == "");
    for (uint64_t i = 0; i < 256; ++i) REQUIRE(run.output<float>(1)[i] == f(i, 0));
  }
}

TEST_CASE("barrier and semaphores order threadblocks of one rank", "[exec][ops]") {
  json p = planJson(
      "sync", "custom", "Simple", false,
      {gpu(0, 2, 2, 2,
           {threadblock(
                0, {op("copy", {lref("i", 0)}, {lref("s", 0)}),
                    op("barrier", {}, {}, {{"barrier_id", 0}, {"num_threadblocks", 2}}),
                    op("sem_acquire", {}, {}, {{"semaphore_ids", {0}}}), op("copy", {lref("s", 1)}, {lref("o", 1)})}),
            threadblock(1, {op("barrier", {}, {}, {{"barrier_id", 0}, {"num_threadblocks", 2}}),
                            op("copy", {lref("s", 0)}, {lref("o", 0)}), op("copy", {lref("i", 1)}, {lref("s", 1)}),
                            op("sem_release", {}, {}, {{"semaphore_ids", {0}}})})},
           json::array(), json::array(), json::array({{{"init_value", 0}}}))});
  ThreadRun run(loadPlan(p), 2 * 4096, 2 * 4096);
  run.fillInput<float>(0, [](uint64_t i) { return f(i, 0); });
  for (int it = 0; it < 5; ++it) {
    run.poisonOutputs();
    REQUIRE(run.launch() == "");
    for (uint64_t i = 0; i < 2048; ++i) REQUIRE(run.output<float>(0)[i] == f(i, 0));
  }
}

TEST_CASE("switch channel ops: glre, glres, gstore, gstorepkt", "[exec][ops][switch]") {
  json swI = {{"channel_type", "switch"}, {"buffer_type", "i"}, {"rank_groups", {{{"size", 3}, {"ranks", {0, 1, 2}}}}}};
  json swS = {{"channel_type", "switch"}, {"buffer_type", "s"}, {"rank_groups", {{{"size", 3}, {"ranks", {0, 1, 2}}}}}};
  json swO = {{"channel_type", "switch"}, {"buffer_type", "o"}, {"rank_groups", {{{"size", 3}, {"ranks", {0, 1, 2}}}}}};
  json tbSw = json::array({{{"channel_type", "switch"}, {"channel_ids", {0, 1, 2}}}});
  json gpus = json::array();
  for (int r = 0; r < 3; ++r) {
    json ops = json::array();
    // glre: o[r] = sum over ranks of i[r]; glres: every rank's o[3] chunk r... (rank r reduces chunk r)
    ops.push_back(op("glre", {mref(0, r)}, {lref("o", r)}, {{"channel_type", "switch"}, {"reduce_op", "sum"}}));
    ops.push_back(op("glres", {mref(0, 3 + r)}, {mref(2, 3 + r)}, {{"channel_type", "switch"}, {"reduce_op", "sum"}}));
    if (r == 0) {
      ops.push_back(op("gstore", {lref("i", 6)}, {mref(2, 6)}, {{"channel_type", "switch"}}));
      ops.push_back(op("cpkt", {lref("i", 7)}, {lref("s", 0)}));
      ops.push_back(op("gstorepkt", {lref("s", 0)}, {mref(1, 0)}, {{"channel_type", "switch"}}));
    }
    ops.push_back(op("upkt", {lref("s", 0)}, {lref("o", 7)}));
    gpus.push_back(gpu(r, 8, 8, 1, {threadblock(0, ops, tbSw)}, json::array({swI, swS, swO})));
  }
  json p = planJson("switch", "custom", "LL", false, gpus);
  ThreadRun run(loadPlan(p), 8 * 64, 8 * 64);
  for (int r = 0; r < 3; ++r) run.fillInput<float>(r, [r](uint64_t i) { return f(i, r); });
  run.poisonOutputs();
  REQUIRE(run.launch() == "");
  // Only chunks no rank writes concurrently are checked: glre results (chunk r
  // of rank r), glres results (chunks 3..5 on every rank, written by their
  // owner), gstore (6) and gstorepkt (7).
  for (int r = 0; r < 3; ++r) {
    for (uint64_t i = 0; i < 16; ++i) {
      const uint64_t e = r * 16 + i;
      REQUIRE(run.output<float>(r)[e] == f(e, 0) + f(e, 1) + f(e, 2));
      for (int c = 3; c < 6; ++c)
        REQUIRE(run.output<float>(r)[c * 16 + i] == f(c * 16 + i, 0) + f(c * 16 + i, 1) + f(c * 16 + i, 2));
      REQUIRE(run.output<float>(r)[6 * 16 + i] == f(6 * 16 + i, 0));
      REQUIRE(run.output<float>(r)[7 * 16 + i] == f(7 * 16 + i, 0));
    }
  }
}

TEST_CASE("pipeline: units smaller than the chunk, partial last unit", "[exec][ops][pipeline]") {
  // A chunk of 1040 bytes in units of 96: 10 full units and a 80-byte tail.
  json p = planJson(
      "pipe", "custom", "Simple", false,
      {gpu(0, 2, 2, 0,
           {threadblock(0,
                        {op("pipeline", {}, {},
                            {{"iter_context", {{"unit_size", 96}, {"num_chunks", 1}}},
                             {"ops",
                              {op("copy", {lref("i", 0)}, {lref("o", 1)}),
                               op("re", {lref("i", 0), lref("i", 1)}, {lref("o", 0)}, {{"reduce_op", "max"}})}}})})})});
  ThreadRun run(loadPlan(p), 2 * 1040, 2 * 1040);
  run.fillInput<float>(0, [](uint64_t i) { return f(i * 7, 0); });
  run.poisonOutputs();
  REQUIRE(run.launch(DataType::Float32, ReduceOp::Max) == "");
  for (uint64_t i = 0; i < 260; ++i) {
    REQUIRE(run.output<float>(0)[260 + i] == f(i * 7, 0));
    REQUIRE(run.output<float>(0)[i] == std::max(f(i * 7, 0), f((260 + i) * 7, 0)));
  }
}

TEST_CASE("thread-block groups slice by alignment unit, rest first", "[exec][ops][tbg]") {
  // 3 blocks copy one 1040-byte chunk (65 units of 16 bytes: slices of 22, 22 and 21 units).
  const int g = GENERATE(2, 3, 5);
  json tbs = json::array();
  for (int j = 0; j < g; ++j) {
    tbs.push_back(
        threadblock(j, {op("copy", {lref("i", 0)}, {lref("o", 0)}, {{"tbg_info", {{"tb_id", j}, {"tbg_size", g}}}}),
                        op("re", {lref("i", 0), lref("i", 1)}, {lref("o", 1)},
                           {{"reduce_op", "sum"}, {"tbg_info", {{"tb_id", j}, {"tbg_size", g}}}})}));
  }
  json p = planJson("tbg", "custom", "Simple", false, {gpu(0, 2, 2, 0, tbs)});
  ThreadRun run(loadPlan(p), 2 * 1040, 2 * 1040);
  run.fillInput<float>(0, [](uint64_t i) { return f(i, 0); });
  run.poisonOutputs();
  REQUIRE(run.launch() == "");
  for (uint64_t i = 0; i < 260; ++i) {
    REQUIRE(run.output<float>(0)[i] == f(i, 0));
    REQUIRE(run.output<float>(0)[260 + i] == f(i, 0) + f(260 + i, 0));
  }
}

namespace {

// An all-pairs allreduce for n ranks built in code. LL: packets to the chunk
// owner, respkt back. Simple: puts into the owner's scratch, signal/wait with
// every peer in one op, re, puts back.
json allPairsAllreduce(int n, bool ll) {
  json gpus = json::array();
  for (int r = 0; r < n; ++r) {
    json peers = json::array(), rbs = json::array(), chIds = json::array(), rbIds = json::array();
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      peers.push_back(p);
      chIds.push_back(static_cast<int>(chIds.size()));
    }
    // remote buffers: scratch of every peer (ids 0..n-2), then input of every peer (n-1..2n-3)
    for (int kind = 0; kind < 2; ++kind)
      for (int p = 0; p < n; ++p)
        if (p != r) {
          rbs.push_back({{"rank", p}, {"type", kind == 0 ? "s" : "i"}, {"access_channel_types", {"memory"}}});
          rbIds.push_back(static_cast<int>(rbIds.size()));
        }
    auto peerIndex = [&](int p) { return p < r ? p : p - 1; };
    json ops = json::array();
    json memAll = {{"channel_type", "memory"}, {"channel_ids", chIds}};
    if (ll) {
      for (int p = 0; p < n; ++p)
        if (p != r) ops.push_back(op("ppkt", {lref("i", p)}, {rref(peerIndex(p), r)}, {{"channel_type", "memory"}}));
      json src = {lref("i", r)}, dst = {lref("i", r)};
      for (int p = 0; p < n; ++p)
        if (p != r) src.push_back(lref("s", p)), dst.push_back(rref(peerIndex(p), n + r));
      ops.push_back(op("respkt", src, dst, {{"channel_type", "memory"}, {"reduce_op", "sum"}}));
      for (int p = 0; p < n; ++p)
        if (p != r) ops.push_back(op("upkt", {lref("s", n + p)}, {lref("i", p)}));
    } else {
      for (int p = 0; p < n; ++p)
        if (p != r) ops.push_back(op("put", {lref("i", p)}, {rref(peerIndex(p), r)}, {{"channel_type", "memory"}}));
      ops.push_back(op("nop"));
      ops.push_back(op("signal", {}, {}, memAll));
      ops.push_back(op("wait", {}, {}, memAll));
      json src = {lref("i", r)};
      for (int p = 0; p < n; ++p)
        if (p != r) src.push_back(lref("s", p));
      ops.push_back(op("re", src, {lref("i", r)}, {{"reduce_op", "sum"}}));
      for (int p = 0; p < n; ++p)
        if (p != r)
          ops.push_back(op("put", {lref("i", r)}, {rref(n - 1 + peerIndex(p), r)}, {{"channel_type", "memory"}}));
      ops.push_back(op("nop"));
      ops.push_back(op("signal", {}, {}, memAll));
      ops.push_back(op("wait", {}, {}, memAll));
    }
    json tb = threadblock(0, ops, json::array({memAll}),
                          json::array({{{"access_channel_type", "memory"}, {"remote_buffer_ids", rbIds}}}));
    gpus.push_back(
        gpu(r, n, n, ll ? 2 * n : n, {tb}, json::array({{{"channel_type", "memory"}, {"connected_to", peers}}}), rbs));
  }
  return planJson(ll ? "allpairs_ll" : "allpairs", "allreduce", ll ? "LL" : "Simple", true, gpus,
                  {{"use_double_scratch_buffer", ll}});
}

}  // namespace

TEST_CASE("2 to 16 ranks: all-pairs allreduce, one op over 15 channels", "[exec][ops][ranks]") {
  for (int n : {2, 3, 5, 8, 16}) {
    for (bool ll : {false, true}) {
      exec::EmulationOptions opt;
      opt.sizeBytes = static_cast<uint64_t>(n) * 16 * 37;  // odd chunk: 37 alignment units
      opt.iterations = 3;
      opt.timeoutSeconds = 30;
      opt.packet = ll && n % 2 ? PacketType::LL8 : PacketType::LL16;
      opt.dtype = DataType::BFloat16;
      exec::EmulationResult r = exec::emulatePlan(loadPlan(allPairsAllreduce(n, ll)), opt);
      INFO(n << " ranks " << (ll ? "LL" : "Simple") << "\n" << r.report);
      REQUIRE(r.passed);
    }
  }
}

TEST_CASE("datatype names: ours, the short forms and NCCL's spellings", "[exec][ops]") {
  const std::pair<const char*, DataType> accepted[] = {
      {"float32", DataType::Float32},
      {"F32", DataType::Float32},
      {"ncclFloat32", DataType::Float32},
      {"ncclFloat", DataType::Float32},
      {"ncclBfloat16", DataType::BFloat16},
      {"ncclHalf", DataType::Float16},
      {"ncclChar", DataType::Int8},
      {"ncclInt", DataType::Int32},
      {"NCCLUINT64", DataType::Uint64},
      {"ncclDouble", DataType::Float64},
      {"ncclFloat8e4m3", DataType::Float8E4M3},
      {"ncclFloat8e5m2", DataType::Float8E5M2},
  };
  for (const auto& a : accepted) {
    INFO(a.first);
    DataType t = DataType::Uint8;
    CHECK(dataTypeFromName(a.first, &t));
    CHECK(t == a.second);
  }
  DataType t = DataType::Uint8;
  CHECK_FALSE(dataTypeFromName("nccl", &t));
  CHECK_FALSE(dataTypeFromName("ncclFloat33", &t));
  CHECK_FALSE(dataTypeFromName("ncclNumTypes", &t));
}
