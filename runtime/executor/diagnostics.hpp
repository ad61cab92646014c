// Turns the blocks' records into sentences: which rank, threadblock, op and
// pipeline iteration each block stopped at, and what it waited for. Both
// backends use it after a failed launch, and the emulator for all ranks.
// A native algorithm's plan has no ops: its blocks report steps, named by
// `steps`, and its waits name peer ranks (mscclpp/algorithm_device.hpp).
#ifndef MSCCLPP_EXECUTOR_DIAGNOSTICS_HPP_
#define MSCCLPP_EXECUTOR_DIAGNOSTICS_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "executor/exec_layout.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// One line for block `block` of `rank` in the launch with `launchFlag`.
// A record finished with another flag is an earlier launch's: the block
// was still running.
// steps: a native kernel's step names; null for a plan.
using NativeSteps = std::vector<std::string>;
std::string describeBlock(const plan::Plan& plan, int rank, uint32_t block, const BlockRecord& record,
                          uint32_t launchFlag, const NativeSteps* steps = nullptr);

// True when the record says the block stopped (timeout, abort or invalid request) in that launch.
inline bool blockStopped(const BlockRecord& r) { return r.state >= kBlockTimedOut; }

// The lines of every block of a rank that did not finish, the first to time
// out marked so. Empty when all finished.
std::vector<std::string> describeUnfinishedBlocks(const plan::Plan& plan, int rank, const BlockRecord* records,
                                                  uint32_t nBlocks, uint32_t launchFlag, uint32_t firstFailedBlock,
                                                  const NativeSteps* steps = nullptr);

// One unfinished threadblock of a running launch, and whom it waits for.
struct BlockWait {
  static constexpr int32_t kAnyPeer = -1;  // LL packets several ranks (or unknown ones) write
  static constexpr int32_t kBusy = -2;     // running (copying, reducing, flushing: the proxy works)
  int32_t target = kBusy;                  // the rank whose signal releases it (itself: barrier, semaphore)
  // "rank 0 threadblock 1 op 3 (wait) waits on memory channel 2 (peer 3): ..."
  std::string text;
};

// A long-wait WARN's list: the first four waits' texts joined with "; ",
// then how many more blocks wait. The CPU backend and the call monitor say it alike.
std::string summarizeWaits(const std::vector<BlockWait>& waits);

// While a CPU launch runs: every block of `rank` that has not finished the
// launch, with what it waits for now, or that it runs. *progress changes
// whenever a block moves. Reads records and counters with atomic loads
// while blocks write them.
std::vector<BlockWait> describeLiveBlocks(const plan::Plan& plan, int rank, const ExecContextDevice& dev,
                                          uint32_t launchFlag, uint64_t* progress);

// While a GPU launch runs: the unfinished blocks of `rank`, from their
// live-wait slots. Each line says what the block waits for, or that it runs
// when no long wait shows. One "kernel runs" line while no block waits
// long. *progress changes whenever a slot does; *launch says which launch
// the waiting blocks run.
struct WaitingLaunch {
  uint32_t flag = 0;  // its LL flag (0: no block waits long)
  uint32_t call = 0;  // its LaunchArgs::call (launchCallTag)
};
std::vector<BlockWait> describeWaitSlots(const plan::Plan& plan, int rank, const LiveWaitSlot* slots, uint32_t nBlocks,
                                         uint64_t* progress, WaitingLaunch* launch = nullptr,
                                         const NativeSteps* steps = nullptr);

// A launch failure a block of a plan's kernel published in its live-wait
// slot (a segment its counts cannot place, a port channel request too large),
// as "rank 1 threadblock 0 op 2 (put) could not place ...", or "" when no
// slot shows one.
std::string describeSlotFailure(const plan::Plan& plan, int rank, const LiveWaitSlot* slots, uint32_t nBlocks);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_DIAGNOSTICS_HPP_
