#include "executor/emulation/emulator.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/cpu/cpu_context.hpp"
#include "executor/diagnostics.hpp"
#include "executor/emulation/local_world.hpp"
#include "executor/emulation/reference.hpp"
#include "executor/scale_steps.hpp"
#include "plan/plan_sizing.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::exec {
namespace {

void copyText(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

struct RankJob {
  const LocalWorld* world;
  const EmulationOptions* opt;
  double timeout;
  const unsigned char* scalar;
  std::vector<const char*> pristine;
  const char* reduced = nullptr;  // the reference reduction (computed once, before the ranks start)
  // Variable-size plans: each iteration's count matrix, and its reduction for reducescatterv.
  const std::vector<std::vector<uint64_t>>* counts = nullptr;
  const std::vector<std::vector<char>>* reducedPerIteration = nullptr;
};

// Every rank waits here between phases of an iteration. Aborted when another rank failed.
void worldBarrier(const LocalWorld& w, double timeout, const char* phase) {
  // Longer than a launch's deadline: a stuck rank times out there first,
  // with the better diagnosis, and its abort releases the others here.
  SpinStatus st = w.barrier()->sync(
      static_cast<uint32_t>(w.nRanks()),
      deadlineAfter(timeout <= 0 ? kNoDeadline : static_cast<uint64_t>((2 * timeout + 10) * 1e9)), w.abortFlag());
  if (st == SpinStatus::Aborted)
    throw Error(ErrorCode::Aborted, strFormat("stopped at the %s barrier: another rank failed", phase));
  if (st != SpinStatus::Ok) throw TimeoutError(strFormat("the emulator's %s barrier timed out", phase));
}

void rankMain(const RankJob& job, int rank) {
  const LocalWorld& w = *job.world;
  const EmulationOptions& opt = *job.opt;
  const plan::Plan& plan = *w.plan();
  RankReport* rep = w.report(rank);
  ScopedLogRank logRank(rank);
  try {
    CpuContext ctx(w.plan(), rank, w.shape(rank), w.resources(rank), job.timeout);
    CheckRequest req;
    req.collective = plan.header.collective;
    req.root = plan.header.root;
    req.nRanks = w.nRanks();
    req.dtype = opt.dtype;
    req.op = opt.op;
    req.scalar = job.scalar;
    req.inputs = job.pristine.data();
    req.inputBytes = w.inputBytes();
    req.outputBytes = w.outputBytes();
    req.reduced = job.reduced;
    const uint64_t avgBytes = reducedOutputBytes(plan.header.collective, rank, plan.header.root, w.outputBytes());
    for (int it = 0; it < opt.iterations; ++it) {
      rep->failedIteration = static_cast<uint32_t>(it);
      worldBarrier(w, job.timeout, "iteration start");
      // Poison first: for in-place plans the input then overwrites its part of the output.
      std::memset(w.output(rank), kPoisonByte, w.outputBytes());
      if (opt.op == ReduceOp::PreMulSum) {
        preMultiplyHost(opt.dtype, w.input(rank), w.pristineInput(rank), w.inputBytes(), job.scalar);
      } else {
        std::memcpy(w.input(rank), w.pristineInput(rank), w.inputBytes());
      }
      worldBarrier(w, job.timeout, "inputs ready");
      if (job.counts != nullptr) {
        // Every iteration binds new counts to the same context.
        const uint64_t* counts = (*job.counts)[it].data();
        const size_t elem = dataTypeSize(opt.dtype);
        std::string why = checkCountRule(plan, rank, counts);
        if (why.empty()) why = checkCounts(plan, rank, counts, elem, w.inputBytes(), w.outputBytes());
        if (why.empty()) why = ctx.bindSegments(counts, elem);
        if (!why.empty()) throw Error(ErrorCode::InvalidArgument, why);
        req.counts = counts;
        if (job.reducedPerIteration != nullptr) req.reduced = (*job.reducedPerIteration)[it].data();
      }
      rep->launchFlag = w.state(rank)->flag;
      auto t0 = std::chrono::steady_clock::now();
      ctx.launch(opt.dtype, nativeOpOf(opt.op), opt.packet, job.timeout,
                 opt.timeoutSeconds > 0 ? "the emulator's timeout" : "MSCCLPP_TIMEOUT_S");
      rep->launchSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (opt.op == ReduceOp::Avg && avgBytes > 0) {
        divideHost(opt.dtype, w.output(rank), avgBytes, static_cast<uint32_t>(w.nRanks()));
      }
      worldBarrier(w, job.timeout, "outputs written");
      CheckResult cr = checkOutput(req, rank, w.output(rank));
      if (cr.mismatches > 0) {
        if (rep->mismatches == 0) {
          std::string head =
              strFormat("iteration %d: %llu mismatching elements on rank %d\n", it, ull(cr.mismatches), rank);
          copyText(rep->mismatchText, sizeof(rep->mismatchText), head + cr.text);
        }
        rep->mismatches += cr.mismatches;
      }
    }
    rep->status = 1;
  } catch (const Error& e) {
    rep->status = 2;
    rep->errorCode = static_cast<uint32_t>(e.code());
    copyText(rep->error, sizeof(rep->error), e.what());
    atomicStore<uint32_t>(w.abortFlag(), 1u, memoryOrderRelaxed);
  } catch (const std::exception& e) {
    rep->status = 2;
    rep->errorCode = static_cast<uint32_t>(ErrorCode::InternalError);
    copyText(rep->error, sizeof(rep->error), e.what());
    atomicStore<uint32_t>(w.abortFlag(), 1u, memoryOrderRelaxed);
  }
}

// Waits (bounded) for the forked ranks; kills the ones still running at the deadline.
void waitChildren(std::vector<pid_t>& pids, double seconds, std::vector<int>* statuses) {
  Deadline deadline(seconds);
  statuses->assign(pids.size(), -1);
  size_t left = pids.size();
  for (unsigned i = 0; left > 0; ++i) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] <= 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        (*statuses)[r] = status;
        pids[r] = 0;
        --left;
      }
    }
    if (left == 0) break;
    if (deadline.expired()) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] > 0) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], nullptr, 0);
          pids[r] = 0;
        }
      }
      break;
    }
    backoffPause(i);
  }
}

}  // namespace

void emulationCallBytes(const plan::Plan& plan, uint64_t messageBytes, uint64_t* inputBytes, uint64_t* outputBytes) {
  const plan::Collective c = plan.header.collective;
  const int n = static_cast<int>(plan.ranks.size());
  if (c == plan::Collective::Test || c == plan::Collective::Custom) {
    const plan::RankPlan& r0 = plan.ranks.at(0);
    *inputBytes = messageBytes;
    *outputBytes = messageBytes;
    if (r0.inputChunks > 0 && r0.outputChunks > 0) {
      *outputBytes = messageBytes / r0.inputChunks * r0.outputChunks;
    } else if (r0.inputChunks == 0 && r0.outputChunks > 0) {
      *inputBytes = 0;
    }
    return;
  }
  if (plan.header.variableSizes) {
    // The buffers hold n segments of the largest size where a table partitions them.
    const bool sendParts = plan::tablePartitions(c, plan::SegmentTable::Send);
    const bool recvParts = plan::tablePartitions(c, plan::SegmentTable::Recv);
    MSCCLPP_ENFORCE(messageBytes <= UINT64_MAX / static_cast<uint64_t>(n), ErrorCode::InvalidArgument,
                    "plan %s: %d segments of %llu bytes exceed 2^64", plan.header.name.c_str(), n, ull(messageBytes));
    *inputBytes = sendParts ? messageBytes * n : messageBytes;
    *outputBytes = recvParts ? messageBytes * n : messageBytes;
    return;
  }
  std::string reason;
  MSCCLPP_ENFORCE(plan::callBytesFromMessage(c, messageBytes, n, inputBytes, outputBytes, &reason),
                  ErrorCode::InvalidArgument, "plan %s: %s", plan.header.name.c_str(), reason.c_str());
}

EmulationResult emulatePlan(const plan::PlanPtr& plan, const EmulationOptions& options) {
  EmulationOptions opt = options;
  const int planRanks = static_cast<int>(plan->ranks.size());
  if (opt.nRanks == 0) opt.nRanks = planRanks;
  MSCCLPP_ENFORCE(opt.nRanks == planRanks, ErrorCode::InvalidArgument, "plan %s is written for %d ranks, not %d",
                  plan->header.name.c_str(), planRanks, opt.nRanks);
  MSCCLPP_ENFORCE(opt.iterations >= 1, ErrorCode::InvalidArgument, "iterations must be >= 1 (got %d)", opt.iterations);
  const plan::Collective coll = plan->header.collective;
  const bool reduces = coll == plan::Collective::AllReduce || coll == plan::Collective::ReduceScatter ||
                       coll == plan::Collective::Reduce || coll == plan::Collective::Test ||
                       coll == plan::Collective::Custom || coll == plan::Collective::ReduceScatterV;
  MSCCLPP_ENFORCE(reduces || opt.op == ReduceOp::Sum, ErrorCode::InvalidArgument,
                  "plan %s is a %s: it takes no reduce op (got %s)", plan->header.name.c_str(),
                  plan::collectiveName(coll), reduceOpName(opt.op));
  MSCCLPP_ENFORCE(!((coll == plan::Collective::Test || coll == plan::Collective::Custom) &&
                    (opt.op == ReduceOp::Avg || opt.op == ReduceOp::PreMulSum)),
                  ErrorCode::NotSupported, "plan %s (%s): avg and premulsum need a standard collective",
                  plan->header.name.c_str(), plan::collectiveName(coll));
  if (reduces) checkPlanServesOp(plan->header, opt.op);
  const double timeout = opt.timeoutSeconds > 0 ? opt.timeoutSeconds : params::timeoutSeconds();

  EmulationResult result;
  emulationCallBytes(*plan, opt.sizeBytes, &result.inputBytes, &result.outputBytes);
  auto t0 = std::chrono::steady_clock::now();
  LocalWorld world(plan, result.inputBytes, result.outputBytes, opt.dtype);
  unsigned char scalar[16] = {};
  encodeScalar(opt.dtype, opt.scalar, scalar);
  RankJob job{&world, &opt, timeout, scalar, {}};
  for (int r = 0; r < opt.nRanks; ++r) {
    fillInput(opt.dtype, opt.op, opt.seed, r, world.pristineInput(r), result.inputBytes);
    job.pristine.push_back(world.pristineInput(r));
  }

  // The reference reduction, once for all ranks (children of --processes inherit it).
  std::vector<char> reduced;
  if (coll == plan::Collective::AllReduce || coll == plan::Collective::ReduceScatter ||
      coll == plan::Collective::Reduce) {
    CheckRequest req;
    req.collective = coll;
    req.nRanks = opt.nRanks;
    req.dtype = opt.dtype;
    req.op = opt.op;
    req.scalar = scalar;
    req.inputs = job.pristine.data();
    req.inputBytes = result.inputBytes;
    reduced.resize(result.inputBytes + 16);
    computeReduction(req, reduced.data());
    job.reduced = reduced.data();
  }

  // Variable-size plans: new random counts every iteration, the largest
  // segment opt.sizeBytes; reducescatterv's reference reduction per iteration.
  std::vector<std::vector<uint64_t>> counts;
  std::vector<std::vector<char>> reducedPerIteration;
  if (plan->header.variableSizes) {
    const size_t elem = dataTypeSize(opt.dtype);
    MSCCLPP_ENFORCE(opt.sizeBytes % elem == 0, ErrorCode::InvalidArgument,
                    "plan %s: the largest segment, %llu bytes, is not whole %s elements", plan->header.name.c_str(),
                    ull(opt.sizeBytes), dataTypeName(opt.dtype));
    const int n = opt.nRanks;
    for (int it = 0; it < opt.iterations; ++it) {
      counts.emplace_back(static_cast<size_t>(n) * n);
      randomCounts(coll, n, opt.sizeBytes / elem, opt.seed, static_cast<uint64_t>(it), counts.back().data());
      if (coll != plan::Collective::ReduceScatterV) continue;
      CheckRequest req;
      req.collective = plan::Collective::AllReduce;
      req.nRanks = n;
      req.dtype = opt.dtype;
      req.op = opt.op;
      req.scalar = scalar;
      req.inputs = job.pristine.data();
      req.inputBytes = result.inputBytes;
      reducedPerIteration.emplace_back(result.inputBytes + 16);
      computeReduction(req, reducedPerIteration.back().data());
    }
    job.counts = &counts;
    if (!reducedPerIteration.empty()) job.reducedPerIteration = &reducedPerIteration;
  }

  std::vector<std::string> lost;
  if (opt.processes) {
    std::vector<pid_t> pids(opt.nRanks, 0);
    for (int r = 0; r < opt.nRanks; ++r) {
      pid_t pid = fork();
      if (pid < 0) {
        atomicStore<uint32_t>(world.abortFlag(), 1u, memoryOrderRelaxed);
        std::vector<int> ignored;
        waitChildren(pids, timeout + 10, &ignored);
        throw SystemError(strFormat("fork of emulated rank %d", r), errno);
      }
      if (pid == 0) {
        // The child is one rank: it reports through the shared world and
        // must not run the parent's exit handlers.
        rankMain(job, r);
        _exit(world.report(r)->status == 1 ? 0 : 1);
      }
      pids[r] = pid;
    }
    std::vector<int> statuses;
    waitChildren(pids, (timeout * 2 + 10) * opt.iterations + 30, &statuses);
    for (int r = 0; r < opt.nRanks; ++r) {
      int s = statuses[r];
      if (s == -1 || !WIFEXITED(s) || (WEXITSTATUS(s) != 0 && world.report(r)->status != 2)) {
        lost.push_back(strFormat("rank %d process ended abnormally (%s)", r,
                                 s == -1          ? "killed at the deadline"
                                 : WIFSIGNALED(s) ? strsignal(WTERMSIG(s))
                                                  : strFormat("exit status %d", WEXITSTATUS(s)).c_str()));
      }
    }
  } else {
    std::vector<std::thread> threads;
    for (int r = 0; r < opt.nRanks; ++r) threads.emplace_back([&job, r] { rankMain(job, r); });
    for (auto& t : threads) t.join();
  }
  result.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Aggregate the reports.
  int firstFailed = -1;
  for (int r = 0; r < opt.nRanks; ++r) {
    const RankReport* rep = world.report(r);
    result.mismatches += rep->mismatches;
    result.launchSeconds = std::max(result.launchSeconds, rep->launchSeconds);
    if (rep->status != 1) {
      result.failed = true;
      // The rank whose own wait timed out explains the failure best; aborted ranks only followed.
      if (firstFailed < 0 || (world.report(firstFailed)->errorCode == static_cast<uint32_t>(ErrorCode::Aborted) &&
                              rep->errorCode != static_cast<uint32_t>(ErrorCode::Aborted))) {
        firstFailed = r;
      }
    }
  }
  result.failed |= !lost.empty();
  result.checked = coll != plan::Collective::Test && coll != plan::Collective::Custom;
  for (const auto& l : lost) result.report += l + "\n";
  if (firstFailed >= 0) {
    const RankReport* rep = world.report(firstFailed);
    result.errorCode = static_cast<ErrorCode>(rep->errorCode);
    result.report += strFormat("rank %d failed in iteration %u: %s\n", firstFailed, rep->failedIteration, rep->error);
    result.report += "wait-for picture of all ranks:\n";
    for (int r = 0; r < opt.nRanks; ++r) {
      const uint32_t nBlocks = static_cast<uint32_t>(plan->ranks[r].threadblocks.size());
      auto lines = describeUnfinishedBlocks(*plan, r, world.blockRecords(r), nBlocks, world.report(r)->launchFlag,
                                            world.state(r)->firstFailedBlock);
      if (lines.empty()) {
        result.report += strFormat("  rank %d: all %u threadblocks finished\n", r, nBlocks);
      }
      for (const auto& l : lines) result.report += "  " + l + "\n";
    }
  } else if (!lost.empty()) {
    result.errorCode = ErrorCode::SystemError;
  }
  for (int r = 0; r < opt.nRanks; ++r) result.report += world.report(r)->mismatchText;
  result.passed = !result.failed && result.mismatches == 0;
  return result;
}

}  // namespace mscclpp::exec
