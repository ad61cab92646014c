// The shim's parts on their own: ncclConfig_t reading, routing rules, grouped
// send/recv patterns, user reduce op handles, byte and in-place arithmetic,
// counters and thread-local group state.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "coll_call.hpp"
#include "comm_config.hpp"
#include "comm_stats.hpp"
#include "dispatch.hpp"
#include "group.hpp"
#include "mscclpp/errors.hpp"
#include "user_red_ops.hpp"

using namespace mscclpp;
using namespace mscclpp::shim;

namespace {

std::string errorOf(const std::function<void()>& f, ErrorCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "(no error)";
}

CollCall p2p(CollKind kind, int peer, size_t count, ncclDataType_t dtype, void* buf) {
  CollCall c;
  c.kind = kind;
  c.root = peer;
  c.count = count;
  c.dtype = dtype;
  if (kind == CollKind::Send) c.sendbuff = buf;
  if (kind == CollKind::Recv) c.recvbuff = buf;
  return c;
}

}  // namespace

TEST_CASE("config: NULL means NCCL's defaults", "[config]") {
  CommConfig c = CommConfig::parse(nullptr);
  CHECK(c.blocking());
  CHECK(c.commName().empty());
  ncclConfig_t out = c.toNccl();
  CHECK(out.magic == 0xcafebeef);
  CHECK(out.size == sizeof(ncclConfig_t));
  CHECK(out.version == static_cast<unsigned>(NCCL_VERSION_CODE));
  CHECK(out.blocking == NCCL_CONFIG_UNDEF_INT);
}

TEST_CASE("config: fields are read and strings copied", "[config]") {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  std::string name = "trainer";
  cfg.blocking = 0;
  cfg.commName = name.c_str();
  cfg.splitShare = 1;
  CommConfig c = CommConfig::parse(&cfg);
  name = "overwritten";  // the caller's string may change after the call
  CHECK_FALSE(c.blocking());
  CHECK(c.splitShare());
  CHECK(c.commName() == "trainer");
  ncclConfig_t out = c.toNccl();
  CHECK(std::string(out.commName) == "trainer");
  CHECK(out.blocking == 0);
}

TEST_CASE("config: bad magic is ncclInvalidArgument with NCCL's words", "[config]") {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.magic = 0x12345678;
  ErrorCode code;
  std::string msg = errorOf([&] { CommConfig::parse(&cfg); }, &code);
  CHECK(code == ErrorCode::InvalidArgument);
  CHECK(msg ==
        "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER (magic 0x12345678, size 80; expected "
        "magic 0xcafebeef)");
}

TEST_CASE("config: only size bytes are read", "[config]") {
  // A caller whose struct ends before 'magic' cannot have initialized it.
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.size = 8;
  CHECK(errorOf([&] { CommConfig::parse(&cfg); }).find("not initialized via NCCL_CONFIG_INITIALIZER") !=
        std::string::npos);
  // A 2.17-era struct (up to commName) with garbage after it: the garbage is never read.
  unsigned char buf[sizeof(ncclConfig_t)];
  std::memset(buf, 0xff, sizeof(buf));
  ncclConfig_t old = NCCL_CONFIG_INITIALIZER;
  old.size = offsetof(ncclConfig_t, splitShare);
  old.version = NCCL_VERSION(2, 17, 1);
  old.blocking = 0;
  std::memcpy(buf, &old, old.size);
  CommConfig c = CommConfig::parse(reinterpret_cast<ncclConfig_t*>(buf));
  CHECK_FALSE(c.blocking());
  CHECK(c.toNccl().splitShare == NCCL_CONFIG_UNDEF_INT);
  CHECK(c.toNccl().nvlsCTAs == NCCL_CONFIG_UNDEF_INT);
}

TEST_CASE("config: fields newer than the caller's version are unset", "[config]") {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.version = NCCL_VERSION(2, 13, 0);
  cfg.blocking = 7;  // invalid, but a 2.13 caller had no such field: ignored
  cfg.CTAPolicy = 99;
  cfg.nvlinkCentricSched = 5;
  CommConfig c = CommConfig::parse(&cfg);
  CHECK(c.blocking());
  CHECK(c.toNccl().CTAPolicy == NCCL_CONFIG_UNDEF_INT);
  CHECK(c.toNccl().nvlinkCentricSched == NCCL_CONFIG_UNDEF_INT);
}

TEST_CASE("config: invalid attribute values", "[config]") {
  struct Case {
    std::function<void(ncclConfig_t&)> set;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](ncclConfig_t& c) { c.blocking = 2; }, "Invalid config blocking attribute value 2"},
      {[](ncclConfig_t& c) { c.cgaClusterSize = -3; }, "Invalid config cgaClusterSize attribute value -3"},
      {[](ncclConfig_t& c) {
         c.minCTAs = 8;
         c.maxCTAs = 4;
       },
       "Invalid config min/max channels attribute value 8/4"},
      {[](ncclConfig_t& c) { c.splitShare = 3; }, "Invalid config splitShare attribute value 3"},
      {[](ncclConfig_t& c) { c.collnetEnable = 2; }, "Invalid config collnetEnable attribute value 2"},
      {[](ncclConfig_t& c) { c.CTAPolicy = 8; }, "Invalid config policy attribute value 8"},
      {[](ncclConfig_t& c) { c.shrinkShare = -1; }, "Invalid config shrinkShare attribute value -1"},
      {[](ncclConfig_t& c) { c.nvlsCTAs = 0; }, "Invalid config nvlsCTAs attribute value 0"},
      {[](ncclConfig_t& c) { c.nChannelsPerNetPeer = 65; }, "Invalid config nChannelsPerNetPeer attribute value 65"},
      {[](ncclConfig_t& c) { c.nvlinkCentricSched = 2; }, "Invalid config nvlinkCentricSched attribute value 2"},
  };
  for (auto& k : cases) {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    k.set(cfg);
    ErrorCode code = ErrorCode::InternalError;
    CHECK(errorOf([&] { CommConfig::parse(&cfg); }, &code) == k.message);
    CHECK(code == ErrorCode::InvalidArgument);
  }
}

TEST_CASE("forced fallback list", "[route]") {
  uint32_t all = (1u << kNumCollKinds) - 1;
  CHECK(RouteTable::parseForcedList("") == 0);
  CHECK(RouteTable::parseForcedList("all") == all);
  CHECK(RouteTable::parseForcedList(" ALL ") == all);
  uint32_t m = RouteTable::parseForcedList("allreduce, AllGather,reducescatter");
  CHECK(m == ((1u << static_cast<int>(CollKind::AllReduce)) | (1u << static_cast<int>(CollKind::AllGather)) |
              (1u << static_cast<int>(CollKind::ReduceScatter))));
  uint32_t s = RouteTable::parseForcedList("send");
  CHECK((s >> static_cast<int>(CollKind::SendRecv)) & 1u);
  ErrorCode code;
  CHECK(errorOf([] { RouteTable::parseForcedList("allreduce,alltoallv"); }, &code) ==
        "MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION='allreduce,alltoallv' is not valid: unknown collective 'alltoallv' "
        "(expected a comma list of allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, scatter, "
        "send, recv, sendrecv, or all; default none)");
  CHECK(code == ErrorCode::InvalidArgument);
}

TEST_CASE("two-rank exchange: found only when both sides mirror it", "[patterns]") {
  char a[64], b[64];
  CollCall send = p2p(CollKind::Send, 1, 16, ncclFloat32, a);
  CollCall recv = p2p(CollKind::Recv, 1, 16, ncclFloat32, b);
  CollCall ex;
  REQUIRE(matchTwoRankExchange({&send, &recv}, 0, 2, &ex));
  CHECK(ex.kind == CollKind::SendRecv);
  CHECK(ex.sendbuff == a);
  CHECK(ex.recvbuff == b);
  CHECK(ex.count == 16);
  CHECK(ex.root == 1);
  CHECK(matchTwoRankExchange({&recv, &send}, 0, 2, &ex));  // order within the group does not matter

  CHECK_FALSE(matchTwoRankExchange({&send, &recv}, 0, 4, &ex));  // only on two-rank communicators
  CHECK_FALSE(matchTwoRankExchange({&send}, 0, 2, &ex));
  CollCall recvOther = p2p(CollKind::Recv, 1, 8, ncclFloat32, b);
  CHECK_FALSE(matchTwoRankExchange({&send, &recvOther}, 0, 2, &ex));  // counts differ
  CollCall recvType = p2p(CollKind::Recv, 1, 16, ncclInt32, b);
  CHECK_FALSE(matchTwoRankExchange({&send, &recvType}, 0, 2, &ex));
  CollCall sendSelf = p2p(CollKind::Send, 0, 16, ncclFloat32, a);
  CHECK_FALSE(matchTwoRankExchange({&sendSelf, &recv}, 0, 2, &ex));  // to itself, not the peer
  CollCall send2 = p2p(CollKind::Send, 1, 16, ncclFloat32, a);
  CHECK_FALSE(matchTwoRankExchange({&send, &send2}, 0, 2, &ex));
  CollCall empty1 = p2p(CollKind::Send, 1, 0, ncclFloat32, a);
  CollCall empty2 = p2p(CollKind::Recv, 1, 0, ncclFloat32, b);
  CHECK_FALSE(matchTwoRankExchange({&empty1, &empty2}, 0, 2, &ex));
}

TEST_CASE("user reduce ops: handles, salts, reuse", "[redops]") {
  UserRedOps ops(0x123);
  UserRedOp op;
  op.dtype = ncclFloat32;
  ncclRedOp_t h1 = ops.add(op);
  ncclRedOp_t h2 = ops.add(op);
  CHECK(static_cast<int>(h1) >= static_cast<int>(ncclNumOps));
  CHECK(h1 != h2);
  REQUIRE(ops.find(h1) != nullptr);
  CHECK(ops.find(h1)->dtype == ncclFloat32);
  CHECK(ops.find(ncclSum) == nullptr);
  UserRedOps other(0x456);
  CHECK(other.find(h1) == nullptr);  // another communicator's handle
  UserRedOp removed;
  CHECK(ops.remove(h1, &removed));
  CHECK_FALSE(ops.remove(h1, &removed));  // twice
  CHECK(ops.find(h1) == nullptr);
  ncclRedOp_t h3 = ops.add(op);
  CHECK(h3 == h1);  // the slot is reused
  CHECK(ops.live().size() == 2);
}

TEST_CASE("byte counts and in-place rules per collective", "[call]") {
  char buf[1024];
  CollCall c;
  c.count = 4;
  c.dtype = ncclFloat64;
  c.kind = CollKind::AllGather;
  c.recvbuff = buf;
  c.sendbuff = buf + 2 * 32;
  CHECK(planMessageBytes(c, 8) == 256);
  CHECK(sendBytes(c, 8) == 32);
  CHECK(recvBytes(c, 8) == 256);
  CHECK(isInPlace(c, 2));
  CHECK_FALSE(isInPlace(c, 1));
  c.kind = CollKind::ReduceScatter;
  c.sendbuff = buf;
  c.recvbuff = buf + 3 * 32;
  CHECK(planMessageBytes(c, 8) == 256);
  CHECK(sendBytes(c, 8) == 256);
  CHECK(recvBytes(c, 8) == 32);
  CHECK(isInPlace(c, 3));
  c.kind = CollKind::AllReduce;
  c.recvbuff = buf;
  CHECK(planMessageBytes(c, 8) == 32);
  CHECK(isInPlace(c, 0));
  c.kind = CollKind::Scatter;
  c.root = 2;
  c.recvbuff = buf + 2 * 32;
  CHECK(isInPlace(c, 5));
  c.kind = CollKind::AllToAll;
  c.recvbuff = buf + 1;
  CHECK(sendBytes(c, 4) == 128);
  CHECK(recvBytes(c, 4) == 128);
  CHECK_FALSE(isInPlace(c, 0));
}

TEST_CASE("describeCall names what a call asks for", "[call]") {
  char buf[64];
  CollCall c;
  c.kind = CollKind::AllReduce;
  c.count = 3 << 19;  // 3 MiB of bf16
  c.dtype = ncclBfloat16;
  c.op = ncclMax;
  c.sendbuff = buf;
  c.recvbuff = buf;
  CHECK(describeCall(c, 8, 0) == "allreduce, 8 ranks, 3 MiB, bf16, max, in-place");
  c.kind = CollKind::Broadcast;
  c.root = 3;
  c.recvbuff = buf + 1;
  CHECK(describeCall(c, 8, 0) == "broadcast, 8 ranks, 3 MiB, bf16, root 3");
}

TEST_CASE("stats summarise calls per collective", "[stats]") {
  CommStats s;
  CHECK(s.summary().empty());
  s.record(CollKind::AllReduce, 1024, CommStats::Via::Plan);
  s.record(CollKind::AllReduce, 1024, CommStats::Via::Nccl);
  s.record(CollKind::Send, 8, CommStats::Via::Nccl);
  CHECK(s.get(CollKind::AllReduce).calls == 2);
  CHECK(s.get(CollKind::AllReduce).viaPlan == 1);
  CHECK(s.summary() ==
        "allreduce: 2 calls, 2 KiB, 1 via plans, 1 via NCCL; send: 1 calls, 8 B, 0 via plans, 1 via NCCL");
}

TEST_CASE("stats count native algorithms apart from plans", "[stats]") {
  CommStats s;
  s.record(CollKind::AllReduce, 1024, CommStats::Via::Native);
  s.record(CollKind::AllReduce, 1024, CommStats::Via::Native);
  s.record(CollKind::AllReduce, 1024, CommStats::Via::Plan);
  CHECK(s.get(CollKind::AllReduce).viaNative == 2);
  CHECK(s.get(CollKind::AllReduce).viaPlan == 1);
  CHECK(s.summary() == "allreduce: 3 calls, 3 KiB, 1 via plans, 2 via native algorithms, 0 via NCCL");
}

TEST_CASE("group state: depth, latching, ordering", "[group]") {
  GroupState g;
  ErrorCode code;
  CHECK(errorOf([&] { g.end(); }, &code) == "ncclGroupEnd: not in a group call.");
  CHECK(code == ErrorCode::InvalidUsage);
  g.start();
  g.start();
  CollCall a, b;
  a.count = 1;
  b.count = 2;
  g.addOp(a);
  g.addOp(b);
  g.latch(ncclInvalidArgument);
  g.latch(ncclSystemError);  // the first error stays
  CHECK_FALSE(g.end());
  CHECK(g.end());
  std::vector<CollCall> ops;
  g.takeOps(&ops);
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].count == 1);
  CHECK(ops[1].count == 2);
  CHECK(g.takeLatched() == ncclInvalidArgument);
  CHECK(g.takeLatched() == ncclSuccess);
}

TEST_CASE("runConcurrently runs jobs together, reports the first error", "[group]") {
  std::atomic<int> arrived{0};
  std::vector<std::function<void()>> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back([&arrived] {
      // Each job waits for all the others: only concurrent execution gets all four in (bounded wait).
      arrived.fetch_add(1);
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (arrived.load() < 4 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
      if (arrived.load() < 4) throw Error(ErrorCode::Timeout, "jobs did not run concurrently");
    });
  }
  runConcurrently(jobs);
  CHECK(arrived.load() == 4);
  std::vector<std::function<void()>> failing = {[] {}, [] { throw Error(ErrorCode::RemoteError, "rank 1 failed"); }};
  CHECK(errorOf([&] { runConcurrently(failing); }) == "rank 1 failed");
}
