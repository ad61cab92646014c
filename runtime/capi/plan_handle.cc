#include "capi/plan_handle.hpp"

#include "core/enforce.hpp"

mscclppPlanHandle::mscclppPlanHandle(const mscclpp::plan::SelectRequest& request, std::string chosenName)
    : name(std::move(chosenName)), request_(request) {
  for (int i = 0; i < request.nTags; ++i) tagStorage_.emplace_back(request.tags[i]);
  for (const auto& t : tagStorage_) tags_.push_back(t.c_str());
  request_.tags = tags_.empty() ? nullptr : tags_.data();
  request_.nTags = static_cast<int>(tags_.size());
  request_.rank = -1;
}

mscclpp::plan::PlanPtr mscclppPlanHandle::planFor(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loaded_.find(rank);
  if (it != loaded_.end()) return it->second;
  mscclpp::plan::SelectRequest r = request_;
  r.rank = rank;
  const mscclpp::plan::SelectionPtr selection = mscclpp::plan::Registry::instance().select(r);
  MSCCLPP_ENFORCE(selection->plan != nullptr && selection->name == name, mscclpp::ErrorCode::InvalidUsage,
                  "rank %d: plan '%s' was selected for this call, but the registry now %s (%s); the registrations or "
                  "the selector changed since: select the plan again",
                  rank, name.c_str(),
                  selection->name.empty() ? "chooses no plan" : ("chooses '" + selection->name + "'").c_str(),
                  selection->reason.c_str());
  loaded_.emplace(rank, selection->plan);
  return selection->plan;
}
