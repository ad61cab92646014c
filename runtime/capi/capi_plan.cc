// mscclpp_c.h: plan handles (selection through the process-wide registry of plan_api.h).
#include <memory>

#include "capi/guard.hpp"
#include "capi/plan_handle.hpp"
#include "core/enforce.hpp"
#include "plan/c_request.hpp"

int mscclppPlanSelectHandle(const mscclppPlanRequest* request, mscclppPlan_t* plan, char* nameBuf, size_t nameLen,
                            char* reasonBuf, size_t reasonLen) {
  using mscclpp::ErrorCode;
  if (plan != nullptr) *plan = nullptr;
  mscclpp::capi::writeText(nameBuf, nameLen, "");
  return mscclpp::capi::guarded(reasonBuf, reasonLen, [&] {
    MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument,
                    "mscclppPlanSelectHandle: the output pointer plan is NULL");
    mscclpp::plan::SelectRequest r = mscclpp::plan::selectRequestFromC(request, "mscclppPlanSelectHandle");
    r.rank = -1;  // choose only: each rank loads its part at its first execute
    const mscclpp::plan::SelectionPtr selection = mscclpp::plan::Registry::instance().select(r);
    mscclpp::capi::writeText(reasonBuf, reasonLen, selection->reason);
    if (selection->name.empty()) return 0;
    *plan = new mscclppPlanHandle(r, selection->name);
    mscclpp::capi::writeText(nameBuf, nameLen, selection->name);
    return 1;
  });
}

int mscclppPlanHandleDestroy(mscclppPlan_t plan) {
  return mscclpp::capi::guarded(nullptr, 0, [&] {
    delete plan;
    return static_cast<int>(mscclppSuccess);
  });
}
