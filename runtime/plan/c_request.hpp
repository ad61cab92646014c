// The C API's mscclppPlanRequest as the registry's SelectRequest.
// Every C entry point that selects uses this one conversion.
#ifndef MSCCLPP_PLAN_C_REQUEST_HPP_
#define MSCCLPP_PLAN_C_REQUEST_HPP_

#include "mscclpp/plan_api.h"
#include "plan/registry.hpp"

namespace mscclpp::plan {

// Throws InvalidArgument naming apiName for
// a NULL request or an unknown collective.
// Tag and buffer pointers are copied, not owned:
// the request must outlive the call.
SelectRequest selectRequestFromC(const mscclppPlanRequest* request, const char* apiName);

}  // namespace mscclpp::plan

#endif  // MSCCLPP_PLAN_C_REQUEST_HPP_
