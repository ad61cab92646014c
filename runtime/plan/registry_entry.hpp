// Internal to the registry: one registered plan, immutable after registration
// but for two parts. loadMutex guards the per-rank plans loaded on demand.
// broken is set once when a full load fails; brokenReason is written before its release store.
#ifndef MSCCLPP_PLAN_REGISTRY_ENTRY_HPP_
#define MSCCLPP_PLAN_REGISTRY_ENTRY_HPP_

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mscclpp/plan_api.h"
#include "plan/plan_loader.hpp"
#include "plan/registry.hpp"

namespace mscclpp::plan {

struct Registry::Entry {
  PlanSummary summary;  // its tags include those given at registration
  std::string path;     // the file; "" for a plan registered from a string
  std::string json;     // the text of a plan registered from a string
  bool fromDirectory = false;
  bool installedDefault = false;  // from the installed default plans: the user's plans come first
  uint64_t order = 0;             // registration order, the last tie-break
  std::vector<const char*> tagPointers;
  mscclppPlanInfo info{};  // the C view; its strings point into summary

  std::mutex loadMutex;
  std::unordered_map<int, std::shared_future<PlanPtr>> loads;  // by rank
  std::atomic<bool> broken{false};
  std::string brokenReason;

  const PlanHeader& header() const { return summary.header; }
  // 0: registered at run time, 1: from the user's plan directories,
  // 2: an installed default. Registry order and selection follow it.
  int originRank() const { return installedDefault ? 2 : fromDirectory ? 1 : 0; }
  // "registered", "your plan directory" or "installed default"
  const char* originName() const;
  // This rank's plan, loaded on first use.
  // Concurrent callers wait for one load, at most MSCCLPP_TIMEOUT_S.
  // Throws the load error; the caller marks the entry broken.
  PlanPtr planFor(int rank);
  void fillInfo();
};

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_REGISTRY_ENTRY_HPP_
