// Internal to the registry: whether a plan can serve a request, and why not,
// and the default choice among those that can.
// Pure functions; the registry caches their results.
#ifndef MSCCLPP_PLAN_SELECTION_HPP_
#define MSCCLPP_PLAN_SELECTION_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan_sizing.hpp"
#include "plan/registry.hpp"
#include "plan/registry_entry.hpp"

namespace mscclpp::plan::detail {

struct Verdict {
  bool serves = false;
  bool copyInput = false;  // in-place plan for an out-of-place call
  std::string why;         // why not; empty when it serves
  uint64_t chunkBytes = 0;
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  CallGeometry geometry;  // padded when the call's parts do not fit the plan's chunks
};

Verdict judge(const Registry::Entry& entry, const SelectRequest& request);

// The default rule between two candidates that both serve:
// < 0 when a goes first, > 0 when b does. *rule names the deciding rule.
int comparePlans(const Registry::Entry& a, const Verdict& va, const Registry::Entry& b, const Verdict& vb,
                 std::string* rule);

// The best candidate that serves,
// or -1. *decidedBy names the rule that put it ahead of the runner-up;
// "" when alone.
int pickDefault(const std::vector<const Registry::Entry*>& candidates, const std::vector<Verdict>& verdicts,
                std::string* decidedBy);

// Every candidate, one per line, with why it won, lost or cannot serve.
// chosen: the index that runs, or -1; how: who decided
// ("the default rule", "the user selector").
std::string explainCandidates(const std::vector<const Registry::Entry*>& candidates,
                              const std::vector<Verdict>& verdicts, int chosen, const std::string& how);

// "allreduce on 8 ranks (8 per node), 1 MiB, in-place, float32, sum"
std::string describeRequest(const SelectRequest& request);
// "'allreduce_pkt' (plans/allreduce_pkt.json)"
std::string describePlan(const Registry::Entry& entry);

// Whether an in-place plan may serve an out-of-place
// call by copying send into recv first.
// Not reducescatter: its receive buffer is smaller than its input.
bool copyMakesInPlace(Collective collective);

}  // namespace mscclpp::plan::detail

#endif  // MSCCLPP_PLAN_SELECTION_HPP_
