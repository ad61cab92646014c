// Entry points that describe the library and its errors: ncclGetVersion, ncclGetErrorString, ncclGetLastError,
// ncclResetDebugInit.
#include <string>

#include "api_common.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "nccl_types.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

MSCCLPP_NCCL_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t pncclGetVersion(int* version) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGetVersion, version);
  return guarded([&] {
    MSCCLPP_ENFORCE(version != nullptr, ErrorCode::InvalidArgument, "GetVersion : version argument is NULL");
    // Applications gate features on this: report the NCCL we emulate (the headers we were built with).
    *version = kEmulatedNcclVersion;
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGetErrorString, result);
  // NCCL's own wording: users and tests match on it. Any int may arrive: read it as one.
  switch (rawEnum(result)) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

MSCCLPP_NCCL_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGetLastError, comm);
  // Process-wide text (NCCL ignores comm too), copied per thread so the pointer stays valid for the caller
  // until its next call.
  thread_local std::string copy;
  return guardedValue<const char*>("", [&] {
    copy = lastWarning();
    return copy.c_str();
  });
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
MSCCLPP_NCCL_API(void, ncclResetDebugInit);
void pncclResetDebugInit() {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclResetDebugInit);
  (void)guarded([] {
    reloadLogConfig();  // and every other cached MSCCLPP_* parameter at its next use
    // The real library has its own NCCL_DEBUG state; reset it too when it is loaded.
    if (RealNccl::instance().ensureLoaded()) callReal<NcclFn::ncclResetDebugInit>();
    return ncclSuccess;
  });
}
// libnccl.so.2 exports this one without a p-name or a header prototype; it does what ncclResetDebugInit does.
extern "C" __attribute__((visibility("default"))) void ncclResetDebugInitInternal() { pncclResetDebugInit(); }
#pragma GCC diagnostic pop
