#include "plan/selection.hpp"

#include <algorithm>

#include "core/format.hpp"
#include "plan/plan_names.hpp"
#include "plan/plan_sizing.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::plan::detail {
namespace {

// The request's op for PreMulSum: NCCL numbers its built-in ops 0-4 and
// user ops from 5; the executor runs every user op as PreMulSum.
constexpr int kPreMulSumOp = 5;

const char* dtypeName(int dtype) {
  static const char* const names[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
                                      "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return dtype >= 0 && dtype < 12 ? names[dtype] : nullptr;
}

const char* redOpName(int op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return op >= 0 && op <= kPreMulSumOp ? names[op] : nullptr;
}

// The ncclRedOp_t of a plan reduce op: ncclSum
// 0, ncclProd 1, ncclMax 2, ncclMin 3.
int ncclOpOf(PlanReduceOp op) {
  switch (op) {
    case PlanReduceOp::Sum:
      return 0;
    case PlanReduceOp::Prod:
      return 1;
    case PlanReduceOp::Max:
      return 2;
    case PlanReduceOp::Min:
      return 3;
    default:
      return -1;
  }
}

std::string reduceOpList(uint32_t mask) {
  std::string s;
  for (int i = 1; i <= static_cast<int>(PlanReduceOp::Max); ++i) {
    if (mask & (1u << i)) s += (s.empty() ? "" : ", ") + std::string(planReduceOpName(static_cast<PlanReduceOp>(i)));
  }
  return s;
}

std::string range(const PlanHeader& h) {
  return strFormat("[%s, %s]", formatBytes(h.minMessageSize).c_str(),
                   h.maxMessageSize == UINT64_MAX ? "unbounded" : formatBytes(h.maxMessageSize).c_str());
}

bool hasTag(const PlanHeader& h, const char* tag) {
  return std::any_of(h.tags.begin(), h.tags.end(), [&](const std::string& t) { return t == tag; });
}

}  // namespace

bool copyMakesInPlace(Collective collective) {
  return collective == Collective::AllReduce || collective == Collective::AllGather ||
         collective == Collective::AllToAll;
}

std::string describeRequest(const SelectRequest& r) {
  std::string s =
      strFormat("%s on %d ranks (%d per node), %s, %s", collectiveName(r.collective), r.worldSize, r.nRanksPerNode,
                formatBytes(r.messageBytes).c_str(), r.inPlace ? "in-place" : "out-of-place");
  if (const char* d = dtypeName(r.dtype)) s += std::string(", ") + d;
  if (r.redOp >= 0) s += ", " + (redOpName(r.redOp) ? std::string(redOpName(r.redOp)) : strFormat("op %d", r.redOp));
  if (r.root >= 0 && isRootedCollective(r.collective)) {
    s += strFormat(", root %d", r.root);
  }
  for (int i = 0; i < r.nTags; ++i) s += strFormat("%s\"%s\"", i == 0 ? ", tags " : ",", r.tags[i]);
  return s;
}

std::string describePlan(const Registry::Entry& e) {
  return strFormat("'%s' (%s)", e.header().name.c_str(), e.header().source.c_str());
}

Verdict judge(const Registry::Entry& e, const SelectRequest& r) {
  Verdict v;
  const PlanHeader& h = e.header();
  if (e.broken.load(std::memory_order_acquire)) {
    v.why = "it failed to load: " + e.brokenReason;
    return v;
  }
  if (h.nRanksPerNode != 0 && h.nRanksPerNode != r.nRanksPerNode) {
    v.why = strFormat("it serves %d ranks per node, the call has %d", h.nRanksPerNode, r.nRanksPerNode);
    return v;
  }
  // A variable-size call in place is staged by the executor.
  if (!h.inPlace && r.inPlace && !isVariableCollective(r.collective)) {
    v.why = "it is out-of-place, the call is in-place";
    return v;
  }
  if (h.inPlace && !r.inPlace) {
    if (!copyMakesInPlace(r.collective)) {
      v.why = strFormat("it is in-place, the call is out-of-place (%s cannot copy its way to in-place)",
                        collectiveName(r.collective));
      return v;
    }
    v.copyInput = true;
  }
  if (isRootedCollective(r.collective) && h.root != r.root) {
    v.why = strFormat("it has root %d, the call has root %d", h.root, r.root);
    return v;
  }
  for (int i = 0; i < r.nTags; ++i) {
    if (!hasTag(h, r.tags[i])) {
      v.why = strFormat("it lacks the tag \"%s\"", r.tags[i]);
      return v;
    }
  }
  if (r.messageBytes < h.minMessageSize || r.messageBytes > h.maxMessageSize) {
    v.why = strFormat("%s is outside its size range %s", formatBytes(r.messageBytes).c_str(), range(h).c_str());
    return v;
  }
  size_t elementBytes = 0;
  if (h.reduceOps != 0) {
    elementBytes = ncclDataTypeBytes(r.dtype);
    if (elementBytes == 0) {
      v.why = strFormat("it reduces and dtype %d is not an NCCL datatype", r.dtype);
      return v;
    }
    const uint32_t sumOnly = 1u << static_cast<unsigned>(PlanReduceOp::Sum);
    if (r.redOp >= 0) {
      if (h.reduceOps == sumOnly) {
        // The DSL's default op: the executor applies any built-in call op
        // instead, and PreMulSum (op 5, what NCCL's ncclRedOpCreatePreMulSum
        // ops are) as a sum of its scaled inputs.
        if (r.redOp > kPreMulSumOp) {
          v.why = strFormat("it cannot apply the user-defined reduce op %d", r.redOp);
          return v;
        }
      } else if ((h.reduceOps & (h.reduceOps - 1)) == 0) {
        const PlanReduceOp own = static_cast<PlanReduceOp>(__builtin_ctz(h.reduceOps));
        if (ncclOpOf(own) != r.redOp) {
          v.why = strFormat("it reduces with %s, the call asks for %s", planReduceOpName(own),
                            redOpName(r.redOp) ? redOpName(r.redOp) : strFormat("op %d", r.redOp).c_str());
          return v;
        }
      } else {
        v.why =
            strFormat("it mixes reduce ops (%s), which no single call op matches", reduceOpList(h.reduceOps).c_str());
        return v;
      }
    }
  }
  if (h.variableSizes) {
    // The message is the largest segment; the call's counts bind the rest.
    v.why = variableSizingRefusal(h, e.summary.maxScratchChunks, r.messageBytes);
    v.chunkBytes = h.slotBytes;
    v.serves = v.why.empty();
    return v;
  }
  if (!callBytesFromMessage(r.collective, r.messageBytes, r.worldSize, &v.inputBytes, &v.outputBytes, &v.why)) return v;
  // Sizes that do not fit the chunks run padded;
  // the executor decides the same.
  if (elementBytes == 0) elementBytes = ncclDataTypeBytes(r.dtype);
  const SizingResult s = sizeCall(h, e.summary.inputChunks, e.summary.outputChunks, e.summary.maxScratchChunks,
                                  r.worldSize, v.inputBytes, v.outputBytes, elementBytes, &v.geometry);
  if (!s.ok) {
    v.why = s.reason;
    return v;
  }
  v.chunkBytes = s.chunkBytes;
  v.serves = true;
  return v;
}

int comparePlans(const Registry::Entry& a, const Verdict& va, const Registry::Entry& b, const Verdict& vb,
                 std::string* rule) {
  const PlanHeader& ha = a.header();
  const PlanHeader& hb = b.header();
  // The user's plans first, whatever the other rules say:
  // a plan the user wrote serves every call it can.
  if (a.installedDefault != b.installedDefault) {
    *rule = strFormat("it is the user's plan (%s) and the other an installed default",
                      (a.installedDefault ? b : a).originName());
    return a.installedDefault ? 1 : -1;
  }
  if (va.copyInput != vb.copyInput) {
    *rule = "it needs no copy of the send buffer (exactly in-place or out-of-place like the call)";
    return va.copyInput ? 1 : -1;
  }
  if (va.geometry.padded != vb.geometry.padded) {
    *rule = "it fits the call's sizes exactly (the other runs them padded)";
    return va.geometry.padded ? 1 : -1;
  }
  if ((ha.nRanksPerNode != 0) != (hb.nRanksPerNode != 0)) {
    *rule = "it states nranks_per_node (the other serves any)";
    return ha.nRanksPerNode != 0 ? -1 : 1;
  }
  const uint64_t wa = ha.maxMessageSize - ha.minMessageSize, wb = hb.maxMessageSize - hb.minMessageSize;
  if (wa != wb) {
    *rule = strFormat("its size range %s is narrower than %s", range(wa < wb ? ha : hb).c_str(),
                      range(wa < wb ? hb : ha).c_str());
    return wa < wb ? -1 : 1;
  }
  if (a.fromDirectory != b.fromDirectory) {
    *rule = "it was registered explicitly (directory plans come after)";
    return a.fromDirectory ? 1 : -1;
  }
  if (ha.name != hb.name) {
    *rule = "its name comes first";
    return ha.name < hb.name ? -1 : 1;
  }
  *rule = "it was registered first";
  return a.order < b.order ? -1 : 1;
}

int pickDefault(const std::vector<const Registry::Entry*>& candidates, const std::vector<Verdict>& verdicts,
                std::string* decidedBy) {
  auto compare = [&](size_t a, size_t b, std::string* rule) {
    return comparePlans(*candidates[a], verdicts[a], *candidates[b], verdicts[b], rule);
  };
  int best = -1, second = -1;
  std::string rule;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!verdicts[i].serves) continue;
    if (best < 0 || compare(i, static_cast<size_t>(best), &rule) < 0) {
      second = best;
      best = static_cast<int>(i);
    } else if (second < 0 || compare(i, static_cast<size_t>(second), &rule) < 0) {
      second = static_cast<int>(i);
    }
  }
  decidedBy->clear();
  if (best >= 0 && second >= 0) compare(static_cast<size_t>(best), static_cast<size_t>(second), decidedBy);
  return best;
}

std::string explainCandidates(const std::vector<const Registry::Entry*>& candidates,
                              const std::vector<Verdict>& verdicts, int chosen, const std::string& how) {
  // Those that serve in the default rule's order, then those that cannot.
  std::vector<size_t> order;
  for (size_t i = 0; i < candidates.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (verdicts[a].serves != verdicts[b].serves) return verdicts[a].serves;
    if (!verdicts[a].serves) return false;
    std::string unused;
    return comparePlans(*candidates[a], verdicts[a], *candidates[b], verdicts[b], &unused) < 0;
  });
  std::string text;
  for (size_t i : order) {
    const Registry::Entry& e = *candidates[i];
    const Verdict& v = verdicts[i];
    text += strFormat("  %-6s %s [%s]: ",
                      static_cast<int>(i) == chosen ? "RUNS"
                      : v.serves                    ? "loses"
                                                    : "cannot",
                      describePlan(e).c_str(), e.originName());
    if (!v.serves) {
      text += v.why;
    } else if (static_cast<int>(i) == chosen) {
      text += "chosen by " + how;
    } else if (chosen < 0) {
      text += "could serve, but " + how + " chose no plan";
    } else {
      std::string rule;
      comparePlans(*candidates[static_cast<size_t>(chosen)], verdicts[static_cast<size_t>(chosen)], e, v, &rule);
      text +=
          how == "the default rule"
              ? strFormat("'%s' goes first because %s", candidates[static_cast<size_t>(chosen)]->header().name.c_str(),
                          rule.c_str())
              : "could serve, but " + how + " chose '" + candidates[static_cast<size_t>(chosen)]->header().name + "'";
    }
    if (v.serves && v.copyInput) text += " (needs a copy of the send buffer)";
    if (v.serves && v.geometry.padded) text += " (runs the call padded)";
    text += "\n";
  }
  return text;
}

}  // namespace mscclpp::plan::detail
