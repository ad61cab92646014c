// Which abort flag a native kernel's waits read, on a hand-built context
// with what a GPU context has (a live-wait slot per block): the spins poll
// the flag's device-memory copy, and a long wait reads the host's mapped
// flag once per round and raises the copy, as the op interpreter's waits do.
// A host thread plays the block's only thread.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "mscclpp/algorithm_device.hpp"

using namespace mscclpp;

namespace {

// One rank, one block, waiting for an LL packet nobody writes.
struct WaitingBlock {
  ExecState state{1, 0, UINT32_MAX, 0};
  BlockRecord record{};
  LiveWaitSlot slot{};
  uint32_t abortFlag = 0;
  LL16Packet packet{};
  AlgorithmDeviceContext ctx{};
  std::atomic<bool> done{false};
  bool waitOk = true;
  double waitedMs = 0;

  bool gpuContext = false;

  explicit WaitingBlock(bool liveWaits) : gpuContext(liveWaits) {
    ctx.nRanks = 1;
    ctx.nBlocks = 1;
    ctx.state = &state;
    ctx.blockRecords = &record;
    ctx.abortFlag = &abortFlag;
    ctx.liveWaits = liveWaits ? &slot : nullptr;
  }

  std::thread start(uint64_t timeoutNs) {
    return std::thread([this, timeoutNs] {
      const AlgorithmLaunchArgs args{timeoutNs, 0, 0, 0, gpuContext ? kAlgorithmLaunchAbortCopy : 0u};
      const auto begin = std::chrono::steady_clock::now();
      AlgorithmBlock b(ctx, args, 0, 0, 1);
      uint64_t payload = 0;
      waitOk = b.readPacket(&packet, 0, 0, &payload);
      waitedMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
      done = true;
    });
  }
};

void raise(uint32_t* word) { atomicStore<uint32_t, scopeSystem>(word, 1u, memoryOrderRelaxed); }

}  // namespace

TEST_CASE("native waits stop at the abort flag's device copy", "[native][abort]") {
  WaitingBlock w(true);
  std::thread t = w.start(3000000000ull);  // 3 s
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE_FALSE(w.done);
  raise(&w.state.abortCopy);
  t.join();
  CHECK_FALSE(w.waitOk);
  CHECK(w.waitedMs < 1000);  // the copy's polls, not the deadline
  CHECK(w.record.state == kBlockAborted);
  CHECK(w.abortFlag == 0);  // an abort the block saw is not its own failure
}

TEST_CASE("a long native wait raises the copy from the host flag", "[native][abort]") {
  WaitingBlock w(true);
  std::thread t = w.start(3000000000ull);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE_FALSE(w.done);
  const auto raised = std::chrono::steady_clock::now();
  raise(&w.abortFlag);
  t.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - raised).count();
  CHECK_FALSE(w.waitOk);
  CHECK(ms < 100);  // within a round (kWaitRoundNs) and the polls after it
  CHECK(w.state.abortCopy == 1);
  CHECK(w.record.state == kBlockAborted);
}

TEST_CASE("CPU contexts' native waits poll the host flag", "[native][abort]") {
  WaitingBlock w(false);
  std::thread t = w.start(3000000000ull);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  raise(&w.abortFlag);
  t.join();
  CHECK_FALSE(w.waitOk);
  CHECK(w.waitedMs < 1000);
  CHECK(w.state.abortCopy == 0);  // CPU contexts have no copy
}

TEST_CASE("a failed native wait raises the flag and its copy", "[native][abort]") {
  WaitingBlock w(true);
  std::thread t = w.start(30000000ull);  // 30 ms: the wait times out
  t.join();
  CHECK_FALSE(w.waitOk);
  CHECK(w.record.state == kBlockTimedOut);
  CHECK(w.abortFlag == 1);
  CHECK(w.state.abortCopy == 1);
  CHECK(w.state.firstFailedBlock == 0);
}
