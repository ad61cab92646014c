// The CUDA backend's decisions that need no GPU: launch configuration and
// residency arithmetic over mocked device properties, how a call's buffers bind
// to a plan (zero-copy or staged) and which calls share a context, the device
// image's layout and relocation, the topology of ranks, the context cache, and
// the "no device" paths of the Executor. Runs in every build (CPU-only too).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../support/scoped_env.hpp"
#include "exec_test_util.hpp"
#include "executor/context_cache.hpp"
#include "executor/context_image.hpp"
#include "executor/cpu/context_wiring.hpp"
#include "executor/cuda/call_binding.hpp"
#include "executor/cuda/device_image.hpp"
#include "executor/cuda/gpu_backend.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/cuda/gpu_topology.hpp"
#include "executor/cuda/launch_config.hpp"
#include "executor/dtypes.hpp"
#include "executor/emulation/local_world.hpp"
#include "executor/emulation/local_world_wiring.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp_config.h"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::exec;

namespace {

// Runs f and returns the Error it throws (fails the test when it throws nothing or something else).
template <class F>
Error errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected mscclpp::Error");
  return Error(ErrorCode::InternalError, "unreachable");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

GpuDeviceLimits h100Like() {
  GpuDeviceLimits d;
  d.device = 0;
  d.name = "Mock H100";
  d.smCount = 132;
  d.maxThreadsPerBlock = 1024;
  d.sharedPerBlockOptin = 227 * 1024;
  d.ccMajor = 9;
  return d;
}

plan::PlanHeader header(const char* name = "p") {
  plan::PlanHeader h;
  h.name = name;
  h.source = "<test>";
  return h;
}

using ScopedEnv = mscclpp::test::ScopedEnv;

}  // namespace

// ---- launch configuration -----------------------------------------------------------------------

TEST_CASE("CUDA launch: op list sizes round to 16 bytes", "[exec][cuda]") {
  CHECK(roundUpTo16(0) == 0);
  CHECK(roundUpTo16(1) == 16);
  CHECK(roundUpTo16(16) == 16);
  CHECK(roundUpTo16(17) == 32);
  ThreadblockDevice tb{};
  tb.nOps = 3;
  tb.nRefs = 5;
  tb.nIds = 1;
  const uint64_t expect =
      roundUpTo16(3 * sizeof(plan::Op)) + roundUpTo16(5 * sizeof(ResolvedRef)) + roundUpTo16(sizeof(uint32_t));
  CHECK(blockOpListBytes(tb) == expect);
  CHECK(blockOpListBytes(tb) % 16 == 0);
  tb = ThreadblockDevice{};
  CHECK(blockOpListBytes(tb) == 0);
}

TEST_CASE("CUDA launch: op lists that fit go in shared memory", "[exec][cuda]") {
  SharedMemoryChoice c = chooseSharedMemory({4096, 160, 300000, 99000}, 100000);
  CHECK(c.dynamicBytes == 99000);
  CHECK(c.blocksInShared == 3);
  CHECK(c.blocksInGlobal == 1);
  CHECK(c.largestBlockBytes == 300000);
  c = chooseSharedMemory({}, 100000);
  CHECK(c.dynamicBytes == 0);
  CHECK(c.blocksInShared + c.blocksInGlobal == 0);
  // No shared memory available at all: every block goes to global memory, nothing is refused.
  c = chooseSharedMemory({16, 32}, 0);
  CHECK(c.dynamicBytes == 0);
  CHECK(c.blocksInGlobal == 2);
}

TEST_CASE("CUDA launch: threads per block fit device and kernel", "[exec][cuda]") {
  const plan::PlanHeader h = header("tpb");
  GpuDeviceLimits dev = h100Like();
  GpuKernelLimits kernel;
  kernel.maxThreadsPerBlock = 1024;
  CHECK_NOTHROW(checkThreadsPerBlock(h, 0, 1024, dev, kernel));
  CHECK_NOTHROW(checkThreadsPerBlock(h, 0, 1, dev, kernel));

  Error e = errorOf([&] { checkThreadsPerBlock(h, 2, 0, dev, kernel); });
  CHECK(e.code() == ErrorCode::NotSupported);
  CHECK(contains(e.what(), "plan tpb (<test>) rank 2: num_threads_per_block is 0"));

  kernel.maxThreadsPerBlock = 512;
  e = errorOf([&] { checkThreadsPerBlock(h, 1, 768, dev, kernel); });
  CHECK(e.code() == ErrorCode::NotSupported);
  CHECK(contains(e.what(), "num_threads_per_block 768 exceeds 512"));
  CHECK(contains(e.what(), "register use"));
  CHECK(contains(e.what(), "GPU 0 (Mock H100)"));

  kernel.maxThreadsPerBlock = 0;  // unknown: only the device and __launch_bounds__ limit
  dev.maxThreadsPerBlock = 256;
  e = errorOf([&] { checkThreadsPerBlock(h, 0, 512, dev, kernel); });
  CHECK(contains(e.what(), "exceeds 256, the limit of the device's maxThreadsPerBlock"));

  dev.maxThreadsPerBlock = 4096;
  e = errorOf([&] { checkThreadsPerBlock(h, 0, 2048, dev, kernel); });
  CHECK(contains(e.what(), "exceeds 1024, the limit of the executor kernel's __launch_bounds__"));
}

TEST_CASE("CUDA launch: residency of the blocks of ranks sharing a GPU", "[exec][cuda]") {
  const plan::PlanHeader h = header("res");
  const GpuDeviceLimits dev = h100Like();
  ResidencyVerdict v = checkResidency(h, {0, 1, 2, 3, 4, 5, 6, 7}, 264, 1024, 4096, 2, dev);
  CHECK(v.ok);
  CHECK(v.capacity == 264);
  CHECK(v.reason.empty());

  v = checkResidency(h, {0, 1, 2, 3, 4, 5, 6, 7}, 265, 1024, 4096, 2, dev);
  CHECK_FALSE(v.ok);
  CHECK(v.capacity == 264);
  CHECK(contains(v.reason, "ranks 0-7 on GPU 0 (Mock H100) in this process need 265 blocks of 1024 threads"));
  CHECK(contains(v.reason, "at most 264 (2 per SM x 132 SMs"));
  CHECK(contains(v.reason, "(4096 bytes of shared memory each)"));

  // One rank alone, and a kernel that does not fit on an SM at all (occupancy 0).
  v = checkResidency(h, {3}, 1, 1024, 300000, 0, dev);
  CHECK_FALSE(v.ok);
  CHECK(v.capacity == 0);
  CHECK(contains(v.reason, "rank 3 on GPU 0"));
  CHECK(contains(v.reason, "needs 1 blocks"));
}

TEST_CASE("CUDA launch: blocks in flight: each rank's largest kernel", "[exec][cuda]") {
  ResidentLoad lead{"lead (t)", {1, 2, 2}, 2};
  ResidentLoad follow{"follow (t)", {8, 1, 1}, 2};
  InFlightBlocks f = inFlightBlocks(follow, {});
  CHECK(f.blocks == 10);
  CHECK(f.others.empty());
  // Rank 0 may run follow's 8 blocks while ranks 1 and 2 still run lead's 2 each.
  f = inFlightBlocks(follow, {lead});
  CHECK(f.blocks == 12);
  CHECK(f.blocksPerSm == 2);
  CHECK(f.others == std::vector<std::string>{"lead (t)"});
  // A plan no rank exceeds adds nothing; a kernel with fewer blocks per SM lowers the SM's count.
  ResidentLoad small{"small (t)", {1, 1, 1}, 2};
  CHECK(inFlightBlocks(follow, {small}).others.empty());
  ResidentLoad dense{"dense (t)", {1, 1, 1}, 1};
  f = inFlightBlocks(follow, {small, dense});
  CHECK(f.blocks == 10);
  CHECK(f.blocksPerSm == 1);
  CHECK(f.others == std::vector<std::string>{"dense (t)"});

  GpuDeviceLimits dev = h100Like();
  dev.smCount = 5;
  f = inFlightBlocks(follow, {lead});
  ResidencyVerdict v = checkResidency(header("follow"), {0, 1, 2}, f.blocks, 1024, 0, f.blocksPerSm, dev, {}, f.others);
  CHECK_FALSE(v.ok);
  CHECK(contains(v.reason, "need 12 blocks"));
  CHECK(contains(v.reason, "the kernels of plan lead (t), cached for earlier calls"));
}

TEST_CASE("CUDA launch: waiting blocks need a cooperative launch", "[exec][cuda]") {
  auto ll = plan::loadPlanFile(test::defaultPlanDir() + "/allreduce_ll_n4_ip.json");
  REQUIRE(ll->ranks[2].threadblocks.size() == 4);
  CHECK(blocksWaitOnEachOther(*ll, 2));
  CHECK_FALSE(blocksWaitOnEachOther(*ll, 9));
  auto single = plan::loadPlanFile(test::defaultPlanDir() + "/allgather_put_n2_oop.json");
  REQUIRE(single->ranks[0].threadblocks.size() == 1);
  CHECK_FALSE(blocksWaitOnEachOther(*single, 0));  // one block waits only on peers
  CHECK(cooperativeProblem(*single, {false, false}, {0, 1}).empty());
  std::vector<bool> all(4, true), one(4, true);
  one[2] = false;
  CHECK(cooperativeProblem(*ll, all, {0, 1, 2, 3}).empty());
  CHECK(contains(cooperativeProblem(*ll, one, {0, 1, 2, 3}),
                 "rank 2's 4 blocks wait on each other, which CUDA guarantees to be resident together only for a "
                 "cooperative launch, and rank 2's GPU 2 offers none (cudaDevAttrCooperativeLaunch is 0)"));
}

TEST_CASE("CUDA launch: groupBlocks counts the given ranks' blocks", "[exec][cuda]") {
  auto p = plan::loadPlanFile(test::defaultPlanDir() + "/allreduce_ll_n4_ip.json");
  uint64_t all = 0;
  for (const plan::RankPlan& rp : p->ranks) all += rp.threadblocks.size();
  CHECK(groupBlocks(*p, {0, 1, 2, 3}) == all);
  CHECK(groupBlocks(*p, {1}) == p->ranks[1].threadblocks.size());
  CHECK(groupBlocks(*p, {-1, 7}) == 0);  // ranks the plan does not have count nothing
  CHECK(groupBlocks(*p, {}) == 0);
}

TEST_CASE("CUDA launch: the legacy stream deadlocks ranks sharing a GPU", "[exec][cuda]") {
  int legacyTag = 0, mine = 0;
  const void* legacy = &legacyTag;
  CHECK(streamProblem("plan x rank 0", {0}, nullptr, legacy).empty());  // one rank: any stream works
  CHECK(streamProblem("plan x rank 0", {0, 1}, &mine, legacy).empty());
  std::string p = streamProblem("plan x rank 0", {0, 1}, nullptr, legacy);
  CHECK(contains(p, "plan x rank 0: ranks 0-1 share this process and GPU"));
  CHECK(contains(p, "legacy default stream"));
  CHECK(streamProblem("plan x rank 1", {0, 1, 3}, legacy, legacy).find("ranks 0-1, 3") != std::string::npos);
}

TEST_CASE("CUDA launch: rank lists are compact", "[exec][cuda]") {
  CHECK(rankList({}) == "");
  CHECK(rankList({4}) == "4");
  CHECK(rankList({3, 0, 1, 2, 5}) == "0-3, 5");
  CHECK(rankList({7, 5, 1}) == "1, 5, 7");
}

// ---- call binding ---------------------------------------------------------------------------------

namespace {

plan::Plan bindingPlan(plan::Collective c, bool inPlace, int root = 0) {
  plan::Plan p;
  p.header = header("bind");
  p.header.collective = c;
  p.header.inPlace = inPlace;
  p.header.root = root;
  p.header.worldSize = 4;
  return p;
}

CallRequest request(const plan::Plan& p, int rank, const void* send, void* recv, uint64_t sendBytes, uint64_t recvBytes,
                    ReduceOp op = ReduceOp::Sum) {
  CallRequest q;
  q.plan = &p;
  q.rank = rank;
  q.send = static_cast<const char*>(send);
  q.recv = static_cast<char*>(recv);
  q.sendBytes = sendBytes;
  q.recvBytes = recvBytes;
  q.op = op;
  return q;
}

}  // namespace

TEST_CASE("CUDA binding: out-of-place plans use the user's buffers", "[exec][cuda]") {
  const plan::Plan p = bindingPlan(plan::Collective::AllReduce, false);
  std::vector<char> send(1024), recv(1024);
  CallBinding b = bindCall(request(p, 0, send.data(), recv.data(), 1024, 1024));
  CHECK(b.stagingBytes == 0);
  CHECK_FALSE(b.input.staged);
  CHECK(b.input.user == send.data());
  CHECK(b.output.user == recv.data());
  CHECK(b.preBytes == 0);
  CHECK(b.postBytes == 0);
  CHECK(b.divideBytes == 1024);  // a sum call's context serves avg calls too
  CHECK(b.why.empty());

  // avg divides the whole output; premulsum must not scale the user's send buffer: staged input.
  b = bindCall(request(p, 0, send.data(), recv.data(), 1024, 1024, ReduceOp::Avg));
  CHECK(b.stagingBytes == 0);
  CHECK(b.divideBytes == 1024);
  b = bindCall(request(p, 0, send.data(), recv.data(), 1024, 1024, ReduceOp::PreMulSum));
  CHECK(b.input.staged);
  CHECK(b.input.stagingOffset == 0);
  CHECK(b.stagingBytes == 1024);
  CHECK(b.preSrc == send.data());
  CHECK(b.preBytes == 1024);
  CHECK_FALSE(b.preInPlace);
  CHECK(b.output.user == recv.data());
  CHECK(contains(b.why, "premulsum"));

  // An in-place call on an out-of-place plan: the input is staged (the plan may
  // read it after writing the output).
  b = bindCall(request(p, 0, recv.data(), recv.data(), 1024, 1024));
  CHECK(b.input.staged);
  CHECK(b.preSrc == recv.data());
  CHECK(b.output.user == recv.data());
  CHECK(contains(b.why, "overlap"));
}

TEST_CASE("CUDA binding: an in-place plan works in the receive buffer", "[exec][cuda]") {
  const plan::Plan p = bindingPlan(plan::Collective::AllReduce, true);
  std::vector<char> send(512), recv(512);
  // Out-of-place call: the data buffer is recv, the send buffer is copied into it first.
  CallBinding b = bindCall(request(p, 1, send.data(), recv.data(), 512, 512));
  CHECK(b.stagingBytes == 0);
  CHECK(b.data.user == recv.data());
  CHECK(b.input.user == recv.data());
  CHECK(b.output.user == recv.data());
  CHECK(b.preSrc == send.data());
  CHECK(b.preBytes == 512);
  CHECK_FALSE(b.preInPlace);
  // In-place call: nothing to copy; premulsum scales in place.
  b = bindCall(request(p, 1, recv.data(), recv.data(), 512, 512));
  CHECK(b.preBytes == 0);
  b = bindCall(request(p, 1, recv.data(), recv.data(), 512, 512, ReduceOp::PreMulSum));
  CHECK(b.preBytes == 512);
  CHECK(b.preInPlace);
  CHECK(b.stagingBytes == 0);
}

TEST_CASE("CUDA binding: in-place allgather input at rank x sendBytes", "[exec][cuda]") {
  const plan::Plan p = bindingPlan(plan::Collective::AllGather, true);
  std::vector<char> send(256), recv(1024);
  CallBinding b = bindCall(request(p, 2, send.data(), recv.data(), 256, 1024));
  CHECK(b.stagingBytes == 0);
  CHECK(b.input.user == recv.data() + 512);
  CHECK(b.input.bytes == 256);
  CHECK(b.output.user == recv.data());
  CHECK(b.preSrc == send.data());
  CHECK(b.preBytes == 256);
  // The NCCL in-place form (send == recv + rank * sendBytes): zero-copy, no pre-step.
  b = bindCall(request(p, 2, recv.data() + 512, recv.data(), 256, 1024));
  CHECK(b.preBytes == 0);
  CHECK(b.stagingBytes == 0);
  // A send buffer overlapping recv elsewhere than its slot: staged, never an overlapping copy.
  b = bindCall(request(p, 2, recv.data() + 8, recv.data(), 256, 1024));
  CHECK(b.data.staged);
  CHECK(b.stagingBytes == 1024);
  CHECK(b.postDst == recv.data());
  CHECK(b.postBytes == 1024);
  CHECK(contains(b.why, "overlaps"));
}

TEST_CASE("CUDA binding: reducescatter in-place plan, out-of-place call", "[exec][cuda]") {
  const plan::Plan p = bindingPlan(plan::Collective::ReduceScatter, true);
  std::vector<char> send(1024), recv(256);
  CallBinding b = bindCall(request(p, 3, send.data(), recv.data(), 1024, 256, ReduceOp::Avg));
  CHECK(b.data.staged);
  CHECK(b.stagingBytes == 1024);
  CHECK(b.input.staged);
  CHECK(b.input.stagingOffset == 0);
  CHECK(b.output.stagingOffset == 768);
  CHECK(b.preSrc == send.data());
  CHECK(b.preBytes == 1024);
  CHECK(b.postDst == recv.data());
  CHECK(b.postBytes == 256);
  CHECK(b.divideBytes == 256);
  CHECK(contains(b.why, "reducescatter"));
  // The in-place call (recv == send + rank * recvBytes) lends its send buffer.
  b = bindCall(request(p, 3, send.data(), send.data() + 768, 1024, 256));
  CHECK(b.stagingBytes == 0);
  CHECK(b.data.user == send.data());
  CHECK(b.output.user == send.data() + 768);
  CHECK(b.preBytes == 0);
  CHECK(b.postBytes == 0);
}

TEST_CASE("CUDA binding: a non-root reduce rank needs no receive buffer", "[exec][cuda]") {
  const plan::Plan oop = bindingPlan(plan::Collective::Reduce, false, /*root=*/0);
  std::vector<char> send(512);
  CallBinding b = bindCall(request(oop, 1, send.data(), nullptr, 512, 512, ReduceOp::Avg));
  CHECK(b.input.user == send.data());
  CHECK(b.output.staged);
  CHECK(b.stagingBytes == 512);
  CHECK(b.postBytes == 0);    // nothing to copy back on a non-root rank
  CHECK(b.divideBytes == 0);  // and nothing to divide
  const plan::Plan ip = bindingPlan(plan::Collective::Reduce, true, 0);
  b = bindCall(request(ip, 1, send.data(), nullptr, 512, 512));
  CHECK(b.data.staged);
  CHECK(b.preSrc == send.data());
  CHECK(b.postBytes == 0);
  // The root must have a receive buffer.
  Error e = errorOf([&] { bindCall(request(oop, 0, send.data(), nullptr, 512, 512)); });
  CHECK(e.code() == ErrorCode::InvalidArgument);
  CHECK(contains(e.what(), "plan bind rank 0: a null receive buffer of 512 bytes"));
  e = errorOf([&] { bindCall(request(oop, 1, nullptr, nullptr, 64, 64)); });
  CHECK(contains(e.what(), "plan bind rank 1: a null send buffer of 64 bytes"));
}

TEST_CASE("CUDA binding: gather writes, scatter reads only the root", "[exec][cuda]") {
  // 4 ranks, 256 bytes per rank. Gather's non-root rank 1 passes no receive buffer.
  std::vector<char> part(256), all(1024);
  const plan::Plan gOop = bindingPlan(plan::Collective::Gather, false, /*root=*/2);
  CallBinding b = bindCall(request(gOop, 1, part.data(), nullptr, 256, 1024));
  CHECK(b.input.user == part.data());
  CHECK(b.output.staged);
  CHECK(b.stagingBytes == 1024);
  CHECK(b.postBytes == 0);
  b = bindCall(request(gOop, 2, part.data(), all.data(), 256, 1024));
  CHECK(b.stagingBytes == 0);
  CHECK(b.output.user == all.data());
  Error e = errorOf([&] { bindCall(request(gOop, 2, part.data(), nullptr, 256, 1024)); });
  CHECK(contains(e.what(), "plan bind rank 2: a null receive buffer of 1024 bytes"));
  // In place on the root (send == recv + root * 256): zero-copy, no pre-step.
  const plan::Plan gIp = bindingPlan(plan::Collective::Gather, true, 2);
  b = bindCall(request(gIp, 2, all.data() + 512, all.data(), 256, 1024));
  CHECK(b.stagingBytes == 0);
  CHECK(b.input.user == all.data() + 512);
  CHECK(b.preBytes == 0);
  b = bindCall(request(gIp, 1, part.data(), nullptr, 256, 1024));
  CHECK(b.data.staged);
  CHECK(b.input.stagingOffset == 256);  // part `rank` of the data buffer
  CHECK(b.preSrc == part.data());
  CHECK(b.postBytes == 0);
  CHECK(contains(b.why, "no receive buffer"));

  // Scatter's non-root rank 0 passes no send buffer: its input is staged and never filled.
  const plan::Plan sOop = bindingPlan(plan::Collective::Scatter, false, 3);
  b = bindCall(request(sOop, 0, nullptr, part.data(), 1024, 256));
  CHECK(b.input.staged);
  CHECK(b.preBytes == 0);
  CHECK(b.output.user == part.data());
  CHECK(contains(b.why, "scatter's non-root rank"));
  b = bindCall(request(sOop, 3, all.data(), part.data(), 1024, 256));
  CHECK(b.stagingBytes == 0);
  CHECK(b.input.user == all.data());
  e = errorOf([&] { bindCall(request(sOop, 3, nullptr, part.data(), 1024, 256)); });
  CHECK(contains(e.what(), "plan bind rank 3: a null send buffer of 1024 bytes"));
  const plan::Plan sIp = bindingPlan(plan::Collective::Scatter, true, 3);
  // In place on the root (recv == send + root * 256) lends the send buffer.
  b = bindCall(request(sIp, 3, all.data(), all.data() + 768, 1024, 256));
  CHECK(b.stagingBytes == 0);
  CHECK(b.data.user == all.data());
  CHECK(b.output.user == all.data() + 768);
  b = bindCall(request(sIp, 1, nullptr, part.data(), 1024, 256));
  CHECK(b.data.staged);
  CHECK(b.preBytes == 0);
  CHECK(b.output.stagingOffset == 256);
  CHECK(b.postDst == part.data());
  CHECK(b.postBytes == 256);
  CHECK(contains(b.why, "scatter's non-root rank"));
}

TEST_CASE("CUDA binding: buffers peers cannot map are staged", "[exec][cuda]") {
  const plan::Plan p = bindingPlan(plan::Collective::AllReduce, false);
  std::vector<char> send(300), recv(300);
  CallRequest q = request(p, 0, send.data(), recv.data(), 300, 300);
  q.zeroCopy = false;
  CallBinding b = bindCall(q);
  CHECK(b.input.staged);
  CHECK(b.output.staged);
  CHECK(b.input.stagingOffset == 0);
  CHECK(b.output.stagingOffset == 512);  // 256-byte aligned sections
  CHECK(b.stagingBytes == 812);
  CHECK(b.preBytes == 300);
  CHECK(b.postDst == recv.data());
  CHECK(b.postBytes == 300);
  CHECK(contains(b.why, "CUDA IPC"));
}

TEST_CASE("CUDA binding: variable-size plans bind unpadded", "[exec][cuda]") {
  plan::Plan p = bindingPlan(plan::Collective::AllToAllV, false);
  p.header.variableSizes = true;
  std::vector<char> buf(256);
  // In place: the input is staged whole, the output is the caller's.
  CallBinding b = bindCall(request(p, 0, buf.data(), buf.data(), 256, 256));
  CHECK(b.input.staged);
  CHECK(b.preBytes == 256);
  CHECK(b.output.user == buf.data());
  CallRequest q = request(p, 0, buf.data(), buf.data(), 256, 256);
  q.geometry.padded = true;
  Error e = errorOf([&] { bindCall(q); });
  CHECK(e.code() == ErrorCode::InternalError);
  CHECK(contains(e.what(), "a variable-size plan bound at a padded geometry"));
  p.header.inPlace = true;
  e = errorOf([&] { bindCall(request(p, 0, buf.data(), buf.data(), 256, 256)); });
  CHECK(contains(e.what(), "a variable-size plan bound as an in-place plan"));
}

TEST_CASE("CUDA binding: context key follows buffers, sizes, premulsum", "[exec][cuda]") {
  const plan::Plan p = bindingPlan(plan::Collective::AllReduce, false);
  std::vector<char> a(64), b(64), c(64);
  const BindingKey k = bindingKeyOf(request(p, 0, a.data(), b.data(), 64, 64));
  CHECK(k == bindingKeyOf(request(p, 0, a.data(), b.data(), 64, 64)));
  // Sum, max and avg bind alike (one context); premulsum stages its input (another context).
  CHECK(k == bindingKeyOf(request(p, 0, a.data(), b.data(), 64, 64, ReduceOp::Avg)));
  CHECK(k == bindingKeyOf(request(p, 0, a.data(), b.data(), 64, 64, ReduceOp::Max)));
  CHECK_FALSE(k == bindingKeyOf(request(p, 0, a.data(), b.data(), 64, 64, ReduceOp::PreMulSum)));
  CHECK_FALSE(k == bindingKeyOf(request(p, 0, a.data(), c.data(), 64, 64)));
  CHECK_FALSE(k == bindingKeyOf(request(p, 0, c.data(), b.data(), 64, 64)));
  CHECK_FALSE(k == bindingKeyOf(request(p, 0, a.data(), b.data(), 32, 64)));
  CallRequest q = request(p, 0, a.data(), b.data(), 64, 64);
  q.zeroCopy = false;
  CHECK_FALSE(k == bindingKeyOf(q));
}

// ---- device image ------------------------------------------------------------------------------

namespace {

// A hand-made host image: 2 blocks, 1 memory, 1 port and 1 switch channel, 3 semaphores, 1 barrier.
struct HostImage {
  std::vector<plan::Op> ops0, ops1;
  std::vector<ResolvedRef> refs0;
  std::vector<uint32_t> ids1;
  ThreadblockDevice blocks[2]{};
  uint64_t expected[2] = {7, 11};
  uint64_t peerCounter = 0, myCounter = 0;
  MemoryChannelDeviceHandle mem{};
  PortChannelDeviceHandle port{};
  void* members[3];
  char memberBuffers[3][64];
  SwitchChannelDeviceHandle sw{};
  uint32_t semaphores[3] = {1, 2, 3};
  DeviceSyncer barrier{};
  ExecState state{};
  BlockRecord records[2]{};
  uint32_t abortFlag = 0;
  char input[64], output[64], scratch[64];
  ExecContextDevice d{};

  HostImage() : ops0(3), ops1(1), refs0(5), ids1(2, 9) {
    for (size_t i = 0; i < ops0.size(); ++i) std::memset(&ops0[i], static_cast<int>(i + 1), sizeof(plan::Op));
    std::memset(&ops1[0], 0x55, sizeof(plan::Op));
    for (size_t i = 0; i < refs0.size(); ++i) {
      refs0[i] = ResolvedRef{};
      refs0[i].base = input;  // a pointer out of the image: kept as is
      refs0[i].offset = 8 * i;
      refs0[i].bytes = 8;
    }
    blocks[0] = ThreadblockDevice{ops0.data(), refs0.data(), nullptr, 3, 5, 0, 10};
    blocks[1] = ThreadblockDevice{ops1.data(), nullptr, ids1.data(), 1, 0, 2, 11};
    mem.semaphore_.inboundCounter = &myCounter;
    mem.semaphore_.outboundCounter = &peerCounter;
    mem.semaphore_.expectedInboundCounter = &expected[0];
    port.semaphore_.inboundCounter = &myCounter;
    port.semaphore_.expectedInboundCounter = &expected[1];
    for (int i = 0; i < 3; ++i) members[i] = memberBuffers[i];
    sw.devicePtr = memberBuffers[1];
    sw.memberPtrs = members;
    sw.nMembers = 3;
    sw.myIndex = 1;
    state.flag = 5;
    state.firstFailedBlock = UINT32_MAX;
    records[1].opIndex = 42;
    d.rank = 2;
    d.nBlocks = 2;
    d.blocks = blocks;
    d.chunkBytes = 4096;
    d.input = input;
    d.output = output;
    d.scratch = scratch;
    d.memoryChannels = &mem;
    d.nMemoryChannels = 1;
    d.portChannels = &port;
    d.nPortChannels = 1;
    d.switchChannels = &sw;
    d.nSwitchChannels = 1;
    d.semaphores = semaphores;
    d.nSemaphores = 3;
    d.barriers = &barrier;
    d.nBarriers = 1;
    d.state = &state;
    d.blockRecords = records;
    d.abortFlag = &abortFlag;
  }
};

// The packed bytes a relocated pointer designates (fails when it points outside the image).
template <class T>
const T* inImage(const PackedImage& img, const void* devicePtr) {
  const uint64_t p = reinterpret_cast<uint64_t>(devicePtr);
  REQUIRE(p >= img.base);
  REQUIRE(p - img.base + sizeof(T) <= img.bytes.size());
  REQUIRE((p - img.base) % alignof(T) == 0);
  return reinterpret_cast<const T*>(img.bytes.data() + (p - img.base));
}

}  // namespace

TEST_CASE("CUDA image: one relocated block, mutable state last", "[exec][cuda]") {
  HostImage h;
  const uint64_t base = 0x7f0000100000ull;
  const PackedImage img = packDeviceImage(h.d, base);
  REQUIRE(img.bytes.size() == packedImageBytes(h.d));
  CHECK(img.bytes.size() % 16 == 0);
  CHECK(img.base == base);
  CHECK(img.contextOffset == 0);
  CHECK(img.mutableOffset + img.mutableBytes == img.bytes.size());
  CHECK(img.mutableOffset % 16 == 0);
  CHECK(img.stateOffset >= img.mutableOffset);
  CHECK(img.recordsOffset > img.stateOffset);

  const ExecContextDevice& ctx = *reinterpret_cast<const ExecContextDevice*>(img.bytes.data() + img.contextOffset);
  CHECK(ctx.rank == 2);
  CHECK(ctx.nBlocks == 2);
  CHECK(ctx.chunkBytes == 4096);
  // Pointers out of the image are kept.
  CHECK(ctx.input == h.input);
  CHECK(ctx.output == h.output);
  CHECK(ctx.scratch == h.scratch);
  CHECK(ctx.abortFlag == &h.abortFlag);

  // Threadblocks and their op lists, relocated and copied.
  const ThreadblockDevice* blocks = inImage<ThreadblockDevice>(img, ctx.blocks);
  REQUIRE(img.blockOpListBytes.size() == 2);
  for (int t = 0; t < 2; ++t) {
    const ThreadblockDevice& src = h.blocks[t];
    const ThreadblockDevice& dst = blocks[t];
    CHECK(dst.nOps == src.nOps);
    CHECK(dst.nRefs == src.nRefs);
    CHECK(dst.nIds == src.nIds);
    CHECK(dst.planTbId == src.planTbId);
    CHECK(img.blockOpListBytes[t] == blockOpListBytes(src));
    for (const void* p :
         {static_cast<const void*>(dst.ops), static_cast<const void*>(dst.refs), static_cast<const void*>(dst.ids)}) {
      CHECK((reinterpret_cast<uint64_t>(p) - base) % 16 == 0);
      CHECK(reinterpret_cast<uint64_t>(p) - base < img.mutableOffset);
    }
    CHECK(std::memcmp(inImage<plan::Op>(img, dst.ops), src.ops, src.nOps * sizeof(plan::Op)) == 0);
  }
  CHECK(std::memcmp(inImage<ResolvedRef>(img, blocks[0].refs), h.refs0.data(), 5 * sizeof(ResolvedRef)) == 0);
  CHECK(inImage<ResolvedRef>(img, blocks[0].refs)[4].base == h.input);
  CHECK(inImage<uint32_t>(img, blocks[1].ids)[1] == 9);

  // Channel handles: the expected counters moved into the mutable section with
  // their values; the shared counters (ours and the peer's) kept.
  const MemoryChannelDeviceHandle& mem = *inImage<MemoryChannelDeviceHandle>(img, ctx.memoryChannels);
  CHECK(mem.semaphore_.inboundCounter == &h.myCounter);
  CHECK(mem.semaphore_.outboundCounter == &h.peerCounter);
  CHECK(*inImage<uint64_t>(img, mem.semaphore_.expectedInboundCounter) == 7);
  CHECK(reinterpret_cast<uint64_t>(mem.semaphore_.expectedInboundCounter) - base >= img.mutableOffset);
  const PortChannelDeviceHandle& port = *inImage<PortChannelDeviceHandle>(img, ctx.portChannels);
  CHECK(*inImage<uint64_t>(img, port.semaphore_.expectedInboundCounter) == 11);
  CHECK(reinterpret_cast<uint64_t>(port.semaphore_.expectedInboundCounter) - base >= img.mutableOffset);

  const SwitchChannelDeviceHandle& sw = *inImage<SwitchChannelDeviceHandle>(img, ctx.switchChannels);
  CHECK(sw.nMembers == 3);
  CHECK(sw.myIndex == 1);
  CHECK(sw.devicePtr == h.memberBuffers[1]);
  for (int i = 0; i < 3; ++i) CHECK(inImage<void*>(img, sw.memberPtrs)[i] == h.memberBuffers[i]);

  // Mutable state with the host's current values.
  CHECK(reinterpret_cast<uint64_t>(ctx.state) == base + img.stateOffset);
  CHECK(reinterpret_cast<uint64_t>(ctx.blockRecords) == base + img.recordsOffset);
  CHECK(inImage<ExecState>(img, ctx.state)->flag == 5);
  CHECK(inImage<ExecState>(img, ctx.state)->firstFailedBlock == UINT32_MAX);
  CHECK(inImage<BlockRecord>(img, ctx.blockRecords)[1].opIndex == 42);
  const uint32_t* sems = inImage<uint32_t>(img, ctx.semaphores);
  CHECK((sems[0] == 1 && sems[1] == 2 && sems[2] == 3));
  CHECK(reinterpret_cast<uint64_t>(ctx.semaphores) - base >= img.mutableOffset);
  CHECK(reinterpret_cast<uint64_t>(ctx.barriers) - base >= img.mutableOffset);

  // Packing again at another base gives the same bytes outside the relocated pointers' values.
  const PackedImage other = packDeviceImage(h.d, base + 0x1000);
  CHECK(other.bytes.size() == img.bytes.size());
  CHECK(other.mutableOffset == img.mutableOffset);
}

TEST_CASE("CUDA image: refuses a bad base or a channel without counter", "[exec][cuda]") {
  HostImage h;
  Error e = errorOf([&] { packDeviceImage(h.d, 0x1008); });
  CHECK(e.code() == ErrorCode::InternalError);
  CHECK(contains(e.what(), "0x1008 is not 16-aligned"));
  h.port.semaphore_.expectedInboundCounter = nullptr;
  e = errorOf([&] { packDeviceImage(h.d, 0x1000); });
  CHECK(contains(e.what(), "port channel 0 has no expected counter"));
  HostImage g;
  g.sw.memberPtrs = nullptr;
  e = errorOf([&] { packDeviceImage(g.d, 0x1000); });
  CHECK(contains(e.what(), "switch channel 0 has 3 members but no member table"));
}

TEST_CASE("CUDA image: an empty context packs to its fixed sections", "[exec][cuda]") {
  ExecContextDevice d{};
  ExecState st{};
  st.flag = 1;
  d.state = &st;
  const PackedImage img = packDeviceImage(d, 0);
  CHECK(img.bytes.size() == packedImageBytes(d));
  CHECK(img.blockOpListBytes.empty());
  CHECK(img.mutableBytes >= sizeof(ExecState));
}

TEST_CASE("CUDA image: a real plan's contexts pack every op list", "[exec][cuda]") {
  auto p = plan::loadPlanFile(test::defaultPlanDir() + "/allreduce_ll_n4_ip.json");
  LocalWorld world(p, 4096, 4096, DataType::Float32);
  for (int r = 0; r < world.nRanks(); ++r) {
    auto image = ContextImage::build(p, r, world.shape(r), world.resources(r), nullptr, 0);
    const ExecContextDevice& d = image->device();
    const uint64_t base = 0x10000;
    const PackedImage img = packDeviceImage(d, base);
    REQUIRE(img.blockOpListBytes.size() == p->ranks[r].threadblocks.size());
    const ExecContextDevice& ctx = *reinterpret_cast<const ExecContextDevice*>(img.bytes.data() + img.contextOffset);
    const ThreadblockDevice* blocks = inImage<ThreadblockDevice>(img, ctx.blocks);
    for (uint32_t t = 0; t < d.nBlocks; ++t) {
      const plan::ThreadblockPlan& tb = p->ranks[r].threadblocks[t];
      REQUIRE(blocks[t].nOps == tb.ops.size());
      CHECK(std::memcmp(inImage<plan::Op>(img, blocks[t].ops), tb.ops.data(), tb.ops.size() * sizeof(plan::Op)) == 0);
      CHECK(img.blockOpListBytes[t] == blockOpListBytes(d.blocks[t]));
      // Far below any GPU's shared memory: the presets run with their op lists in shared memory.
      CHECK(img.blockOpListBytes[t] < 48 * 1024);
    }
    CHECK(inImage<ExecState>(img, ctx.state)->flag == 1);  // a fresh context's first LL flag
  }
}

// ---- topology --------------------------------------------------------------------------------

namespace {

GpuRankIdentity identity(int rank, uint64_t host, int pid, uint64_t token, uint8_t gpu) {
  GpuRankIdentity id{};
  id.magic = kGpuIdentityMagic;
  id.hostHash = host;
  id.pid = pid;
  id.processToken = token;
  id.rank = rank;
  id.device = gpu;
  id.uuid[0] = gpu;
  return id;
}

}  // namespace

TEST_CASE("CUDA topology: threads, other processes, GPUs and hosts", "[exec][cuda]") {
  std::vector<GpuRankIdentity> ids = {
      identity(0, 1, 100, 7, 0),  // this process, GPU 0
      identity(1, 1, 100, 7, 0),  // a thread of this process on the same GPU
      identity(2, 1, 200, 8, 0),  // another process on the same GPU
      identity(3, 1, 100, 7, 1),  // this process, another GPU
      identity(4, 2, 100, 7, 0),  // another host (same pid and token by chance)
      identity(5, 1, 100, 9, 0),  // a forked child: same pid, new token
  };
  GpuTopology t(0, ids);
  CHECK(t.size() == 6);
  CHECK(t.coResidentRanks() == std::vector<int>{0, 1});
  CHECK(t.sameGpuOtherProcesses() == std::vector<int>{2, 5});
  CHECK(t.otherHosts() == std::vector<int>{4});
  CHECK(t.sameProcess(3));
  CHECK_FALSE(t.sameGpu(3));
  CHECK_FALSE(t.sameProcess(4));
  CHECK_FALSE(t.sameGpu(4));
  GpuTopology t3(3, ids);
  CHECK(t3.coResidentRanks() == std::vector<int>{3});
  CHECK(t3.sameGpuOtherProcesses().empty());
}

TEST_CASE("CUDA topology: MPS residency, process and GPU groups", "[exec][cuda]") {
  std::vector<GpuRankIdentity> ids = {
      identity(0, 1, 100, 7, 0),  // this process, GPU 0
      identity(1, 1, 100, 7, 0),  // a thread of this process on the same GPU
      identity(2, 1, 200, 8, 0),  // another process on the same GPU
      identity(3, 1, 100, 7, 1),  // this process, another GPU
  };
  GpuTopology t(0, ids);
  CHECK(t.residentRanks(false) == std::vector<int>{0, 1});    // time-sliced: only this process's
  CHECK(t.residentRanks(true) == std::vector<int>{0, 1, 2});  // MPS: the other process's kernels share the SMs
  CHECK(t.processGpuGroups() == std::vector<std::vector<int>>{{0, 1}, {2}, {3}});
}

TEST_CASE("CUDA launch: MPS residency names other processes' ranks", "[exec][cuda]") {
  plan::PlanHeader h;
  h.name = "p";
  h.source = "p.json";
  GpuDeviceLimits dev;
  dev.device = 0;
  dev.name = "GPU";
  dev.smCount = 4;
  ResidencyVerdict v = checkResidency(h, {0, 1}, 8, 1024, 0, 1, dev, {1});
  CHECK_FALSE(v.ok);
  CHECK(contains(v.reason, "rank 1 of them in another process"));
  v = checkResidency(h, {0, 1}, 4, 1024, 0, 1, dev, {1});
  CHECK(v.ok);
}

TEST_CASE("CUDA launch: ranks sharing a GPU need a hardware queue each", "[exec][cuda]") {
  plan::PlanPtr p = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/allreduce_2node_n4_oop.json");
  plan::PlanPtr q = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/allreduce_ll_n4_oop.json");
  CHECK(concurrentStreams(*p, {0, 1, 2, 3}) == 8);  // port channels: a proxy stream per rank
  CHECK(concurrentStreams(*q, {0, 1, 2, 3}) == 4);
  CHECK(queueProblem(p->header, {0, 1, 2, 3}, 8, 8).empty());
  const std::string why = queueProblem(p->header, {0, 1, 2, 3}, 8, 4);
  CHECK(contains(why, "CUDA_DEVICE_MAX_CONNECTIONS=4"));
  CHECK(contains(why, "at least 8"));
}

TEST_CASE("CUDA topology: non-GPU-executor identities are refused", "[exec][cuda]") {
  std::vector<GpuRankIdentity> ids = {identity(0, 1, 1, 1, 0), identity(1, 1, 1, 1, 0)};
  ids[1].magic = 0x1234;
  Error e = errorOf([&] { GpuTopology(0, ids); });
  CHECK(e.code() == ErrorCode::RemoteError);
  CHECK(contains(e.what(), "rank 1 sent an identity that is not a GPU executor's (magic 0x1234, rank 1)"));
  ids[1] = identity(0, 1, 1, 1, 0);  // says it is rank 0
  e = errorOf([&] { GpuTopology(0, ids); });
  CHECK(contains(e.what(), "rank 1 sent an identity"));
  e = errorOf([&] { GpuTopology(2, {identity(0, 1, 1, 1, 0)}); });
  CHECK(e.code() == ErrorCode::InternalError);
}

TEST_CASE("CUDA topology: the MPS daemon is found by its control socket", "[exec][cuda]") {
  char dir[] = "/tmp/mscclpp_mps_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  CHECK_FALSE(mpsDaemonVisible(""));
  CHECK_FALSE(mpsDaemonVisible(dir));
  const std::string control = std::string(dir) + "/control";
  FILE* f = std::fopen(control.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fclose(f);
  CHECK(mpsDaemonVisible(dir));
  ::unlink(control.c_str());
  ::rmdir(dir);
}

// ---- context cache ---------------------------------------------------------------------------

TEST_CASE("context cache: LRU eviction; a lookup moves to the front", "[exec][cuda]") {
  ContextCache<int, std::string> cache(2);
  std::vector<std::unique_ptr<std::string>> evicted;
  cache.insert(1, std::make_unique<std::string>("one"), &evicted);
  cache.insert(2, std::make_unique<std::string>("two"), &evicted);
  CHECK(evicted.empty());
  REQUIRE(cache.find(1) != nullptr);  // 1 is now the most recently used
  CHECK(*cache.find(1) == "one");
  cache.insert(3, std::make_unique<std::string>("three"), &evicted);
  REQUIRE(evicted.size() == 1);
  CHECK(*evicted[0] == "two");
  CHECK(cache.find(2) == nullptr);
  CHECK(cache.size() == 2);
  std::vector<int> order;
  cache.forEach([&](const int& k, std::string&) { order.push_back(k); });
  CHECK(order == std::vector<int>{3, 1});
  std::string* one = cache.find(1);
  std::unique_ptr<std::string> taken = cache.erase(one);
  REQUIRE(taken != nullptr);
  CHECK(*taken == "one");
  CHECK(cache.erase(one) == nullptr);
  CHECK(cache.size() == 1);
  cache.setCapacity(0);  // at least one entry
  CHECK(cache.capacity() == 1);
  cache.clear();
  CHECK(cache.size() == 0);
}

// ---- no device -------------------------------------------------------------------------------

TEST_CASE("CUDA without a device: clear errors; CPU comms stay on CPU", "[exec][cuda]") {
  if (cudaDeviceVisible()) {
    WARN("a CUDA device is visible: the no-device paths are checked on machines without one");
    return;
  }
  // A CPU-only build has no device code at all; a CUDA build has it but no
  // device to launch on. A CUDA build has the types of gpu_types: the dispatch
  // must reach each of their kernels (a missing one means the linker left its
  // translation unit out of the static library).
  const std::string compiled = std::string(",") + MSCCLPP_TEST_GPU_TYPES + ",";
#define MSCCLPP_X(E, T, S) CHECK(gpuHasDtype(DataType::E) == (compiled.find("," #S ",") != std::string::npos));
  MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
  Error e = errorOf([&] { GpuBackend::create(nullptr); });
  CHECK(e.code() == ErrorCode::NotSupported);
  CHECK(contains(e.what(), "MSCCLPP_BACKEND=cpu"));
  for (int t = 0; t < kNumDataTypes; ++t) {
    const DataType dtype = static_cast<DataType>(t);
    INFO("datatype " << dataTypeName(dtype));
    e = errorOf([&] { launchExecutorKernel(dtype, ReduceOp::Sum, GpuLaunch{}); });
    CHECK(e.code() == (gpuHasDtype(dtype) ? ErrorCode::CudaError : ErrorCode::NotSupported));
  }

  const int n = 4;
  auto group = InProcessBootstrap::createGroup(n);
  std::vector<std::shared_ptr<Communicator>> comms(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      comms[r] = std::make_shared<Communicator>(std::make_shared<InProcessBootstrap>(group, r), kHostDevice);
    });
  for (auto& t : threads) t.join();
  std::shared_ptr<Communicator> comm = comms[0];
  REQUIRE(comm != nullptr);
  auto p = plan::loadPlanFile(test::defaultPlanDir() + "/allreduce_ll_n4_ip.json");
  {
    ScopedEnv env("MSCCLPP_BACKEND", "auto");
    exec::RuntimeExecutor ex(comm);
    CHECK(ex.backend() == Backend::Cpu);
    std::string message = "untouched";
    CHECK_FALSE(ex.pollAsyncError(&message));
    CHECK(message == "untouched");
  }
  {
    // Forced: the executor says cuda, and the first call says why it cannot run.
    ScopedEnv env("MSCCLPP_BACKEND", "cuda");
    exec::RuntimeExecutor ex(comm);
    CHECK(ex.backend() == Backend::Cuda);
    std::vector<float> buf(64);
    e = errorOf([&] {
      ex.execute(0, buf.data(), buf.data(), 256, 256, DataType::Float32, p, nullptr, PacketType::LL16, ReduceOp::Sum);
    });
    CHECK(e.code() == ErrorCode::NotSupported);
    CHECK(contains(e.what(), "MSCCLPP_BACKEND=cpu"));
    CHECK(ex.contextCount() == 0);
  }
}

TEST_CASE("CUDA: an Executor on a shared-memory wiring refuses cuda", "[exec][cuda]") {
  auto wiring = std::make_shared<LocalWorldWiring>(4);
  exec::RuntimeExecutor ex(wiring, Backend::Cuda);
  CHECK(ex.backend() == Backend::Cuda);
  auto p = plan::loadPlanFile(test::defaultPlanDir() + "/allreduce_ll_n4_ip.json");
  std::vector<float> buf(64);
  Error e = errorOf([&] { ex.execute(0, buf.data(), buf.data(), 256, 256, DataType::Float32, p); });
  CHECK(e.code() == ErrorCode::NotSupported);
  CHECK(contains(e.what(), "the CUDA backend needs an Executor built on a Communicator"));
}
