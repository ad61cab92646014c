#include "plan/registry.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "plan/plan_dirs.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_names.hpp"
#include "plan/registry_entry.hpp"
#include "plan/selection.hpp"
#include "plan/verify/registry_check.hpp"

namespace mscclpp::plan {
namespace {

// A larger cache is dropped and rebuilt:
// a job uses a handful of message sizes.
constexpr size_t kMaxCachedSelections = 4096;
// Scan problems a "no plan" reason names; the WARNs name them all.
constexpr size_t kMaxScanProblems = 4;

uint64_t indexKey(Collective c, int worldSize) {
  return (static_cast<uint64_t>(c) << 32) | static_cast<uint32_t>(worldSize);
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t hashString(const char* s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}

uint64_t hashRequest(const SelectRequest& r) {
  uint64_t h = indexKey(r.collective, r.worldSize);
  h = mix(h, static_cast<uint64_t>(static_cast<uint32_t>(r.nRanksPerNode)));
  h = mix(h, r.messageBytes);
  h = mix(h, (static_cast<uint64_t>(r.inPlace) << 40) ^ (static_cast<uint64_t>(static_cast<uint32_t>(r.dtype)) << 8) ^
                 static_cast<uint32_t>(r.redOp));
  h = mix(h, (static_cast<uint64_t>(static_cast<uint32_t>(r.root)) << 32) | static_cast<uint32_t>(r.rank));
  uint64_t tags = 0;  // independent of order: required tags are a set
  for (int i = 0; i < r.nTags; ++i) tags += hashString(r.tags[i]);
  return mix(h, tags);
}

struct CachedSelection {
  SelectRequest key;  // pointers cleared; tags are copied below
  std::vector<std::string> tags;
  SelectionPtr selection;

  bool matches(const SelectRequest& r) const {
    if (r.collective != key.collective || r.worldSize != key.worldSize || r.nRanksPerNode != key.nRanksPerNode ||
        r.messageBytes != key.messageBytes || r.inPlace != key.inPlace || r.dtype != key.dtype ||
        r.redOp != key.redOp || r.root != key.root || r.rank != key.rank ||
        static_cast<size_t>(r.nTags) != tags.size()) {
      return false;
    }
    for (int i = 0; i < r.nTags; ++i) {
      if (std::find(tags.begin(), tags.end(), r.tags[i]) == tags.end()) return false;
    }
    return true;
  }
};

// Whether two files hold the same bytes,
// such as an installed default plan and the copy
// python3 -m mscclpp --install wrote into the cache.
bool sameFileContents(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  if (a.empty() || b.empty() || ::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0 || sa.st_size != sb.st_size)
    return false;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                    std::istreambuf_iterator<char>(fb));
}

void addTags(PlanHeader* h, const std::vector<std::string>& tags) {
  for (const auto& t : tags) {
    MSCCLPP_ENFORCE(!t.empty(), ErrorCode::InvalidArgument, "%s: an empty tag was given at registration",
                    h->source.c_str());
    if (std::find(h->tags.begin(), h->tags.end(), t) == h->tags.end()) h->tags.push_back(t);
  }
}

}  // namespace

PlanPtr Registry::Entry::planFor(int rank) {
  std::shared_future<PlanPtr> future;
  std::promise<PlanPtr> promise;
  bool loadHere = false;
  {
    std::lock_guard<std::mutex> lock(loadMutex);
    auto it = loads.find(rank);
    if (it == loads.end()) {
      future = promise.get_future().share();
      loads.emplace(rank, future);
      loadHere = true;
    } else {
      future = it->second;
    }
  }
  if (loadHere) {
    try {
      LoadOptions options;
      options.onlyRank = rank;
      // Every rank's part is validated, not only this rank's.
      // A plan broken for one rank is then skipped by all: ranks always agree.
      options.validateAllRanks = true;
      PlanPtr plan = path.empty() ? loadPlanJson(json, summary.header.source, options) : loadPlanFile(path, options);
      if (plan->header.name != summary.header.name) {
        MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: the plan's name changed from '%s' to '%s' since it was registered",
                      summary.header.source.c_str(), summary.header.name.c_str(), plan->header.name.c_str());
      }
      promise.set_value(std::move(plan));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  }
  const Deadline deadline = Deadline::fromTimeoutParam();
  while (future.wait_for(
             std::chrono::milliseconds(deadline.remainingMs() < 0 ? 1000 : std::min(deadline.remainingMs(), 1000))) !=
         std::future_status::ready) {
    if (deadline.expired())
      throwTimeout(deadline, strFormat("loading plan %s for rank %d", summary.header.source.c_str(), rank));
  }
  return future.get();
}

const char* Registry::Entry::originName() const {
  return installedDefault ? "installed default" : fromDirectory ? "your plan directory" : "registered";
}

void Registry::Entry::fillInfo() {
  const PlanHeader& h = summary.header;
  tagPointers.clear();
  for (const auto& t : h.tags) tagPointers.push_back(t.c_str());
  info.name = h.name.c_str();
  info.collective = collectiveName(h.collective);
  info.protocol = protocolName(h.protocol);
  info.worldSize = h.worldSize;
  info.inPlace = h.inPlace ? 1 : 0;
  info.root = isRootedCollective(h.collective) ? h.root : -1;
  info.minMessageBytes = h.minMessageSize;
  info.maxMessageBytes = h.maxMessageSize;
  info.tags = tagPointers.empty() ? nullptr : tagPointers.data();
  info.nTags = static_cast<int>(tagPointers.size());
  info.source = h.source.c_str();
}

struct Registry::Impl {
  bool fromEnvironment = false;
  std::vector<std::string> directories;

  std::mutex scanMutex;
  std::atomic<bool> scanned{false};

  mutable std::shared_mutex mutex;              // guards everything below
  std::vector<std::shared_ptr<Entry>> entries;  // registry order
  std::unordered_map<std::string, std::shared_ptr<Entry>> byName;
  std::unordered_map<uint64_t, std::vector<std::shared_ptr<Entry>>> index;  // collective + world size
  std::unordered_map<uint64_t, std::vector<CachedSelection>> cache;
  size_t cached = 0;
  uint64_t generation = 0;                  // bumped by every change that can alter a selection
  std::atomic<uint64_t> userGeneration{0};  // the callers' changes only, for generation()
  uint64_t nextOrder = 0;
  mscclppPlanSelectorFn selector = nullptr;
  void* selectorData = nullptr;

  void invalidateLocked() {
    ++generation;
    cache.clear();
    cached = 0;
  }
  // A caller's change, not a plan found broken while selecting.
  void changedLocked() {
    invalidateLocked();
    userGeneration.fetch_add(1, std::memory_order_release);
  }

  void insertLocked(const std::shared_ptr<Entry>& e) {
    e->order = nextOrder++;
    e->fillInfo();
    // Registry order, which a selector sees too: registrations first,
    // then the user's directory plans, then the installed defaults.
    // A user's plan is never hidden behind an
    // installed default of its collective:
    // a selector may well take the first candidate it likes.
    auto before = [](const std::shared_ptr<Entry>& a, const std::shared_ptr<Entry>& b) {
      return a->originRank() != b->originRank() ? a->originRank() < b->originRank() : a->order < b->order;
    };
    entries.insert(std::upper_bound(entries.begin(), entries.end(), e, before), e);
    byName.emplace(e->header().name, e);
    auto& bucket = index[indexKey(e->header().collective, e->header().worldSize)];
    bucket.insert(std::upper_bound(bucket.begin(), bucket.end(), e, before), e);
    changedLocked();
  }

  // By value: e may be the very shared_ptr held by byName,
  // which this erases.
  void eraseLocked(std::shared_ptr<Entry> e) {
    entries.erase(std::remove(entries.begin(), entries.end(), e), entries.end());
    byName.erase(e->header().name);
    auto it = index.find(indexKey(e->header().collective, e->header().worldSize));
    if (it != index.end()) {
      it->second.erase(std::remove(it->second.begin(), it->second.end(), e), it->second.end());
      if (it->second.empty()) index.erase(it);
    }
    changedLocked();
  }

  // The bytes of the directory plans registered by this scan, against MSCCLPP_PLAN_DIR_MAX_BYTES.
  uint64_t directoryBytes = 0;
  // What the scan skipped, for the reason of a call no plan serves:
  // the first kMaxScanProblems, and how many in all.
  std::vector<std::string> scanProblems;
  size_t scanProblemCount = 0;
  void noteScanProblem(std::string what) {
    std::unique_lock<std::shared_mutex> lock(mutex);
    if (scanProblems.size() < kMaxScanProblems) scanProblems.push_back(std::move(what));
    ++scanProblemCount;
  }
  std::string scanProblemsLocked() const;

  std::vector<std::string> scannedDirectories;  // with their origin, for explain()

  void scanDirectory(const std::string& dir, bool warnIfMissing, bool installedDefaults);
};

std::string Registry::Impl::scanProblemsLocked() const {
  if (scanProblemCount == 0) return "";
  std::string text = strFormat("; the plan scan skipped %zu thing(s): ", scanProblemCount);
  for (size_t i = 0; i < scanProblems.size(); ++i) text += (i ? "; " : "") + scanProblems[i];
  if (scanProblemCount > scanProblems.size())
    text += strFormat("; and %zu more", scanProblemCount - scanProblems.size());
  return text;
}

void Registry::Impl::scanDirectory(const std::string& dir, bool warnIfMissing, bool installedDefaults) {
  {
    std::unique_lock<std::shared_mutex> lock(mutex);
    scannedDirectories.push_back(dir + (installedDefaults ? " (installed defaults)" : " (your plan directory)"));
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (warnIfMissing) {
      MSCCLPP_WARN(LogPlan, "plan directory %s cannot be used: %s", dir.c_str(), std::strerror(err));
      noteScanProblem(strFormat("plan directory %s: %s", dir.c_str(), std::strerror(err)));
    } else {
      MSCCLPP_INFO(LogPlan, "default plan directory %s is absent (%s)", dir.c_str(), std::strerror(err));
    }
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    MSCCLPP_WARN(LogPlan, "plan directory %s is not a directory; skipped", dir.c_str());
    noteScanProblem(strFormat("plan directory %s: not a directory", dir.c_str()));
    return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    const int err = errno;
    MSCCLPP_WARN(LogPlan, "plan directory %s cannot be read: %s", dir.c_str(), std::strerror(err));
    noteScanProblem(strFormat("plan directory %s: %s", dir.c_str(), std::strerror(err)));
    return;
  }
  std::vector<std::string> names;
  while (struct dirent* ent = ::readdir(d)) {
    const std::string name = ent->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());  // one order, whatever the file system's
  size_t added = 0;
  uint64_t budget = 0;
  try {
    budget = planDirMaxBytes();
  } catch (const Error& err) {
    MSCCLPP_WARN(LogPlan, "plan directory %s skipped: %s", dir.c_str(), err.what());
    noteScanProblem(strFormat("plan directory %s: %s", dir.c_str(), err.what()));
    return;
  }
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    auto e = std::make_shared<Entry>();
    e->path = path;
    e->fromDirectory = true;
    e->installedDefault = installedDefaults;
    // Every rank reads the same files: ranks skip the same ones.
    struct stat fileStat {};
    const uint64_t bytes = ::stat(path.c_str(), &fileStat) == 0 && S_ISREG(fileStat.st_mode) ? fileStat.st_size : 0;
    if (directoryBytes + bytes > budget) {
      MSCCLPP_WARN(LogPlan,
                   "skipping plan file %s: its %s would bring the plan directories' files to %s, more than "
                   "MSCCLPP_PLAN_DIR_MAX_BYTES=%llu (%s); raise the limit to load it",
                   path.c_str(), formatBytes(bytes).c_str(), formatBytes(directoryBytes + bytes).c_str(),
                   static_cast<unsigned long long>(budget), formatBytes(budget).c_str());
      noteScanProblem(strFormat("%s: its %s would pass MSCCLPP_PLAN_DIR_MAX_BYTES=%llu", path.c_str(),
                                formatBytes(bytes).c_str(), static_cast<unsigned long long>(budget)));
      continue;
    }
    try {
      e->summary = loadPlanSummaryFile(path);
      verify::checkForRegistry(path, "", path);
    } catch (const std::exception& err) {
      MSCCLPP_WARN(LogPlan, "skipping plan file %s: %s", path.c_str(), err.what());
      noteScanProblem(err.what());
      continue;
    }
    std::unique_lock<std::shared_mutex> lock(mutex);
    auto existing = byName.find(e->header().name);
    if (existing != byName.end() && sameFileContents(existing->second->path, path)) {
      MSCCLPP_INFO(LogPlan, "skipping plan file %s: the same file as %s, registered first", path.c_str(),
                   existing->second->header().source.c_str());
      continue;
    }
    if (existing != byName.end()) {
      MSCCLPP_WARN(LogPlan,
                   "skipping plan file %s: plan name '%s' is already registered from %s (the first one found wins)",
                   path.c_str(), e->header().name.c_str(), existing->second->header().source.c_str());
      std::string what = strFormat("%s: plan name '%s' is already registered from %s", path.c_str(),
                                   e->header().name.c_str(), existing->second->header().source.c_str());
      lock.unlock();
      noteScanProblem(std::move(what));
      continue;
    }
    insertLocked(e);
    directoryBytes += bytes;
    ++added;
  }
  MSCCLPP_INFO(LogPlan, "plan directory %s: %zu plan(s) registered", dir.c_str(), added);
}

Registry& Registry::instance() {
  static Registry* registry = new Registry(FromEnvironment{});  // never destroyed: static destructors use it
  return *registry;
}

Registry::Registry(FromEnvironment) : impl_(std::make_unique<Impl>()) { impl_->fromEnvironment = true; }

std::unique_ptr<Registry> Registry::fromEnvironment() {
  return std::unique_ptr<Registry>(new Registry(FromEnvironment{}));
}

Registry::Registry(std::vector<std::string> directories) : impl_(std::make_unique<Impl>()) {
  impl_->directories = std::move(directories);
}

Registry::~Registry() = default;

void Registry::ensureScanned() {
  if (impl_->scanned.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(impl_->scanMutex);
  if (impl_->scanned.load(std::memory_order_relaxed)) return;
  std::vector<std::string> dirs = impl_->directories;
  bool explicitDirs = true;
  if (impl_->fromEnvironment) {
    const PlanDirectories found = planDirectories();
    dirs = found.dirs;
    explicitDirs = found.fromEnvironment;
  }
  impl_->directoryBytes = 0;
  for (const auto& dir : dirs) impl_->scanDirectory(dir, explicitDirs, isDefaultPlanDirectory(dir));
  impl_->scanned.store(true, std::memory_order_release);
}

void Registry::rescan() {
  {
    std::lock_guard<std::mutex> scanLock(impl_->scanMutex);
    std::unique_lock<std::shared_mutex> lock(impl_->mutex);
    std::vector<std::shared_ptr<Entry>> fromDirs;
    for (const auto& e : impl_->entries) {
      if (e->fromDirectory) fromDirs.push_back(e);
    }
    for (const auto& e : fromDirs) impl_->eraseLocked(e);
    impl_->scanProblems.clear();
    impl_->scanProblemCount = 0;
    impl_->scannedDirectories.clear();
    impl_->scanned.store(false, std::memory_order_release);
  }
  ensureScanned();
}

Registry::Status Registry::registerFile(const std::string& path, const std::vector<std::string>& tags,
                                        std::string* name) {
  ensureScanned();
  auto e = std::make_shared<Entry>();
  e->path = path;
  e->summary = loadPlanSummaryFile(path);
  verify::checkForRegistry(path, "", path);
  addTags(&e->summary.header, tags);
  std::unique_lock<std::shared_mutex> lock(impl_->mutex);
  if (name != nullptr) *name = e->header().name;
  if (impl_->byName.count(e->header().name) != 0) return Status::Duplicate;
  impl_->insertLocked(e);
  return Status::Ok;
}

Registry::Status Registry::registerJson(const std::string& json, const std::string& sourceName,
                                        const std::vector<std::string>& tags, std::string* name) {
  ensureScanned();
  auto e = std::make_shared<Entry>();
  e->json = json;
  e->summary = loadPlanSummaryJson(e->json, sourceName);
  verify::checkForRegistry("", e->json, sourceName);
  addTags(&e->summary.header, tags);
  std::unique_lock<std::shared_mutex> lock(impl_->mutex);
  if (name != nullptr) *name = e->header().name;
  if (impl_->byName.count(e->header().name) != 0) return Status::Duplicate;
  impl_->insertLocked(e);
  return Status::Ok;
}

Registry::Status Registry::unregister(const std::string& name) {
  ensureScanned();
  std::unique_lock<std::shared_mutex> lock(impl_->mutex);
  auto it = impl_->byName.find(name);
  if (it == impl_->byName.end()) return Status::NotFound;
  impl_->eraseLocked(it->second);
  return Status::Ok;
}

void Registry::setSelector(mscclppPlanSelectorFn fn, void* userData) {
  std::unique_lock<std::shared_mutex> lock(impl_->mutex);
  impl_->selector = fn;
  impl_->selectorData = fn != nullptr ? userData : nullptr;
  impl_->changedLocked();
}

bool Registry::hasSelector() const {
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  return impl_->selector != nullptr;
}

uint64_t Registry::generation() const { return impl_->userGeneration.load(std::memory_order_acquire); }

size_t Registry::count() {
  ensureScanned();
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  return impl_->entries.size();
}

bool Registry::info(size_t i, mscclppPlanInfo* out) {
  ensureScanned();
  std::shared_lock<std::shared_mutex> lock(impl_->mutex);
  if (i >= impl_->entries.size()) return false;
  *out = impl_->entries[i]->info;
  return true;
}

SelectionPtr Registry::select(const SelectRequest& request) {
  MSCCLPP_ENFORCE(request.worldSize >= 1, ErrorCode::InvalidArgument, "plan selection: world size %d must be positive",
                  request.worldSize);
  MSCCLPP_ENFORCE(request.nRanksPerNode >= 1 && request.nRanksPerNode <= request.worldSize, ErrorCode::InvalidArgument,
                  "plan selection: %d ranks per node is not in 1..%d (the world size)", request.nRanksPerNode,
                  request.worldSize);
  MSCCLPP_ENFORCE(request.nTags >= 0 && (request.nTags == 0 || request.tags != nullptr), ErrorCode::InvalidArgument,
                  "plan selection: %d tags given with tags=%p", request.nTags, static_cast<const void*>(request.tags));
  for (int i = 0; i < request.nTags; ++i) {
    MSCCLPP_ENFORCE(request.tags[i] != nullptr, ErrorCode::InvalidArgument, "plan selection: tag %d is NULL", i);
  }
  ensureScanned();
  const uint64_t hash = hashRequest(request);
  {
    // The hot path: a cached answer for this exact request,
    // with no allocation.
    std::shared_lock<std::shared_mutex> lock(impl_->mutex);
    auto it = impl_->cache.find(hash);
    if (it != impl_->cache.end()) {
      for (const CachedSelection& c : it->second) {
        if (c.matches(request)) return c.selection;
      }
    }
  }

  std::string skipped;  // plans this selection found broken; every rank finds the same
  for (;;) {
    // Snapshot the candidates, then judge,
    // select and load without the registry lock.
    std::vector<std::shared_ptr<Entry>> held;
    mscclppPlanSelectorFn selector;
    void* selectorData;
    uint64_t generation;
    size_t total;
    std::string scanProblems;
    {
      std::shared_lock<std::shared_mutex> lock(impl_->mutex);
      auto it = impl_->index.find(indexKey(request.collective, request.worldSize));
      if (it != impl_->index.end()) held = it->second;
      selector = impl_->selector;
      selectorData = impl_->selectorData;
      generation = impl_->generation;
      total = impl_->entries.size();
      scanProblems = impl_->scanProblemsLocked();
    }
    std::vector<const Entry*> candidates;
    for (const auto& e : held) candidates.push_back(e.get());
    std::vector<detail::Verdict> verdicts;
    for (const Entry* e : candidates) verdicts.push_back(detail::judge(*e, request));

    auto selection = std::make_shared<Selection>();
    int chosen = -1;
    std::string why;
    bool decided = false;
    if (selector != nullptr && !candidates.empty()) {
      std::vector<mscclppPlanInfo> infos;
      for (const Entry* e : candidates) infos.push_back(e->info);
      mscclppPlanRequest c{};
      c.collective = collectiveName(request.collective);
      c.worldSize = request.worldSize;
      c.nRanksPerNode = request.nRanksPerNode;
      c.messageBytes = request.messageBytes;
      c.inPlace = request.inPlace ? 1 : 0;
      c.dtype = request.dtype;
      c.redOp = request.redOp;
      c.root = request.root;
      c.sendBuffer = request.sendBuffer;
      c.recvBuffer = request.recvBuffer;
      c.tags = request.tags;
      c.nTags = request.nTags;
      int answer = -2;
      try {
        answer = selector(infos.data(), static_cast<int>(infos.size()), &c, selectorData);
      } catch (...) {
        MSCCLPP_WARN(LogPlan, "the plan selector threw an exception for %s; using the default choice",
                     detail::describeRequest(request).c_str());
        answer = -2;
      }
      if (answer == -1) {
        why = "the user selector chose no plan";
        decided = true;
        selection->bySelector = true;
      } else if (answer >= 0 && answer < static_cast<int>(candidates.size())) {
        if (verdicts[static_cast<size_t>(answer)].serves) {
          chosen = answer;
          why = "chosen by the user selector";
          decided = true;
          selection->bySelector = true;
        } else {
          MSCCLPP_WARN(LogPlan,
                       "the plan selector chose %s for %s, which cannot serve it: %s; using the default choice",
                       detail::describePlan(*candidates[static_cast<size_t>(answer)]).c_str(),
                       detail::describeRequest(request).c_str(), verdicts[static_cast<size_t>(answer)].why.c_str());
        }
      } else if (answer != -2) {
        MSCCLPP_WARN(LogPlan,
                     "the plan selector returned %d for %s, not a candidate index (0..%zu), -1 or -2; using the "
                     "default choice",
                     answer, detail::describeRequest(request).c_str(), candidates.size());
      }
    }
    if (!decided) {
      std::string rule;
      chosen = detail::pickDefault(candidates, verdicts, &rule);
      if (chosen >= 0) {
        size_t able = 0;
        for (const auto& v : verdicts) able += v.serves;
        why = able == 1
                  ? strFormat("the only one of %zu candidate(s) that can serve it", candidates.size())
                  : strFormat("preferred over the other %zu that can serve it because %s", able - 1, rule.c_str());
      }
    }

    if (chosen >= 0) {
      Entry* e = held[static_cast<size_t>(chosen)].get();
      const detail::Verdict& v = verdicts[static_cast<size_t>(chosen)];
      if (request.rank >= 0) {
        try {
          selection->plan = e->planFor(request.rank);
        } catch (const std::exception& err) {
          // A plan whose full load fails is skipped for good;
          // choose again without it.
          std::unique_lock<std::shared_mutex> lock(impl_->mutex);
          if (!e->broken.load(std::memory_order_relaxed)) {
            e->brokenReason = err.what();
            e->broken.store(true, std::memory_order_release);
            MSCCLPP_WARN(LogPlan, "skipping plan %s: %s", detail::describePlan(*e).c_str(), err.what());
          }
          skipped += strFormat("; skipped plan %s: %s", detail::describePlan(*e).c_str(), err.what());
          impl_->invalidateLocked();
          continue;
        }
      }
      selection->name = e->header().name;
      selection->source = e->header().source;
      selection->copyInput = v.copyInput;
      selection->chunkBytes = v.chunkBytes;
      selection->inputBytes = v.inputBytes;
      selection->outputBytes = v.outputBytes;
      selection->reason =
          strFormat("plan %s for %s: %s; chunk %s", detail::describePlan(*e).c_str(),
                    detail::describeRequest(request).c_str(), why.c_str(), formatBytes(v.chunkBytes).c_str());
      if (v.geometry.padded) {
        selection->reason +=
            strFormat("; the call's %s parts do not fit the plan's chunks: they run padded to %s",
                      formatBytes(v.geometry.partBytes).c_str(), formatBytes(v.geometry.paddedPartBytes).c_str());
      }
      if (v.copyInput) {
        selection->reason +=
            "; the plan is in-place and the call is not: the executor copies the send buffer into "
            "the receive buffer first";
      }
    } else if (candidates.empty()) {
      selection->reason = strFormat("no plan for %s: none is registered for %s on %d ranks (%zu plan(s) registered)",
                                    detail::describeRequest(request).c_str(), collectiveName(request.collective),
                                    request.worldSize, total);
    } else if (decided) {
      selection->reason = strFormat("no plan for %s: %s", detail::describeRequest(request).c_str(), why.c_str());
    } else {
      std::string list;
      for (size_t i = 0; i < candidates.size() && i < 8; ++i) {
        list +=
            strFormat("%s%s: %s", i ? "; " : "", detail::describePlan(*candidates[i]).c_str(), verdicts[i].why.c_str());
      }
      if (candidates.size() > 8) list += strFormat("; and %zu more", candidates.size() - 8);
      selection->reason = strFormat("no plan for %s: %s", detail::describeRequest(request).c_str(), list.c_str());
    }
    selection->reason += skipped;
    if (chosen < 0) selection->reason += scanProblems;
    MSCCLPP_INFO(LogPlan, "%s", selection->reason.c_str());

    std::unique_lock<std::shared_mutex> lock(impl_->mutex);
    if (impl_->generation == generation) {
      if (impl_->cached >= kMaxCachedSelections) {
        impl_->cache.clear();
        impl_->cached = 0;
      }
      CachedSelection c;
      c.key = request;
      c.key.tags = nullptr;
      c.key.sendBuffer = c.key.recvBuffer = nullptr;
      for (int i = 0; i < request.nTags; ++i) c.tags.emplace_back(request.tags[i]);
      c.selection = selection;
      impl_->cache[hash].push_back(std::move(c));
      ++impl_->cached;
    }
    return selection;
  }
}

std::string Registry::explain(const SelectRequest& request) {
  SelectRequest noLoad = request;
  noLoad.rank = -1;
  const SelectionPtr decision = select(noLoad);
  std::vector<std::shared_ptr<Entry>> held;
  std::string problems, dirs;
  {
    std::shared_lock<std::shared_mutex> lock(impl_->mutex);
    auto it = impl_->index.find(indexKey(request.collective, request.worldSize));
    if (it != impl_->index.end()) held = it->second;
    for (const std::string& d : impl_->scannedDirectories) dirs += "  " + d + "\n";
    problems = impl_->scanProblemsLocked();
  }
  std::vector<const Entry*> candidates;
  std::vector<detail::Verdict> verdicts;
  int chosen = -1;
  for (const auto& e : held) {
    if (e->header().name == decision->name) chosen = static_cast<int>(candidates.size());
    candidates.push_back(e.get());
    verdicts.push_back(detail::judge(*e, noLoad));
  }
  std::string text = "call: " + detail::describeRequest(request) + "\n";
  text += decision->name.empty() ? "runs: no plan (NCCL runs it)\n" : "runs: '" + decision->name + "'\n";
  text += strFormat("candidates (%zu plan(s) for %s on %d ranks; the user's plans go before installed defaults):\n",
                    candidates.size(), collectiveName(request.collective), request.worldSize);
  text += detail::explainCandidates(candidates, verdicts, chosen,
                                    decision->bySelector ? "the user selector" : "the default rule");
  text += "plan directories:\n" + (dirs.empty() ? std::string("  (none)\n") : dirs);
  if (!problems.empty()) text += problems.substr(2) + "\n";
  text += "reason: " + decision->reason + "\n";
  return text;
}

}  // namespace mscclpp::plan
