// The C API's selection request (mscclppPlanRequest of mscclpp/plan_api.h) as the registry's
// SelectRequest. One conversion for every C entry point that selects (runtime/capi/).
#ifndef MSCCLPP_PLAN_C_REQUEST_HPP_
#define MSCCLPP_PLAN_C_REQUEST_HPP_

#include "mscclpp/plan_api.h"
#include "plan/registry.hpp"

namespace mscclpp::plan {

// Throws Error(InvalidArgument) naming `apiName` when the request or its collective is NULL or the
// collective is not a plan collective. Pointers (tags, buffers) are copied, not owned: the request
// must outlive the selection call.
SelectRequest selectRequestFromC(const mscclppPlanRequest* request, const char* apiName);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_C_REQUEST_HPP_
