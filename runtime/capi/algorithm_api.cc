// The C API of native algorithms (mscclpp/algorithm_api.h) over the
// process's AlgorithmRegistry. Every entry point runs inside the C API's one
// guard (capi/guard.hpp).
#include "mscclpp/algorithm_api.h"

#include <string>
#include <vector>

#include "algorithm/algorithm_registry.hpp"
#include "capi/guard.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "plan/c_request.hpp"
#include "plan/registry.hpp"

namespace {

using mscclpp::ErrorCode;
using mscclpp::algo::AlgorithmRegistry;
using mscclpp::capi::guarded;
using mscclpp::capi::StatusError;
using mscclpp::capi::writeText;

}  // namespace

int mscclppAlgorithmRegister(const mscclppAlgorithmDesc* desc, char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(desc != nullptr, ErrorCode::InvalidArgument, "mscclppAlgorithmRegister: desc is NULL");
    mscclpp::algo::NativeSpec spec = mscclpp::algo::specOf(*desc, false);
    const std::string name = spec.name;
    if (AlgorithmRegistry::instance().add(std::move(spec)) == AlgorithmRegistry::Status::Duplicate) {
      throw StatusError(
          mscclppAlreadyExists,
          mscclpp::strFormat("mscclppAlgorithmRegister: an algorithm named '%s' is already registered", name.c_str()));
    }
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppAlgorithmUnregister(const char* name, char* errBuf, size_t errLen) {
  return guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(name != nullptr, ErrorCode::InvalidArgument, "mscclppAlgorithmUnregister: name is NULL");
    switch (AlgorithmRegistry::instance().remove(name)) {
      case AlgorithmRegistry::Status::NotFound:
        throw StatusError(
            mscclppNotFound,
            mscclpp::strFormat("mscclppAlgorithmUnregister: no algorithm named '%s' is registered", name));
      case AlgorithmRegistry::Status::Builtin:
        MSCCLPP_THROW(ErrorCode::InvalidArgument,
                      "mscclppAlgorithmUnregister: '%s' is built in (MSCCLPP_NATIVE_ENABLE=0 turns the native "
                      "algorithms off, a selector passes one over)",
                      name);
      default:
        return static_cast<int>(mscclppSuccess);
    }
  });
}

int mscclppAlgorithmSetSelector(mscclppAlgorithmSelectorFn fn, void* userData) {
  return guarded(nullptr, 0, [&] {
    AlgorithmRegistry::instance().setSelector(fn, userData);
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppAlgorithmCount(void) {
  return guarded(nullptr, 0, [&] { return static_cast<int>(AlgorithmRegistry::instance().natives().size()); });
}

int mscclppAlgorithmGetInfo(int i, mscclppAlgorithmInfo* info) {
  return guarded(nullptr, 0, [&] {
    MSCCLPP_ENFORCE(info != nullptr, ErrorCode::InvalidArgument, "mscclppAlgorithmGetInfo: info is NULL");
    const auto all = AlgorithmRegistry::instance().natives();
    MSCCLPP_ENFORCE(i >= 0 && i < static_cast<int>(all.size()), ErrorCode::InvalidArgument,
                    "mscclppAlgorithmGetInfo: index %d of %zu algorithms", i, all.size());
    *info = all[static_cast<size_t>(i)]->info();
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppAlgorithmSelect(const mscclppPlanRequest* request, char* nameBuf, size_t nameLen, char* kindBuf,
                           size_t kindLen, char* reasonBuf, size_t reasonLen) {
  writeText(nameBuf, nameLen, "");
  writeText(kindBuf, kindLen, "");
  return guarded(reasonBuf, reasonLen, [&] {
    mscclpp::algo::Request req;
    req.call = mscclpp::plan::selectRequestFromC(request, "mscclppAlgorithmSelect");
    MSCCLPP_ENFORCE(req.call.worldSize >= 1 && req.call.worldSize <= (1 << 20), ErrorCode::InvalidArgument,
                    "mscclppAlgorithmSelect: worldSize %d", req.call.worldSize);
    if (req.call.rank < 0) req.call.rank = 0;
    // Hosts of nRanksPerNode ranks each, in rank order.
    const int perNode = req.call.nRanksPerNode > 0 ? req.call.nRanksPerNode : req.call.worldSize;
    std::vector<int32_t> hostOf(static_cast<size_t>(req.call.worldSize));
    for (int r = 0; r < req.call.worldSize; ++r) hostOf[static_cast<size_t>(r)] = r / perNode;
    req.hostOf = &hostOf;
    req.backend = mscclpp::resolveBackend();
    mscclpp::algo::ChoicePtr c = AlgorithmRegistry::instance().select(req, mscclpp::plan::Registry::instance());
    writeText(reasonBuf, reasonLen, c->reason);
    if (!*c) return 0;
    writeText(nameBuf, nameLen, c->name);
    writeText(kindBuf, kindLen, c->kind == mscclpp::algo::Choice::Kind::Plan ? "plan" : "native");
    return 1;
  });
}

int mscclppAlgorithmApiVersion(void) { return MSCCLPP_ALGORITHM_API_VERSION; }
