#include "guard.hpp"

#include "core/caught_error.hpp"
#include "core/logger.hpp"

namespace mscclpp::shim {

ncclResult_t toNcclResult(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidUsage:
      return ncclInvalidUsage;
    case ErrorCode::InvalidArgument:
      return ncclInvalidArgument;
    case ErrorCode::SystemError:
      return ncclSystemError;
    case ErrorCode::InternalError:
      return ncclInternalError;
    case ErrorCode::RemoteError:
      return ncclRemoteError;
    // A wait on live peers passed the user's
    // MSCCLPP_TIMEOUT_S. The peers are alive, so it is no
    // remote error. Dead peers, and ranks that never reached
    // the rendezvous, are RemoteError where they are found.
    case ErrorCode::Timeout:
      return ncclInternalError;
    case ErrorCode::CudaError:
      return ncclUnhandledCudaError;
    // A plan failing while it runs is our bug or a bad plan file.
    case ErrorCode::InvalidPlan:
      return ncclInternalError;
    // Neither a plan nor the real NCCL can serve what the caller asked.
    case ErrorCode::NotSupported:
      return ncclInvalidUsage;
    // The communicator was aborted or revoked, so it may not be used.
    case ErrorCode::Aborted:
      return ncclInvalidUsage;
  }
  return ncclInternalError;
}

ncclResult_t recordError(ncclResult_t result, const char* message) {
  try {
    MSCCLPP_WARN(LogShim, "%s", message);
  } catch (...) {
    // Logging failed, out of memory: the result still reaches the caller.
  }
  return result;
}

namespace detail {

ncclResult_t handleCurrentException() noexcept {
  try {
    throw;
  } catch (const NcclResultError& e) {
    return recordError(e.result(), e.what());
  } catch (...) {
    // Classified as the C API's guard does (core/caught_error.hpp).
    const CaughtError caught = classifyCaughtException();
    return recordError(toNcclResult(caught.code), caught.message);
  }
}

}  // namespace detail

}  // namespace mscclpp::shim
