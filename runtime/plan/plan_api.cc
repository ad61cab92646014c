// The C API of the plan registry (mscclpp/plan_api.h) over Registry::instance(). Every entry point
// runs inside one guard that maps exceptions to mscclppPlanStatus and writes the message to the
// caller's buffer: nothing is thrown across the C boundary.
#include "mscclpp/plan_api.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "plan/c_request.hpp"
#include "plan/registry.hpp"

namespace {

using mscclpp::ErrorCode;
using mscclpp::plan::Registry;

// Writes s to buf, truncated to len - 1 bytes and always NUL-terminated; nothing when buf is NULL or len 0.
void writeText(char* buf, size_t len, const std::string& s) {
  if (buf == nullptr || len == 0) return;
  const size_t n = std::min(len - 1, s.size());
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
}

int statusOf(const mscclpp::Error& e) {
  switch (e.code()) {
    case ErrorCode::InvalidPlan:
    case ErrorCode::SystemError:
      return mscclppPlanInvalid;
    case ErrorCode::InvalidArgument:
    case ErrorCode::InvalidUsage:
      return mscclppPlanBadArgument;
    default:
      return mscclppPlanInternalError;
  }
}

template <class F>
int guarded(char* errBuf, size_t errLen, F&& body) {
  try {
    writeText(errBuf, errLen, "");
    return body();
  } catch (const mscclpp::Error& e) {
    writeText(errBuf, errLen, e.what());
    return statusOf(e);
  } catch (const std::bad_alloc&) {
    writeText(errBuf, errLen, "out of memory");
    return mscclppPlanInternalError;
  } catch (const std::exception& e) {
    writeText(errBuf, errLen, e.what());
    return mscclppPlanInternalError;
  } catch (...) {
    writeText(errBuf, errLen, "unknown exception");
    return mscclppPlanInternalError;
  }
}

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

int registered(Registry::Status status, const std::string& name, const std::string& source, char* errBuf,
               size_t errLen) {
  if (status == Registry::Status::Duplicate) {
    writeText(errBuf, errLen,
              mscclpp::strFormat("%s: a plan named '%s' is already registered", source.c_str(), name.c_str()));
    return mscclppPlanDuplicate;
  }
  return mscclppPlanOk;
}

}  // namespace

int mscclppPlanRegisterFile(const char* path, const char* const* tags, int nTags, char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(path != nullptr, ErrorCode::InvalidArgument, "mscclppPlanRegisterFile: path is NULL");
    std::string name;
    const auto status = Registry::instance().registerFile(path, tagList("mscclppPlanRegisterFile", tags, nTags), &name);
    return registered(status, name, path, errBuf, errLen);
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
    return registered(status, name, source, errBuf, errLen);
  });
}

int mscclppPlanUnregister(const char* name, char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(name != nullptr, ErrorCode::InvalidArgument, "mscclppPlanUnregister: name is NULL");
    if (Registry::instance().unregister(name) == Registry::Status::NotFound) {
      writeText(errBuf, errLen, mscclpp::strFormat("no plan named '%s' is registered", name));
      return static_cast<int>(mscclppPlanNotFound);
    }
    return static_cast<int>(mscclppPlanOk);
  });
}

int mscclppPlanSetSelector(mscclppPlanSelectorFn fn, void* userData) {
  return guarded(nullptr, 0, [&] {
    Registry::instance().setSelector(fn, userData);
    return static_cast<int>(mscclppPlanOk);
  });
}

int mscclppPlanCount(void) {
  return guarded(nullptr, 0, [&] { return static_cast<int>(Registry::instance().count()); });
}

int mscclppPlanGetInfo(int i, mscclppPlanInfo* info) {
  return guarded(nullptr, 0, [&] {
    if (info == nullptr || i < 0 || !Registry::instance().info(static_cast<size_t>(i), info)) {
      return static_cast<int>(mscclppPlanBadArgument);
    }
    return static_cast<int>(mscclppPlanOk);
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

int mscclppPlanApiVersion(void) {
  return MSCCLPP_PLAN_API_VERSION;
}
