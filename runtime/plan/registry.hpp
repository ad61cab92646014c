// The plan registry: every plan a process may run, indexed for selection. Plans come from directories
// (MSCCLPP_PLAN_DIR, colon-separated; default the installed share/mscclpp/plans and
// ~/.cache/mscclpp/plans), scanned once, lazily, on first use, and from run-time registration (a file or
// a JSON string, with tags). A directory scan reads plan summaries only (loadPlanSummary*); the full plan
// is loaded for one rank (LoadOptions::onlyRank) the first time a selection needs it, then cached.
//
// Selection (select): collective, world size, ranks per node, message bytes within [min, max], in-place,
// dtype and reduce op, root, tags; a user selector may override; ties are broken by a fixed rule
// (docs/plan-core.md, "Selection"). Results are cached per request, so after warm-up a lookup takes a
// shared lock, hashes the request and copies a shared_ptr: it never allocates.
//
// Thread-safety: every member function may be called from any thread. Lookups hold a shared lock;
// registration parses outside the lock and then holds the exclusive lock only to insert. The user
// selector is called without any registry lock held (it may call back into the registry). Plans are
// immutable and shared (PlanPtr): unregistering a plan never invalidates a plan already handed out.
//
// Process-wide state: Registry::instance() is the one registry the NCCL shim, the executor and the
// Python package (through the C API) share; it is deliberately never destroyed (it may be used during
// static destruction). Tests and tools create their own Registry objects.
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
  uint64_t messageBytes = 0;  // allgather: the output size; otherwise the input size
  bool inPlace = false;
  int dtype = -1;                     // ncclDataType_t
  int redOp = -1;                     // ncclRedOp_t; -1 when the collective does not reduce
  int root = -1;                      // broadcast/reduce/gather/scatter root; -1 otherwise
  int rank = -1;                      // >= 0: also load the chosen plan for this rank; -1: choose only
  const char* const* tags = nullptr;  // tags the plan must all carry
  int nTags = 0;
  const void* sendBuffer = nullptr;  // passed through to a user selector
  const void* recvBuffer = nullptr;
};

struct Selection {
  PlanPtr plan;            // loaded for request.rank; null when no plan was chosen or rank < 0
  std::string name;        // "" when no plan was chosen
  std::string source;      // file path or the source name given at registration
  std::string reason;      // why this plan, or why none
  bool copyInput = false;  // an in-place plan serves an out-of-place call: copy send into recv first
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
  // A registry over exactly these directories (no environment), scanned on first use.
  explicit Registry(std::vector<std::string> directories);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registration: throws Error (InvalidPlan, SystemError) when the plan does not load; returns Duplicate
  // (registry unchanged) when a plan of that name exists. tags are added to the plan's own "tags".
  Status registerFile(const std::string& path, const std::vector<std::string>& tags, std::string* name = nullptr);
  Status registerJson(const std::string& json, const std::string& sourceName, const std::vector<std::string>& tags,
                      std::string* name = nullptr);
  Status unregister(const std::string& name);

  // Installs (fn != nullptr) or removes the user selector; clears the selection cache.
  void setSelector(mscclppPlanSelectorFn fn, void* userData);

  // Number of registered plans (scans the directories first if not done yet).
  size_t count();
  // The i-th plan in registry order (registrations in call order, then directory plans in scan order).
  // The strings stay valid until the plan is unregistered. False when i is out of range.
  bool info(size_t i, mscclppPlanInfo* out);

  // Chooses a plan. Never throws for a plan that fails to load (it is skipped with one WARN); throws
  // InvalidArgument for a malformed request (world size < 1, ranks per node < 1).
  SelectionPtr select(const SelectRequest& request);

  // Drops the directory plans and scans the directories again (run-time registrations stay).
  void rescan();

  // Bumped by every change a caller makes to the set of plans or the selector (register,
  // unregister, setSelector, rescan; not by a plan found broken while selecting): a caller that
  // caches decisions (the NCCL shim's agreed plans) drops them when it moves. One atomic load.
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
