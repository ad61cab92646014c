// The plan verifier proves, without running a plan, that it implements its collective
// for every message size it accepts, or says why not (docs/plan-verifier.md).
// It runs consecutive calls symbolically over all ranks, orders them by the
// executor's synchronisation, and reports deadlocks, races, wrong results and leftovers.
// It reads plan.hpp only, so the registry and the C API can call it.
// Thread-safety: verifyPlan keeps no state.
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
  Unchecked,    // a size the executor refuses, or a plan the verifier cannot judge
};
const char* findingKindName(FindingKind kind);

// One op of the plan, as a finding names it.
struct OpSite {
  int rank = -1;
  int threadblock = -1;
  int op = -1;         // index in the threadblock's flat op list
  int iteration = -1;  // pipeline iteration; -1 outside pipelines
  std::string name;    // "wait", "put"; "" for the host's step between calls
  std::string source;  // the DSL line, "prog.py:42", when the plan has it
  bool valid() const { return rank >= 0; }
};

struct Finding {
  FindingKind kind = FindingKind::Race;
  OpSite at;                // the op at fault: a race's later access, the stuck wait, the last writer
  OpSite other;             // the other op of a race or a signal and wait; may be invalid
  std::string buffer;       // "rank 1 scratch"; "" when no buffer is involved
  std::string chunks;       // "chunk 3", "chunks 2-3", "chunk 3 bytes [16, 32)"
  int call = -1;            // which consecutive call, from 0; -1 for none in particular
  uint64_t chunkBytes = 0;  // the chunk size the finding was made at
  std::string message;      // what is wrong and why, one paragraph
};

// A relation the plan picture draws,
// from the first call at the first size checked:
// a signal and the wait it surely releases,
// or data one rank wrote and another read.
struct Flow {
  enum class Kind : uint8_t { Signal, Data };
  Kind kind = Kind::Signal;
  OpSite from, to;
  ChannelType channel = ChannelType::None;  // Signal: the channel's type; None for a semaphore
  bool relaxed = false;                     // Signal: rlxsignal and rlxwait
};

struct Options {
  // The executor's MSCCLPP_REUSE_SCRATCH_BYTES, with its default:
  // the scratch a reuse_resources plan may allocate.
  // Pipelined scratch wraps beyond it.
  uint64_t reuseScratchBytes = 134217728;
  // Most findings reported: the first ones found, in a fixed order.
  size_t maxFindings = 16;
  // The most events of a model.
  // A chunk size needing more is reported unchecked:
  // tiny pipeline units over large chunks. 64-rank plans stay far below it.
  uint64_t maxEvents = 8'000'000;
  // Fills Result::flows, for mscclpp-plan show.
  bool collectFlows = false;
  // How a kernel boundary publishes writes; docs/plan-verifier.md has the model.
  // false, MSCCL++'s model:
  // all that ran before a launch ended is visible after it,
  // so a relaxed signal can order another rank's write before the end.
  // true, the PTX memory model taken strictly:
  // that write must be released to the ending rank by a non-relaxed signal.
  bool strictKernelBoundaries = false;
};

struct Result {
  bool proven = false;  // no finding of any kind
  std::vector<Finding> findings;
  // Chunk sizes checked, in bytes.
  // They stand for every size the plan accepts, or,
  // when sizesStandForAll is false, are a representative set.
  std::vector<uint64_t> chunkSizes;
  bool sizesStandForAll = true;
  bool everyBinding = false;  // a variable-size plan: proven for every binding of its counts
  std::string sizeNote;       // how the sizes were chosen
  bool resultChecked = true;  // false for test and custom plans: only hazards are checked
  uint64_t events = 0;        // size of the largest model built, for the benchmark
  uint64_t accesses = 0;
  std::vector<Flow> flows;  // with Options::collectFlows
};

Result verifyPlan(const Plan& plan, const Options& options = Options());

// "rank 1 threadblock 0 op 3 (wait, FILE:LINE)":
// the op, its name, its DSL line.
std::string describeSite(const OpSite& site);
// The text report: a header line with the verdict,
// then one block per finding.
std::string formatResult(const Plan& plan, const Result& result);
// One line for the registry's WARN and the compiler's error:
// "deadlock: rank 1 threadblock 0 op 3 (wait): ...".
std::string formatFinding(const Finding& finding);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_VERIFY_HPP_
