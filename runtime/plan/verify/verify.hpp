// The plan verifier: proves, without running, that a loaded plan implements its collective for every
// message size it accepts, or says why not (docs/plan-verifier.md). It executes the plan symbolically
// at chunk granularity over all ranks and threadblocks and a few consecutive calls, builds the
// happens-before relation the executor's synchronisation gives (op_interpreter.hpp), and reports
// deadlocks, data races, wrong results and semaphore counts left over at the end of a call.
//
// Layer: plan (it reads plan.hpp only), so the registry can call it (MSCCLPP_VERIFY_PLANS) and the
// C API exposes it (mscclppPlanVerify). Thread-safety: verifyPlan is reentrant; it keeps no state.
#ifndef MSCCLPP_PLAN_VERIFY_VERIFY_HPP_
#define MSCCLPP_PLAN_VERIFY_VERIFY_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::plan::verify {

enum class FindingKind : uint8_t {
  Deadlock,     // a wait no schedule satisfies, or waits in a cycle
  Race,         // two accesses to overlapping bytes, one a write, not ordered by happens-before
  WrongResult,  // an output chunk does not hold the collective's definition at the end of a call
  Leftover,     // signals, semaphore units or barrier arrivals left over at the end of a call
  Unchecked,    // a size the executor refuses, or a plan the verifier cannot judge (said why)
};
const char* findingKindName(FindingKind kind);

// One op of the plan, as a finding names it.
struct OpSite {
  int rank = -1;
  int threadblock = -1;
  int op = -1;         // index in the threadblock's flat op list (pipeline bodies follow their pipeline)
  int iteration = -1;  // pipeline iteration, -1 outside pipelines
  std::string name;    // "wait", "put", ... ("" for a host step: the user's buffers between calls)
  std::string source;  // DSL source line ("prog.py:42") when the plan carries it
  bool valid() const { return rank >= 0; }
};

struct Finding {
  FindingKind kind = FindingKind::Race;
  OpSite at;                // the op at fault (the later access of a race, the stuck wait, the last writer)
  OpSite other;             // the other op of a race or of a signal/wait pair (invalid when none)
  std::string buffer;       // "rank 1 scratch", "rank 0 output" ("" when no buffer is involved)
  std::string chunks;       // "chunk 3", "chunks 2-3", "chunk 3 bytes [16, 32)"
  int call = -1;            // which of the consecutive calls (0-based), -1 when not call-specific
  uint64_t chunkBytes = 0;  // the chunk size the finding was made at
  std::string message;      // what is wrong and why, one paragraph
};

// A relation between two ops the picture draws (first call, first chunk size checked): a signal (or
// sem_release) and the wait (sem_acquire) it is guaranteed to release, or data one op wrote on one
// rank and an op of another rank read.
struct Flow {
  enum class Kind : uint8_t { Signal, Data };
  Kind kind = Kind::Signal;
  OpSite from, to;
  ChannelType channel = ChannelType::None;  // Signal: the channel's type (None: a semaphore)
  bool relaxed = false;                     // Signal: rlxsignal / rlxwait
};

struct Options {
  // MSCCLPP_REUSE_SCRATCH_BYTES of the executor (the scratch a reuse_resources plan's context may
  // allocate; above it pipelined scratch wraps). The default is the executor's default.
  uint64_t reuseScratchBytes = 134217728;
  // Most findings reported (the first ones found, in a deterministic order).
  size_t maxFindings = 16;
  // Largest model built (events); a chunk size whose model would be larger is reported unchecked
  // (pipelines of tiny units over large chunks). 64-rank plans stay far below it.
  uint64_t maxEvents = 8'000'000;
  // Fill Result::flows (for mscclpp-plan show).
  bool collectFlows = false;
  // How a kernel boundary publishes writes (docs/plan-verifier.md, "Kernel boundaries"). false (the
  // default, MSCCL++'s model): everything that ran before a rank's launch ended, in execution order,
  // is visible to the next launch on that rank and to its host; a relaxed signal/wait is enough to
  // order another rank's write before it. true (the PTX memory model taken strictly): the write must
  // be released to the ending rank (signal/wait, not relaxed) before its launch ends.
  bool strictKernelBoundaries = false;
};

struct Result {
  bool proven = false;  // no finding of any kind
  std::vector<Finding> findings;
  // Chunk sizes (bytes) checked and what they stand for: every size the plan accepts (proven) or a
  // representative set (pipelines: docs/plan-verifier.md says which).
  std::vector<uint64_t> chunkSizes;
  bool sizesStandForAll = true;
  std::string sizeNote;       // how the sizes were chosen
  bool resultChecked = true;  // false for test/custom plans: only hazards are checked
  uint64_t events = 0;        // size of the largest model built (for the benchmark)
  uint64_t accesses = 0;
  std::vector<Flow> flows;  // with Options::collectFlows
};

Result verifyPlan(const Plan& plan, const Options& options = Options());

// "rank 1 threadblock 0 op 3 (wait, FILE:LINE)": the op, its name and its DSL source line.
std::string describeSite(const OpSite& site);
// The text report: a header line with the verdict, then one block per finding.
std::string formatResult(const Plan& plan, const Result& result);
// One line: "deadlock: rank 1 threadblock 0 op 3 (wait): ..." (the registry's WARN, the compiler's error).
std::string formatFinding(const Finding& finding);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_VERIFY_HPP_
