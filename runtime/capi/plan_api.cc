// The C API of the plan registry (mscclpp/plan_api.h) over Registry::instance(). Every entry point
// runs inside the C API's one guard (capi/guard.hpp): exceptions become an mscclppStatus and the
// message goes to the caller's buffer and the thread's last error.
#include "mscclpp/plan_api.h"

#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "plan/c_request.hpp"
#include "plan/plan_loader.hpp"
#include "plan/registry.hpp"
#include "plan/verify/verify.hpp"

namespace {

using mscclpp::ErrorCode;
using mscclpp::capi::guarded;
using mscclpp::capi::StatusError;
using mscclpp::capi::writeText;
using mscclpp::plan::Registry;

std::vector<std::string> tagList(const char* function, const char* const* tags, int nTags) {
  MSCCLPP_ENFORCE(nTags >= 0, ErrorCode::InvalidArgument, "%s: nTags=%d is negative", function, nTags);
  MSCCLPP_ENFORCE(nTags == 0 || tags != nullptr, ErrorCode::InvalidArgument, "%s: tags is NULL but nTags=%d", function,
                  nTags);
  std::vector<std::string> out;
  for (int i = 0; i < nTags; ++i) {
    MSCCLPP_ENFORCE(tags[i] != nullptr, ErrorCode::InvalidArgument, "%s: tags[%d] is NULL", function, i);
    out.emplace_back(tags[i]);
  }
  return out;
}

void checkRegistered(Registry::Status status, const std::string& name, const std::string& source) {
  if (status == Registry::Status::Duplicate) {
    throw StatusError(mscclppAlreadyExists,
                      mscclpp::strFormat("%s: a plan named '%s' is already registered", source.c_str(), name.c_str()));
  }
}

}  // namespace

int mscclppPlanRegisterFile(const char* path, const char* const* tags, int nTags, char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(path != nullptr, ErrorCode::InvalidArgument, "mscclppPlanRegisterFile: path is NULL");
    std::string name;
    const auto status = Registry::instance().registerFile(path, tagList("mscclppPlanRegisterFile", tags, nTags), &name);
    checkRegistered(status, name, path);
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppPlanRegisterJson(const char* json, size_t len, const char* sourceName, const char* const* tags, int nTags,
                            char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(json != nullptr, ErrorCode::InvalidArgument, "mscclppPlanRegisterJson: json is NULL");
    const std::string source = sourceName != nullptr ? sourceName : "<memory>";
    std::string name;
    const auto status = Registry::instance().registerJson(std::string(json, len), source,
                                                          tagList("mscclppPlanRegisterJson", tags, nTags), &name);
    checkRegistered(status, name, source);
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppPlanUnregister(const char* name, char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(name != nullptr, ErrorCode::InvalidArgument, "mscclppPlanUnregister: name is NULL");
    if (Registry::instance().unregister(name) == Registry::Status::NotFound) {
      throw StatusError(mscclppNotFound, mscclpp::strFormat("no plan named '%s' is registered", name));
    }
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppPlanSetSelector(mscclppPlanSelectorFn fn, void* userData) {
  return guarded(nullptr, 0, [&] {
    Registry::instance().setSelector(fn, userData);
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppPlanCount(void) {
  return guarded(nullptr, 0, [&] { return static_cast<int>(Registry::instance().count()); });
}

int mscclppPlanGetInfo(int i, mscclppPlanInfo* info) {
  return guarded(nullptr, 0, [&] {
    MSCCLPP_ENFORCE(info != nullptr, ErrorCode::InvalidArgument, "mscclppPlanGetInfo: info is NULL");
    MSCCLPP_ENFORCE(i >= 0 && Registry::instance().info(static_cast<size_t>(i), info), ErrorCode::InvalidArgument,
                    "mscclppPlanGetInfo: index %d is not below the number of registered plans (%zu)", i,
                    Registry::instance().count());
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppPlanSelect(const mscclppPlanRequest* request, char* nameBuf, size_t nameLen, char* reasonBuf,
                      size_t reasonLen) {
  writeText(nameBuf, nameLen, "");
  return guarded(reasonBuf, reasonLen, [&] {
    mscclpp::plan::SelectRequest r = mscclpp::plan::selectRequestFromC(request, "mscclppPlanSelect");
    const auto selection = Registry::instance().select(r);
    writeText(nameBuf, nameLen, selection->name);
    writeText(reasonBuf, reasonLen, selection->reason);
    return selection->name.empty() ? 0 : 1;
  });
}

int mscclppPlanVerify(const char* path, const char* json, size_t jsonLen, char* reportBuf, size_t reportLen,
                      char* errBuf, size_t errLen) {
  writeText(reportBuf, reportLen, "");
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(path != nullptr || json != nullptr, ErrorCode::InvalidArgument,
                    "mscclppPlanVerify: path and json are both NULL");
    mscclpp::plan::PlanPtr plan = json != nullptr ? mscclpp::plan::loadPlanJson(std::string_view(json, jsonLen),
                                                                                path != nullptr ? path : "<memory>")
                                                  : mscclpp::plan::loadPlanFile(path);
    const auto result = mscclpp::plan::verify::verifyPlan(*plan);
    writeText(reportBuf, reportLen, mscclpp::plan::verify::formatResult(*plan, result));
    return result.proven ? 1 : 0;
  });
}

int mscclppPlanApiVersion(void) { return MSCCLPP_PLAN_API_VERSION; }
