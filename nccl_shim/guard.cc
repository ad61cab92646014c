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
    // A wait that passed its deadline means a peer did not arrive or stopped answering.
    case ErrorCode::Timeout:
      return ncclRemoteError;
    case ErrorCode::CudaError:
      return ncclUnhandledCudaError;
    // A plan that fails while running is our bug or a bad plan file, not the caller's.
    case ErrorCode::InvalidPlan:
      return ncclInternalError;
    // A request neither a plan nor the real NCCL can serve: the caller asked for something unavailable.
    case ErrorCode::NotSupported:
      return ncclInvalidUsage;
    // The communicator was aborted or revoked: it may not be used any more.
    case ErrorCode::Aborted:
      return ncclInvalidUsage;
  }
  return ncclInternalError;
}

ncclResult_t recordError(ncclResult_t result, const char* message) {
  try {
    MSCCLPP_WARN(LogShim, "%s", message);
  } catch (...) {
    // Logging itself failed (out of memory): the result code still reaches the caller.
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
    // Every other exception is classified as the C API's guard classifies it (core/caught_error.hpp).
    const CaughtError caught = classifyCaughtException();
    return recordError(toNcclResult(caught.code), caught.message);
  }
}

}  // namespace detail

}  // namespace mscclpp::shim
