// The plan registry: every plan a process may run, indexed for selection.
// Plans come from the plan directories, scanned once on first use, and from registration.
// A scan reads summaries; a rank's plan is loaded when a selection first needs it.
// Selection is cached per request: a warm lookup never allocates (docs/plan-core.md).
// Thread-safety: any member from any thread; lookups take a shared lock.
// The user selector runs with no lock held, so it may call back in.
// Unregistering never invalidates a plan already handed out.
// instance() is shared by the shim, the executor and the C API. It is never
// destroyed, as static destructors may use it; tests and tools make their own.
#ifndef MSCCLPP_PLAN_REGISTRY_HPP_
#define MSCCLPP_PLAN_REGISTRY_HPP_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mscclpp/plan_api.h"
#include "plan/plan.hpp"

namespace mscclpp::plan {

// One collective call as the registry sees it.
struct SelectRequest {
  Collective collective = Collective::AllReduce;
  int worldSize = 0;
  int nRanksPerNode = 0;
  uint64_t messageBytes = 0;  // allgather: the output size; else the input size
  bool inPlace = false;
  int dtype = -1;                     // ncclDataType_t
  int redOp = -1;                     // ncclRedOp_t; -1 when the collective does not reduce
  int root = -1;                      // root of a rooted collective; else -1
  int rank = -1;                      // >= 0 also loads the chosen plan for this rank
  const char* const* tags = nullptr;  // tags the plan must all carry
  int nTags = 0;
  const void* sendBuffer = nullptr;  // passed through to a user selector
  const void* recvBuffer = nullptr;
};

struct Selection {
  PlanPtr plan;             // loaded for request.rank; null without a choice or a rank
  std::string name;         // "" when no plan was chosen
  std::string source;       // file path or the name given at registration
  std::string reason;       // why this plan, or why none
  bool copyInput = false;   // copy send into recv first: an in-place plan serves an out-of-place call
  bool bySelector = false;  // the user selector decided, plan or none
  uint64_t chunkBytes = 0;
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
};
using SelectionPtr = std::shared_ptr<const Selection>;

class Registry {
 public:
  enum class Status { Ok, Duplicate, NotFound };

  // The process-wide registry.
  static Registry& instance();
  // A registry over exactly these directories, scanned on first use.
  explicit Registry(std::vector<std::string> directories);
  // A registry over the directories instance() scans (plan_dirs.hpp), for tools.
  static std::unique_ptr<Registry> fromEnvironment();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Throws InvalidPlan or SystemError when the plan does not load.
  // Returns Duplicate, changing nothing, when the name is taken.
  // tags are added to the plan's own tags.
  Status registerFile(const std::string& path, const std::vector<std::string>& tags, std::string* name = nullptr);
  Status registerJson(const std::string& json, const std::string& sourceName, const std::vector<std::string>& tags,
                      std::string* name = nullptr);
  Status unregister(const std::string& name);

  // Installs the user selector, or removes it when fn is null;
  // clears the cache.
  void setSelector(mscclppPlanSelectorFn fn, void* userData);
  // Whether a user selector is installed: then ranks with the same plans may still choose differently.
  bool hasSelector() const;

  // Number of registered plans; scans the directories first when needed.
  size_t count();
  // The i-th plan in registry order: registrations, then directory plans.
  // The strings stay valid until the plan is unregistered.
  // False when i is out of range.
  bool info(size_t i, mscclppPlanInfo* out);

  // Chooses a plan.
  // A plan that fails to load is skipped with one WARN.
  // Throws InvalidArgument for a world size or ranks per node below 1.
  SelectionPtr select(const SelectRequest& request);

  // Every candidate for request and why it runs, loses or cannot serve,
  // one per line; then the directories scanned and what the scan skipped.
  // Loads nothing; may call the user selector.
  std::string explain(const SelectRequest& request);

  // Scans the directories again; registrations stay.
  void rescan();

  // Bumped by every caller's change to the plans or the selector,
  // not by a plan found broken while selecting.
  // Callers that cache decisions, such as the shim, drop them when it moves.
  uint64_t generation() const;

  struct Entry;

 private:
  struct Impl;
  struct FromEnvironment {};
  explicit Registry(FromEnvironment);
  void ensureScanned();
  std::unique_ptr<Impl> impl_;
};

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_REGISTRY_HPP_
