#include <cstring>

#include "format.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidUsage:
      return "invalid usage";
    case ErrorCode::InvalidArgument:
      return "invalid argument";
    case ErrorCode::SystemError:
      return "system error";
    case ErrorCode::InternalError:
      return "internal error";
    case ErrorCode::RemoteError:
      return "remote error";
    case ErrorCode::Timeout:
      return "timeout";
    case ErrorCode::CudaError:
      return "CUDA error";
    case ErrorCode::InvalidPlan:
      return "invalid plan";
    case ErrorCode::NotSupported:
      return "not supported";
    case ErrorCode::Aborted:
      return "aborted";
  }
  return "unknown error";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

SystemError::SystemError(const std::string& what, int errnoValue)
    : Error(ErrorCode::SystemError, strFormat("%s: %s", what.c_str(), std::strerror(errnoValue))), errno_(errnoValue) {}

}  // namespace mscclpp
