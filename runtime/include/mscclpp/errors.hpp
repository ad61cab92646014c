// The one error hierarchy of the runtime. The library throws mscclpp::Error or a subclass; each C
// entry point, the C APIs' and the NCCL shim's, catches it in one guard and maps ErrorCode to its
// own result codes.
#ifndef MSCCLPP_ERRORS_HPP_
#define MSCCLPP_ERRORS_HPP_

#include <stdexcept>
#include <string>

#include "mscclpp/export.h"

namespace mscclpp {

enum class ErrorCode {
  InvalidUsage,     // the caller used the API in the wrong order or state
  InvalidArgument,  // a bad value: argument, environment variable, plan field
  SystemError,      // an OS call failed (errno is in the message)
  InternalError,    // a bug of ours: an invariant broke
  RemoteError,      // a peer misbehaved or went away
  Timeout,          // a wait passed its deadline (MSCCLPP_TIMEOUT_S)
  CudaError,        // the CUDA runtime or driver reported an error
  InvalidPlan,      // a plan file failed to load or validate
  NotSupported,     // a request we deliberately do not serve: a fallback or a clear failure
  Aborted,          // the communicator was aborted while the call was in progress
};

MSCCLPP_API const char* errorCodeName(ErrorCode code);

class MSCCLPP_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// An OS call failed; the message ends with strerror(errnoValue).
class MSCCLPP_API SystemError : public Error {
 public:
  SystemError(const std::string& what, int errnoValue);
  int errnoValue() const { return errno_; }

 private:
  int errno_;
};

class MSCCLPP_API TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& message) : Error(ErrorCode::Timeout, message) {}
};

}  // namespace mscclpp

#endif  // MSCCLPP_ERRORS_HPP_
