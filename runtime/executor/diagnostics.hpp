// Turns the blocks' records (exec_layout.hpp BlockRecord) into sentences: which rank, threadblock,
// op and pipeline iteration each block stopped at and what it waited for ("wait on memory channel 3
// (peer 5): signal #7 expected, counter at 6"). Used by both backends after a failed launch, and by
// the emulator to print the wait-for picture of all ranks at once.
#ifndef MSCCLPP_EXECUTOR_DIAGNOSTICS_HPP_
#define MSCCLPP_EXECUTOR_DIAGNOSTICS_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "executor/exec_layout.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// One line for block `block` of `rank`; launchFlag is the flag of the launch being described (a
// record finished with another flag belongs to an earlier launch: the block was still running).
std::string describeBlock(const plan::Plan& plan, int rank, uint32_t block, const BlockRecord& record,
                          uint32_t launchFlag);

// True when the record says the block stopped (timeout, abort or invalid request) in that launch.
inline bool blockStopped(const BlockRecord& r) { return r.state >= kBlockTimedOut; }

// The lines of every block of a rank that did not finish, the block that timed out first marked
// "(first to time out)". Empty when all finished.
std::vector<std::string> describeUnfinishedBlocks(const plan::Plan& plan, int rank, const BlockRecord* records,
                                                  uint32_t nBlocks, uint32_t launchFlag, uint32_t firstFailedBlock);

// One unfinished threadblock of a running launch, and whom it waits for.
struct BlockWait {
  static constexpr int32_t kAnyPeer = -1;  // LL packets several ranks (or unknown ones) write
  static constexpr int32_t kBusy = -2;     // running (copying, reducing, flushing: the proxy works)
  int32_t target = kBusy;                  // the rank whose signal releases it (itself: barrier, semaphore)
  std::string
      text;  // "rank 0 threadblock 1 op 3 (wait) waits on memory channel 2 (peer 3): signal #5 expected, counter at 4"
};

// While a CPU-backend launch runs (long-wait reports, the call monitor): every block of `rank` that
// has not finished launch `launchFlag`, with what it waits for now, read from the live counters, or
// that it is running. *progress changes whenever a block moves (op, iteration, counters). Reads the
// records and counters with atomic loads while blocks write them.
std::vector<BlockWait> describeLiveBlocks(const plan::Plan& plan, int rank, const ExecContextDevice& dev,
                                          uint32_t launchFlag, uint64_t* progress);

// While a GPU launch runs (the call monitor): the blocks of `rank` that have not finished the
// running launch, from their host-mapped live-wait slots (exec_layout.hpp LiveWaitSlot): what each
// waits for, as the device wrote it when the wait had lasted kReportWaitAfterNs, or that it is
// running (no long wait now, or the slot is being rewritten). One "kernel runs" line while no
// block waits long. *progress changes whenever a slot does (a wait published or cleared, a block
// finished); *launch says which launch the waiting blocks run.
struct WaitingLaunch {
  uint32_t flag = 0;  // its LL flag (0: no block waits long)
  uint32_t call = 0;  // its LaunchArgs::call (launchCallTag)
};
std::vector<BlockWait> describeWaitSlots(const plan::Plan& plan, int rank, const LiveWaitSlot* slots, uint32_t nBlocks,
                                         uint64_t* progress, WaitingLaunch* launch = nullptr);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_DIAGNOSTICS_HPP_
