#include "capi/guard.hpp"

#include <algorithm>
#include <cstring>

#include "core/caught_error.hpp"

namespace mscclpp::capi {

namespace {

// The thread's last error. A std::string, so long diagnostics (the executor's wait-for picture) are
// kept whole; when even storing it runs out of memory, a fixed text stands in.
thread_local std::string lastError;
thread_local const char* lastErrorText = "";

void recordLastError(const char* message) noexcept {
  try {
    lastError.assign(message);
    lastErrorText = lastError.c_str();
  } catch (...) {
    lastErrorText = "out of host memory (storing the error message failed)";
  }
}

}  // namespace

void writeText(char* buf, size_t len, const char* s) noexcept {
  if (buf == nullptr || len == 0) return;
  const size_t n = std::min(len - 1, std::strlen(s));
  std::memcpy(buf, s, n);
  buf[n] = '\0';
}

mscclppStatus statusOf(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidUsage:
      return mscclppInvalidUsage;
    case ErrorCode::InvalidArgument:
      return mscclppInvalidArgument;
    case ErrorCode::SystemError:
      return mscclppSystemError;
    case ErrorCode::InternalError:
      return mscclppInternalError;
    case ErrorCode::RemoteError:
      return mscclppRemoteError;
    case ErrorCode::Timeout:
      return mscclppTimeout;
    case ErrorCode::CudaError:
      return mscclppCudaError;
    case ErrorCode::InvalidPlan:
      return mscclppInvalidPlan;
    case ErrorCode::NotSupported:
      return mscclppNotSupported;
    case ErrorCode::Aborted:
      return mscclppAborted;
  }
  return mscclppInternalError;
}

int failCaughtException(char* errBuf, size_t errLen) noexcept {
  mscclppStatus status;
  const char* message;
  try {
    throw;
  } catch (const StatusError& e) {
    status = e.status();
    message = e.what();
  } catch (...) {
    const CaughtError caught = classifyCaughtException();
    status = statusOf(caught.code);
    message = caught.message;
  }
  // The exception stays alive while the caller's catch block runs, so message is still valid here.
  writeText(errBuf, errLen, message);
  recordLastError(message);
  return status;
}

}  // namespace mscclpp::capi

const char* mscclppStatusName(int status) {
  switch (status) {
    case mscclppSuccess:
      return "mscclppSuccess";
    case mscclppInvalidUsage:
      return "mscclppInvalidUsage";
    case mscclppInvalidArgument:
      return "mscclppInvalidArgument";
    case mscclppSystemError:
      return "mscclppSystemError";
    case mscclppInternalError:
      return "mscclppInternalError";
    case mscclppRemoteError:
      return "mscclppRemoteError";
    case mscclppTimeout:
      return "mscclppTimeout";
    case mscclppCudaError:
      return "mscclppCudaError";
    case mscclppInvalidPlan:
      return "mscclppInvalidPlan";
    case mscclppNotSupported:
      return "mscclppNotSupported";
    case mscclppAborted:
      return "mscclppAborted";
    case mscclppNotFound:
      return "mscclppNotFound";
    case mscclppAlreadyExists:
      return "mscclppAlreadyExists";
  }
  return "unknown status";
}

const char* mscclppGetLastError(void) { return mscclpp::capi::lastErrorText; }
