// The sizing rule (plan_sizing.hpp) and the NCCL byte counts per collective.
#include <catch2/catch.hpp>

#include "plan/plan_loader.hpp"
#include "plan/plan_names.hpp"
#include "plan/plan_sizing.hpp"
#include "plan_test_util.hpp"

using namespace mscclpp::plan;

namespace {
PlanHeader header(uint32_t alignment = 16, bool reduces = false, Protocol protocol = Protocol::Simple,
                  bool doubleScratch = false) {
  PlanHeader h;
  h.bufferAlignment = alignment;
  h.reduceOps = reduces ? 1u << static_cast<unsigned>(PlanReduceOp::Sum) : 0;
  h.protocol = protocol;
  h.useDoubleScratchBuffer = doubleScratch;
  return h;
}
constexpr uint64_t MiB = 1ull << 20;
}  // namespace

TEST_CASE("chunk = input / input_chunks, exact and aligned", "[plan][sizing]") {
  SizingResult r = sizePlan(header(16, true, Protocol::LL, true), 64, 64, 112, MiB, MiB, 4);
  CHECK(r.ok);
  CHECK(r.reason.empty());
  CHECK(r.chunkBytes == 16384);
  CHECK(r.scratchBytes == 16384ull * 112 * 2 * 2);  // LL doubles, double scratch doubles again

  r = sizePlan(header(), 7, 7, 0, 3 * MiB, 3 * MiB, 0);
  CHECK_FALSE(r.ok);
  CHECK(r.reason == "3 MiB input is not divisible into 7 chunks of a multiple of 16 bytes");
  CHECK(sizePlan(header(), 4, 4, 0, 1000, 1000, 0).reason ==
        "1000 B input is not divisible into 4 chunks of a multiple of 16 bytes");
  CHECK(sizePlan(header(), 4, 4, 0, 3 * MiB / 2 + 8, 3 * MiB / 2 + 8, 0).reason ==
        "1.5 MiB (1572872 bytes) input is not divisible into 4 chunks of a multiple of 16 bytes");
  CHECK(sizePlan(header(), 4, 4, 0, 0, 0, 0).reason == "an empty input cannot be divided into 4 chunks");
  CHECK(sizePlan(header(), 0, 0, 3, 64, 64, 0).reason ==
        "the plan has no input or output chunks, so no chunk size follows from the call");
}

TEST_CASE("the other buffer must be exactly its chunks times the chunk", "[plan][sizing]") {
  CHECK(sizePlan(header(), 8, 8, 0, MiB, 2 * MiB, 0).reason ==
        "output is 2 MiB but the plan's 8 output chunks of 128 KiB need 1 MiB");
  // output_chunks 0 (older in-place allreduce plans) leaves the output unchecked
  CHECK(sizePlan(header(), 4, 0, 4, MiB, 123, 0).ok);
  // input_chunks 0: the chunk follows from the output
  SizingResult r = sizePlan(header(), 0, 8, 0, 17, 8 * MiB, 0);
  CHECK(r.ok);
  CHECK(r.chunkBytes == MiB);
  CHECK(sizePlan(header(), 0, 8, 0, 17, 1000, 0).reason ==
        "1000 B output is not divisible into 8 chunks of a multiple of 16 bytes");
}

TEST_CASE("a reducing plan needs whole elements per chunk", "[plan][sizing]") {
  CHECK(sizePlan(header(4, true), 2, 2, 0, 8, 8, 4).ok);
  CHECK(sizePlan(header(4, true), 2, 2, 0, 8, 8, 8).reason ==
        "a chunk of 4 B is not a multiple of the 8-byte element the plan reduces");
  CHECK(sizePlan(header(4, false), 2, 2, 0, 8, 8, 8).ok);  // a plan that only moves data does not care
}

TEST_CASE("64-bit products do not overflow silently", "[plan][sizing]") {
  const uint64_t big = 1ull << 62;
  CHECK(sizePlan(header(), 1, 8, 0, big, 0, 0).reason ==
        "output is 0 B but the plan's 8 output chunks of 4194304 TiB need more than 2^64 bytes");
  CHECK(sizePlan(header(16, false, Protocol::LL), 1, 1, 4294967295u, big, big, 0).reason ==
        "the scratch buffer (4294967295 chunks of 4194304 TiB) would exceed 2^64 bytes");
  uint64_t in = 0, out = 0;
  CHECK_FALSE(callBytes(Collective::AllReduce, UINT64_MAX / 2, 4, 8, &in, &out));
  CHECK_FALSE(callBytes(Collective::AllGather, 1ull << 60, 1, 64, &in, &out));
}

TEST_CASE("NCCL byte counts per collective", "[plan][sizing]") {
  uint64_t in = 0, out = 0;
  REQUIRE(callBytes(Collective::AllReduce, 1000, 4, 8, &in, &out));
  CHECK((in == 4000 && out == 4000));
  REQUIRE(callBytes(Collective::AllGather, 1000, 4, 8, &in, &out));
  CHECK((in == 4000 && out == 32000));
  REQUIRE(callBytes(Collective::ReduceScatter, 1000, 4, 8, &in, &out));
  CHECK((in == 32000 && out == 4000));
  REQUIRE(callBytes(Collective::AllToAll, 1000, 4, 8, &in, &out));
  CHECK((in == 32000 && out == 32000));
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::SendRecv}) {
    REQUIRE(callBytes(c, 1000, 2, 8, &in, &out));
    CHECK((in == 2000 && out == 2000));
  }
  std::string why;
  REQUIRE(callBytesFromMessage(Collective::AllGather, 8 * MiB, 8, &in, &out, &why));
  CHECK((in == MiB && out == 8 * MiB));
  REQUIRE(callBytesFromMessage(Collective::ReduceScatter, 8 * MiB, 8, &in, &out, &why));
  CHECK((in == 8 * MiB && out == MiB));
  REQUIRE(callBytes(Collective::Gather, 1000, 4, 8, &in, &out));
  CHECK((in == 4000 && out == 32000));
  REQUIRE(callBytes(Collective::Scatter, 1000, 4, 8, &in, &out));
  CHECK((in == 32000 && out == 4000));
  CHECK_FALSE(callBytes(Collective::Gather, 1ull << 60, 1, 64, &in, &out));
  // Gather and scatter select on the per-rank part (docs/plan-core.md), which need not split.
  REQUIRE(callBytesFromMessage(Collective::Gather, 1001, 8, &in, &out, &why));
  CHECK((in == 1001 && out == 8008));
  REQUIRE(callBytesFromMessage(Collective::Scatter, 1001, 8, &in, &out, &why));
  CHECK((in == 8008 && out == 1001));
  CHECK_FALSE(callBytesFromMessage(Collective::Scatter, 1ull << 62, 8, &in, &out, &why));
  CHECK(why == "scatter message of 4194304 TiB times 8 ranks exceeds 2^64 bytes");
  CHECK_FALSE(callBytesFromMessage(Collective::AllGather, 1001, 8, &in, &out, &why));
  CHECK(why == "allgather message of 1001 B does not split into 8 equal parts");
  CHECK(ncclDataTypeBytes(7) == 4);   // ncclFloat32
  CHECK(ncclDataTypeBytes(9) == 2);   // ncclBfloat16
  CHECK(ncclDataTypeBytes(8) == 8);   // ncclFloat64
  CHECK(ncclDataTypeBytes(11) == 1);  // ncclFloat8e5m2
  CHECK(ncclDataTypeBytes(12) == 0);
  CHECK(ncclDataTypeBytes(-1) == 0);
}

TEST_CASE("MSCCL++ in-place shapes follow the rule with NCCL sizes", "[plan][sizing]") {
  const std::string dir = plantest::referencePlansDir() + "/mscclpp/";
  uint64_t in = 0, out = 0;
  // in-place allgather, 1 input chunk and 8 output chunks per rank
  PlanPtr ag = loadPlanFile(dir + "generated/sn_allgather_pkt_8.json", LoadOptions{3});
  REQUIRE(callBytes(Collective::AllGather, 1024, 4, 8, &in, &out));
  SizingResult r = sizePlan(ag->header, ag->ranks[3], in, out, 4);
  CHECK(r.ok);
  CHECK(r.chunkBytes == 4096);
  CHECK(r.scratchBytes == 4096ull * 8 * 2 * 2);
  // the zero-copy NVLS allgather: 8 input and 64 output chunks
  PlanPtr nvls = loadPlanFile(dir + "generated/sn_allgather_nvls_zero_copy_8.json", LoadOptions{0});
  REQUIRE(callBytes(Collective::AllGather, 4096, 4, 8, &in, &out));
  CHECK(sizePlan(nvls->header, nvls->ranks[0], in, out, 4).chunkBytes == 2048);
  // allreduce with output_chunks 0 and an alltoall of 16 chunks
  PlanPtr ar = loadPlanFile(dir + "committed/allreduce_pipeline.json", LoadOptions{1});
  REQUIRE(callBytes(Collective::AllReduce, 4096, 4, 4, &in, &out));
  CHECK(sizePlan(ar->header, ar->ranks[1], in, out, 4).chunkBytes == 4096);
  PlanPtr a2a = loadPlanFile(dir + "generated/sn_alltoall_8.json", LoadOptions{2});
  REQUIRE(callBytes(Collective::AllToAll, 512, 4, 8, &in, &out));
  r = sizePlan(a2a->header, a2a->ranks[2], in, out, 4);
  CHECK(r.ok);
  CHECK(r.chunkBytes == 1024);
  // and a call the plan cannot split
  REQUIRE(callBytes(Collective::AllToAll, 3, 4, 8, &in, &out));
  CHECK(sizePlan(a2a->header, a2a->ranks[2], in, out, 4).reason ==
        "96 B input is not divisible into 16 chunks of a multiple of 16 bytes");
}

TEST_CASE("the collective names list each collective once, in order", "[plan][names]") {
  const std::string list = collectiveNameList();
  size_t start = 0;
  int index = 0;
  while (start <= list.size()) {
    size_t end = list.find(", ", start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    Collective c{};
    REQUIRE(collectiveFromName(std::string_view(name), &c));
    CHECK(static_cast<int>(c) == index);
    CHECK(std::string(collectiveName(c)) == name);
    ++index;
    start = end + 2;
  }
  CHECK(index == static_cast<int>(Collective::ReduceScatterV) + 1);
  CHECK(isRootedCollective(Collective::Gather));
  CHECK(isRootedCollective(Collective::Scatter));
  CHECK(isRootedCollective(Collective::Broadcast));
  CHECK_FALSE(isRootedCollective(Collective::AllGather));
}

TEST_CASE("sizeCall: sizes that do not fit run padded, per part", "[plan][sizing]") {
  PlanHeader h = header(16, true);
  h.collective = Collective::AllReduce;
  CallGeometry g;
  // Exact sizes keep the call's buffers.
  SizingResult r = sizeCall(h, 4, 4, 4, 4, 64 * 4, 64 * 4, 4, &g);
  CHECK(r.ok);
  CHECK_FALSE(g.padded);
  CHECK(g.inputBytes == 256);
  // 5 floats on 4 chunks of 16-byte multiples: one part padded to 64 bytes.
  r = sizeCall(h, 4, 4, 4, 4, 20, 20, 4, &g);
  CHECK(r.ok);
  CHECK(g.padded);
  CHECK(g.partBytes == 20);
  CHECK(g.paddedPartBytes == 64);
  CHECK(r.chunkBytes == 16);
  CHECK(r.scratchBytes == 64);
  // Allgather on 4 ranks, 1 input chunk and 4 output chunks: 3 bytes per rank pad to 16; output 4 x 16.
  h = header(16, false);
  h.collective = Collective::AllGather;
  r = sizeCall(h, 1, 4, 0, 4, 3, 12, 1, &g);
  CHECK(r.ok);
  CHECK(g.outputParts == 4);
  CHECK(g.paddedPartBytes == 16);
  CHECK(g.outputBytes == 64);
  // Reducescatter on 4 ranks with 4 input chunks: parts need not be a whole
  // chunk each when chunks do not match parts, but the whole input still
  // splits: 8 input chunks over 4 parts -> 2 chunks per part.
  h = header(16, true);
  h.collective = Collective::ReduceScatter;
  r = sizeCall(h, 8, 2, 0, 4, 4 * 6, 6, 2, &g);
  CHECK(r.ok);
  CHECK(g.inputParts == 4);
  CHECK(g.paddedPartBytes == 32);
  CHECK(r.chunkBytes == 16);
  // 8-byte elements on a reducing plan with 4-byte alignment: the part is a multiple of the element.
  h = header(4, true);
  h.collective = Collective::AllReduce;
  r = sizeCall(h, 2, 2, 0, 2, 8, 8, 8, &g);
  CHECK(r.ok);
  CHECK(g.paddedPartBytes == 16);
  // Not padded: partial elements, unit plans, chunk counts that do not match the parts.
  CHECK_FALSE(sizeCall(h, 2, 2, 0, 2, 10, 10, 8, &g).ok);
  h.collective = Collective::Custom;
  CHECK_FALSE(sizeCall(h, 2, 2, 0, 2, 6, 6, 1, &g).ok);
  h.collective = Collective::AllGather;
  CHECK(sizeCall(h, 1, 3, 0, 4, 3, 12, 1, &g).reason.find("output chunks") != std::string::npos);
}
