// Entry points that describe the library and its errors: the
// version, error strings, the last error, and the debug reset.
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
    // Applications gate features on this:
    // report the NCCL we were built against.
    *version = kEmulatedNcclVersion;
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGetErrorString, result);
  // NCCL's own wording, which users and tests match on.
  // Any int may arrive, so the value is read as an int.
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
  // Process-wide text: NCCL ignores comm too. The per-thread
  // copy keeps the pointer valid until the caller's next call.
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
    // Every other cached MSCCLPP_* parameter is read again at its next use.
    reloadLogConfig();
    // The real library keeps its own NCCL_DEBUG state: reset that too.
    if (RealNccl::instance().ensureLoaded()) callReal<NcclFn::ncclResetDebugInit>();
    return ncclSuccess;
  });
}
// libnccl.so.2 exports this without a p-name or a
// prototype. It does what ncclResetDebugInit does.
extern "C" __attribute__((visibility("default"))) void ncclResetDebugInitInternal() { pncclResetDebugInit(); }
#pragma GCC diagnostic pop
