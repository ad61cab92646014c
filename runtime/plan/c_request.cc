#include "plan/c_request.hpp"

#include <string_view>

#include "core/enforce.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp::plan {

SelectRequest selectRequestFromC(const mscclppPlanRequest* request, const char* apiName) {
  MSCCLPP_ENFORCE(request != nullptr, ErrorCode::InvalidArgument, "%s: request is NULL", apiName);
  MSCCLPP_ENFORCE(request->collective != nullptr, ErrorCode::InvalidArgument, "%s: request->collective is NULL",
                  apiName);
  SelectRequest r;
  MSCCLPP_ENFORCE(collectiveFromName(std::string_view(request->collective), &r.collective), ErrorCode::InvalidArgument,
                  "%s: collective '%s' is not one of %s", apiName, request->collective, collectiveNameList());
  r.worldSize = request->worldSize;
  r.nRanksPerNode = request->nRanksPerNode;
  r.messageBytes = request->messageBytes;
  r.inPlace = request->inPlace != 0;
  r.dtype = request->dtype;
  r.redOp = request->redOp;
  r.root = request->root;
  r.tags = request->tags;
  r.nTags = request->nTags;
  r.sendBuffer = request->sendBuffer;
  r.recvBuffer = request->recvBuffer;
  return r;
}

}  // namespace mscclpp::plan
