// The op interpreter's live waits with several threads in one block
// (reportedWait, settlePending), on host threads. The CUDA device double runs
// one thread per block, so two host threads play threads 0 and 1 of a block
// here, against a hand-built context with live-wait slots as GPU contexts
// have. The ops used need no barrier between a block's threads, since
// syncBlockThreads does nothing on the host.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "executor/exec_layout.hpp"
#include "executor/op_interpreter.hpp"
#include "mscclpp/packet_device.hpp"

using namespace mscclpp;
using namespace mscclpp::exec;

namespace {

// One block of one rank, its ops and references given, with what a GPU context
// has: a live-wait slot, a block record, the state's flag.
struct OneBlock {
  std::vector<plan::Op> ops;
  std::vector<ResolvedRef> refs;
  std::vector<uint32_t> ids;
  std::vector<uint32_t> semaphores;
  ThreadblockDevice tb{};
  ExecState state{1, 0, UINT32_MAX, 0};
  BlockRecord record{};
  LiveWaitSlot slot{};
  uint32_t abortFlag = 0;
  uint32_t call = 0;  // the launch's LaunchArgs::call
  ExecContextDevice ctx{};

  void wire() {
    tb = ThreadblockDevice{ops.data(),
                           refs.data(),
                           ids.data(),
                           static_cast<uint32_t>(ops.size()),
                           static_cast<uint32_t>(refs.size()),
                           static_cast<uint32_t>(ids.size()),
                           0};
    ctx.rank = 0;
    ctx.nBlocks = 1;
    ctx.blocks = &tb;
    ctx.chunkBytes = 1;
    ctx.scratchChunkBytes = 1;
    ctx.semaphores = semaphores.data();
    ctx.nSemaphores = static_cast<uint32_t>(semaphores.size());
    ctx.state = &state;
    ctx.blockRecords = &record;
    ctx.abortFlag = &abortFlag;
    ctx.liveWaits = &slot;
  }

  // Runs the block with `threads` host threads as its threads, until all of them finished.
  std::thread start(uint32_t threads) {
    return std::thread([this, threads] {
      std::vector<std::thread> ts;
      const LaunchArgs args{30000000000ull, static_cast<uint32_t>(PacketType::LL16), call};
      for (uint32_t t = 0; t < threads; ++t) {
        ts.emplace_back([this, t, threads, args] {
          BlockInterpreter<float, OpSum> block(ctx, tb, 0, t, threads, args);
          block.run();
        });
      }
      for (auto& t : ts) t.join();
    });
  }

  // The waiting thread + 1 (0: none) and its wait's id, read consistently: the
  // sequence count even and unchanged around the loads, as the monitor reads
  // the slot (diagnostics.cc readSlot).
  std::pair<uint32_t, uint32_t> shown() const {
    for (;;) {
      const uint32_t before = atomicLoad<uint32_t>(&slot.sequence, memoryOrderAcquire);
      const uint32_t waiting = atomicLoad<uint32_t>(&slot.waiting, memoryOrderRelaxed);
      const uint32_t id = atomicLoad<uint32_t>(&slot.id, memoryOrderRelaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if ((before & 1u) == 0 && atomicLoad<uint32_t>(&slot.sequence, memoryOrderRelaxed) == before)
        return {waiting, id};
    }
  }
  uint32_t waiting() const { return shown().first; }
};

plan::Op makeOp(plan::OpType type) {
  plan::Op op{};
  op.type = type;
  return op;
}

ResolvedRef localRef(char* base, uint64_t bytes, plan::BufferType type) {
  ResolvedRef r{};
  r.base = base;
  r.bytes = bytes;
  r.memoryId = UINT32_MAX;
  r.kind = static_cast<uint8_t>(plan::RefKind::Local);
  r.type = static_cast<uint8_t>(type);
  r.scratch = type == plan::BufferType::Scratch ? 1 : 0;
  return r;
}

// Polls cond every millisecond for up to `seconds`.
template <class Cond>
bool within(double seconds, Cond&& cond) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

// Threads 0 and 1 wait on semaphores 0 and 1 (sem_acquire with two ids). The
// slot shows one of the waits; when that one ends it clears the slot, and the
// other wait, still going on, fills it again (kRepublishWaitNs): the block does
// not show as running while a thread of it waits.
TEST_CASE("live waits: the slot shows the other thread's wait next", "[exec][livewaits]") {
  OneBlock b;
  plan::Op acquire = makeOp(plan::OpType::SemAcquire);
  acquire.nIds = 2;
  b.ops = {acquire};
  b.ids = {0, 1};
  b.semaphores = {0, 0};
  b.call = launchCallTag(7, true);  // a replay of captured call #7
  b.wire();
  std::thread block = b.start(2);
  // Both waits publish after 1 ms; the second to publish is shown.
  REQUIRE(within(5, [&] { return b.waiting() != 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::pair<uint32_t, uint32_t> first = b.shown();
  const uint32_t shown = first.first - 1, other = 1 - shown;
  REQUIRE(shown < 2);
  CHECK(first.second == shown);
  CHECK(atomicLoad<uint32_t>(&b.slot.waitKind, memoryOrderRelaxed) == static_cast<uint32_t>(WaitKind::Semaphore));
  // The wait carries its launch's call tag: the call monitor tells a replay by it.
  CHECK(atomicLoad<uint32_t>(&b.slot.call, memoryOrderRelaxed) == (kCapturedCallTag | 7u));
  atomicStore<uint32_t>(&b.semaphores[shown], 1u, memoryOrderRelease);
  // The shown wait ends and clears the slot; within a round (100 ms) the other fills it again.
  CHECK(within(2, [&] { return b.shown() == std::make_pair(other + 1, other); }));
  atomicStore<uint32_t>(&b.semaphores[other], 1u, memoryOrderRelease);
  block.join();
  CHECK(b.waiting() == 0);
  CHECK(b.record.state == kBlockFinished);
}

// upkt... repkt in place with two threads: each thread takes every other group,
// and a packet not yet come makes it leave the op at its own group; it waits
// for the packet out of the loop and resumes at that group. Packets come in
// three parts, 50 ms apart, so each thread leaves and resumes more than once. A
// thread resumed at its first group, or at the other thread's, would add some
// groups twice.
TEST_CASE("live waits: each thread resumes a packet op at its own group", "[exec][livewaits]") {
  constexpr uint64_t kGroups = 96;  // float with LL16: one 8-byte packet payload per group (2 floats)
  std::vector<float> out(2 * kGroups);
  for (size_t e = 0; e < out.size(); ++e) out[e] = 0.5f + static_cast<float>(e);
  std::vector<LL16Packet> packets(kGroups);
  std::memset(packets.data(), 0, packets.size() * sizeof(LL16Packet));
  OneBlock b;
  plan::Op reduce = makeOp(plan::OpType::ReducePackets);
  reduce.nSrc = 2;
  reduce.srcBegin = 0;
  reduce.nDst = 1;
  reduce.dstBegin = 2;
  b.ops = {reduce};
  const uint64_t bytes = out.size() * sizeof(float);
  b.refs = {localRef(reinterpret_cast<char*>(out.data()), bytes, plan::BufferType::Output),
            localRef(reinterpret_cast<char*>(packets.data()), bytes, plan::BufferType::Scratch),
            localRef(reinterpret_cast<char*>(out.data()), bytes, plan::BufferType::Output)};
  b.wire();
  // The launch's flag, read before the block runs: its thread 0 advances the
  // state's flag when it finishes, which may be before the last packets are
  // written (no block barrier on the host).
  const uint32_t flag = b.state.flag;
  auto send = [&](uint64_t from, uint64_t to) {
    for (uint64_t g = from; g < to; ++g) {
      const float pair[2] = {1000.0f + 2 * g, 1000.0f + 2 * g + 1};
      uint64_t payload = 0;
      std::memcpy(&payload, pair, sizeof(payload));
      packets[g].write(payload, flag);
    }
  };
  send(0, 10);  // thread 0 gets through group 10, thread 1 through 11, then both wait
  std::thread block = b.start(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  send(10, 41);  // thread 1 now waits at group 41, thread 0 at 42
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  send(41, kGroups);
  block.join();
  CHECK(b.record.state == kBlockFinished);
  CHECK(b.waiting() == 0);
  uint64_t wrong = 0;
  for (size_t e = 0; e < out.size(); ++e) {
    const float want = 0.5f + static_cast<float>(e) + 1000.0f + static_cast<float>(e);
    if (out[e] != want && wrong++ < 4) FAIL_CHECK("element " << e << ": " << out[e] << ", expected " << want);
  }
  CHECK(wrong == 0);
}
