#include "algorithm/algorithm_registry.hpp"

#include <algorithm>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/params.hpp"
#include "executor/call_descriptor.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp::algo {
namespace {

// How many native refusals a "none" reason lists.
constexpr size_t kRefusalsListed = 4;

// One candidate as the C selector sees it, with the strings it points to.
struct Candidate {
  ChoicePtr choice;
  mscclppAlgorithmInfo info{};
  std::vector<const char*> tags;
};

Candidate planCandidate(const plan::SelectionPtr& sel, uint64_t fingerprint) {
  auto c = std::make_shared<Choice>();
  c->kind = Choice::Kind::Plan;
  c->name = sel->name;
  c->fingerprint = fingerprint;
  c->plan = sel;
  c->reason = sel->reason;
  Candidate out;
  const plan::PlanHeader& h = sel->plan->header;
  for (const std::string& t : h.tags) out.tags.push_back(t.c_str());
  out.info.name = c->name.c_str();
  out.info.kind = "plan";
  out.info.collective = plan::collectiveName(h.collective);
  out.info.minMessageBytes = h.minMessageSize;
  out.info.maxMessageBytes = h.maxMessageSize;
  out.info.bufferMode = h.inPlace ? MSCCLPP_ALGORITHM_IN_PLACE_ONLY : MSCCLPP_ALGORITHM_OUT_OF_PLACE_ONLY;
  out.info.worldSize = h.worldSize;
  out.info.nRanksPerNode = h.nRanksPerNode;
  out.info.tags = out.tags.empty() ? nullptr : out.tags.data();
  out.info.nTags = static_cast<int>(out.tags.size());
  out.choice = std::move(c);
  return out;
}

Candidate nativeCandidate(const std::shared_ptr<const NativeAlgorithm>& a) {
  auto c = std::make_shared<Choice>();
  c->kind = Choice::Kind::Native;
  c->name = a->name();
  c->fingerprint = a->fingerprint();
  c->native = a;
  Candidate out;
  out.info = a->info();
  out.choice = std::move(c);
  return out;
}

mscclppPlanRequest cRequest(const plan::SelectRequest& r) {
  mscclppPlanRequest c{};
  c.collective = plan::collectiveName(r.collective);
  c.worldSize = r.worldSize;
  c.nRanksPerNode = r.nRanksPerNode;
  c.messageBytes = r.messageBytes;
  c.inPlace = r.inPlace ? 1 : 0;
  c.dtype = r.dtype;
  c.redOp = r.redOp;
  c.root = r.root;
  c.sendBuffer = r.sendBuffer;
  c.recvBuffer = r.recvBuffer;
  c.tags = r.tags;
  c.nTags = r.nTags;
  return c;
}

}  // namespace

AlgorithmRegistry& AlgorithmRegistry::instance() {
  static AlgorithmRegistry* registry = new AlgorithmRegistry();  // never destroyed: static destructors may use it
  return *registry;
}

AlgorithmRegistry::AlgorithmRegistry() {
  for (NativeSpec& s : builtinSpecs()) builtin_.push_back(std::make_shared<NativeAlgorithm>(std::move(s)));
}

AlgorithmRegistry::Status AlgorithmRegistry::add(NativeSpec spec) {
  auto a = std::make_shared<NativeAlgorithm>(std::move(spec));
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& list : {&registered_, &builtin_})
    for (const auto& b : *list)
      if (b->name() == a->name()) return Status::Duplicate;
  registered_.insert(registered_.begin(), std::move(a));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return Status::Ok;
}

AlgorithmRegistry::Status AlgorithmRegistry::remove(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = registered_.begin(); it != registered_.end(); ++it) {
    if ((*it)->name() != name) continue;
    registered_.erase(it);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return Status::Ok;
  }
  for (const auto& b : builtin_)
    if (b->name() == name) return Status::Builtin;
  return Status::NotFound;
}

void AlgorithmRegistry::setSelector(mscclppAlgorithmSelectorFn fn, void* userData) {
  std::lock_guard<std::mutex> lock(mutex_);
  selector_ = fn;
  selectorData_ = userData;
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

std::vector<std::shared_ptr<const NativeAlgorithm>> AlgorithmRegistry::natives() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<const NativeAlgorithm>> out = registered_;
  out.insert(out.end(), builtin_.begin(), builtin_.end());
  return out;
}

std::shared_ptr<const NativeAlgorithm> AlgorithmRegistry::find(const std::string& name) const {
  for (const auto& a : natives())
    if (a->name() == name) return a;
  return nullptr;
}

ChoicePtr AlgorithmRegistry::select(const Request& request, plan::Registry& plans) const {
  std::vector<Candidate> candidates;
  std::string planWhy, nativeWhy;
  if (params::plansEnable()) {
    plan::SelectionPtr sel = plans.select(request.call);
    if (sel->plan) {
      candidates.push_back(planCandidate(sel, exec::planFingerprint(*sel->plan)));
    } else {
      planWhy = sel->reason;
    }
  } else {
    planWhy = "the DSL plans are off (MSCCLPP_PLANS_ENABLE=0)";
  }
  if (params::nativeEnable()) {
    std::vector<std::string> refusals;
    for (const auto& a : natives()) {
      if (exec::Refusal why = a->refusal(request)) {
        if (a->spec().collective == request.call.collective) refusals.push_back(std::move(*why));
      } else {
        candidates.push_back(nativeCandidate(a));
      }
    }
    nativeWhy = strFormat("no native %s algorithm serves it", plan::collectiveName(request.call.collective));
    for (size_t i = 0; i < refusals.size() && i < kRefusalsListed; ++i) nativeWhy += (i ? "; " : ": ") + refusals[i];
    if (refusals.size() > kRefusalsListed) nativeWhy += strFormat("; and %zu more", refusals.size() - kRefusalsListed);
  } else {
    nativeWhy = "the native algorithms are off (MSCCLPP_NATIVE_ENABLE=0)";
  }
  mscclppAlgorithmSelectorFn selector;
  void* data;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    selector = selector_;
    data = selectorData_;
  }
  int index = candidates.empty() ? -1 : 0;
  if (selector != nullptr && !candidates.empty()) {
    std::vector<mscclppAlgorithmInfo> infos;
    for (Candidate& c : candidates) {
      if (!c.tags.empty()) c.info.tags = c.tags.data();
      infos.push_back(c.info);
    }
    const mscclppPlanRequest cr = cRequest(request.call);
    const int picked = selector(infos.data(), static_cast<int>(infos.size()), &cr, data);
    MSCCLPP_ENFORCE(picked >= -2 && picked < static_cast<int>(infos.size()), ErrorCode::InvalidArgument,
                    "the algorithm selector returned %d for %zu candidates (expected -2, -1 or an index)", picked,
                    infos.size());
    if (picked == -1) {
      auto none = std::make_shared<Choice>();
      none->reason = strFormat("the algorithm selector chose none of %zu candidates", infos.size());
      return none;
    }
    if (picked >= 0) index = picked;
  }
  if (index < 0) {
    auto none = std::make_shared<Choice>();
    none->reason = planWhy + "; " + nativeWhy;
    return none;
  }
  if (index > 0 || candidates[0].choice->kind == Choice::Kind::Native) {
    auto chosen = std::make_shared<Choice>(*candidates[static_cast<size_t>(index)].choice);
    if (chosen->kind == Choice::Kind::Native) {
      chosen->reason = strFormat("%s%s", index > 0 ? "the algorithm selector's choice; " : "",
                                 planWhy.empty() ? "a plan was passed over" : planWhy.c_str());
    }
    return chosen;
  }
  return candidates[0].choice;
}

uint64_t selectionGeneration() {
  return plan::Registry::instance().generation() + AlgorithmRegistry::instance().generation();
}

}  // namespace mscclpp::algo
