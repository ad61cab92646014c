// launchKernel on the CPU backend (mscclpp/host_launch.hpp) and the grid
// barrier DeviceSyncer that kernels launched with it use.
#include <atomic>
#include <catch2/catch.hpp>
#include <vector>

#include "api_test_util.hpp"

using namespace mscclpp;
using mscclpp::test::kMs;

namespace {

// Records each block's position, then waits (bounded) until every block has
// arrived: this only finishes when the blocks really run at the same time.
struct PositionKernel {
  uint32_t* blockSeen;  // [block] = blockIndex() + 1
  uint32_t* shape;      // [block * 3 + ...] = gridBlocks(), threadIndex(), blockThreads()
  uint32_t* arrived;
  uint32_t* timedOut;

  MSCCLPP_HOST_DEVICE void operator()() const {
    uint32_t b = blockIndex();
    blockSeen[b] = b + 1;
    shape[b * 3] = gridBlocks();
    shape[b * 3 + 1] = threadIndex();
    shape[b * 3 + 2] = blockThreads();
    uint32_t n = gridBlocks();
    atomicFetchAdd<uint32_t, scopeDevice>(arrived, 1u, memoryOrderRelaxed);
    SpinStatus st = spinUntil([&] { return atomicLoad<uint32_t, scopeDevice>(arrived, memoryOrderRelaxed) == n; },
                              deadlineAfter(10000 * kMs), nullptr);
    if (st != SpinStatus::Ok) atomicFetchAdd<uint32_t, scopeDevice>(timedOut, 1u, memoryOrderRelaxed);
  }
};

struct FailingKernel {
  uint32_t failingBlock;
  MSCCLPP_HOST_DEVICE void operator()() const {
    if (blockIndex() == failingBlock) failSpin(SpinStatus::Timeout, "block wait in FailingKernel");
  }
};

// Each round: every block stamps its slot, syncs, checks every slot carries this round, syncs.
struct SyncerKernel {
  DeviceSyncer* syncer;
  uint32_t* slots;
  uint32_t* stale;  // [block]: slots seen with an older round
  uint32_t rounds;

  MSCCLPP_HOST_DEVICE void operator()() const {
    uint32_t b = blockIndex(), n = gridBlocks();
    for (uint32_t round = 1; round <= rounds; ++round) {
      slots[b] = round;
      syncer->sync(n);
      for (uint32_t k = 0; k < n; ++k) {
        if (slots[k] != round) stale[b]++;
      }
      syncer->sync(n);
    }
  }
};

}  // namespace

TEST_CASE("launchKernel runs one host thread per block, all at once", "[api][launch]") {
  const uint32_t blocks = 6;
  std::vector<uint32_t> seen(blocks, 0), shape(blocks * 3, 99);
  uint32_t arrived = 0, timedOut = 0;
  launchKernel(kHostDevice, PositionKernel{seen.data(), shape.data(), &arrived, &timedOut}, {blocks, 256});
  CHECK(timedOut == 0);
  CHECK(arrived == blocks);
  for (uint32_t b = 0; b < blocks; ++b) {
    CHECK(seen[b] == b + 1);
    CHECK(shape[b * 3] == blocks);
    CHECK(shape[b * 3 + 1] == 0);  // a CPU-backend block is one thread, whatever threadsPerBlock says
    CHECK(shape[b * 3 + 2] == 1);
  }
  // Outside a launch (and after one, on the launching thread) the grid is one block of one thread.
  CHECK(blockIndex() == 0);
  CHECK(gridBlocks() == 1);
  CHECK(threadIndex() == 0);
  CHECK(blockThreads() == 1);
}

TEST_CASE("launchKernel reports failing blocks, refuses bad launches", "[api][launch]") {
  for (uint32_t failing : {0u, 3u}) {
    try {
      launchKernel(kHostDevice, FailingKernel{failing}, {4, 1});
      FAIL("launchKernel returned although block " << failing << " threw");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Timeout);
      CHECK(std::string(e.what()) ==
            "block wait in FailingKernel did not complete within its timeout (MSCCLPP_TIMEOUT_S)");
    }
  }
  CHECK_THROWS_WITH(launchKernel(kHostDevice, FailingKernel{9}, {0, 1}),
                    "launchKernel: 0 blocks requested; the CPU backend runs 1..1024 blocks per launch");
  CHECK_THROWS_WITH(launchKernel(kHostDevice, FailingKernel{9}, {1025, 1}),
                    "launchKernel: 1025 blocks requested; the CPU backend runs 1..1024 blocks per launch");
  try {
    launchKernel(0, FailingKernel{9}, {1, 1});
    FAIL("a GPU launch from a host-compiled file did not fail");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::NotSupported);
    CHECK(std::string(e.what()) ==
          "launchKernel: CUDA device 0 requested from a translation unit not compiled by nvcc: compile the file that "
          "launches the kernel with nvcc, or run on the CPU backend (device -1, MSCCLPP_BACKEND=cpu)");
  }
  CHECK_THROWS_WITH(launchKernel(kDeviceAuto, FailingKernel{9}),
                    "launchKernel: device -2 is neither a CUDA device ordinal nor kHostDevice (-1); pass "
                    "Communicator::device()");
}

TEST_CASE("DeviceSyncer::sync(nBlocks) is a reusable grid barrier", "[api][device_syncer]") {
  const uint32_t blocks = 5, rounds = 100;
  DeviceSyncer syncer{};
  std::vector<uint32_t> slots(blocks, 0), stale(blocks, 0);
  launchKernel(kHostDevice, SyncerKernel{&syncer, slots.data(), stale.data(), rounds}, {blocks, 1});
  for (uint32_t b = 0; b < blocks; ++b) CHECK(stale[b] == 0);
  CHECK(syncer.generation == 2 * rounds);
  CHECK(syncer.count == 0);
  // The same syncer serves another launch.
  launchKernel(kHostDevice, SyncerKernel{&syncer, slots.data(), stale.data(), 3}, {blocks, 1});
  CHECK(syncer.generation == 2 * rounds + 6);
}

TEST_CASE("DeviceSyncer::sync stops at its deadline or abort flag", "[api][device_syncer]") {
  DeviceSyncer lonely{};
  CHECK(lonely.sync(2, deadlineAfter(20 * kMs), nullptr) == SpinStatus::Timeout);
  DeviceSyncer aborted{};
  uint32_t abortFlag = 1;
  CHECK(aborted.sync(2, kNoDeadline, &abortFlag) == SpinStatus::Aborted);
  DeviceSyncer convenience{};
  CHECK_THROWS_WITH(convenience.sync(2, 20 * kMs),
                    "DeviceSyncer::sync did not complete within its timeout "
                    "(MSCCLPP_TIMEOUT_S)");
  DeviceSyncer single{};
  CHECK(single.sync(1, deadlineAfter(20 * kMs), nullptr) == SpinStatus::Ok);  // one block: nobody to wait for
  CHECK(single.generation == 1);
}
