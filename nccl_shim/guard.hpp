// The one guard at the NCCL ABI. Every entry point
// runs its body inside guarded(), which turns whatever
// is thrown into an ncclResult_t and records the
// message for ncclGetLastError. Nothing thrown in the
// shim or the runtime crosses into the application.
#ifndef MSCCLPP_NCCL_SHIM_GUARD_HPP_
#define MSCCLPP_NCCL_SHIM_GUARD_HPP_

#include <nccl.h>

#include "mscclpp/errors.hpp"

namespace mscclpp::shim {

// NCCL's result for each of our error
// codes (docs/nccl-shim.md "Errors").
ncclResult_t toNcclResult(ErrorCode code);

// Records message as the last error, logs it at WARN, returns result.
ncclResult_t recordError(ncclResult_t result, const char* message);

// Carries a result computed elsewhere, such as by the real
// NCCL, through the guard, which records its message.
class NcclResultError : public Error {
 public:
  NcclResultError(ncclResult_t result, const std::string& message)
      : Error(ErrorCode::RemoteError, message), result_(result) {}
  ncclResult_t result() const { return result_; }

 private:
  ncclResult_t result_;
};

namespace detail {
ncclResult_t handleCurrentException() noexcept;
}

template <class Body>
ncclResult_t guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return detail::handleCurrentException();
  }
}

// For entry points that return something else:
// onError is returned once the error is recorded.
template <class T, class Body>
T guardedValue(T onError, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    detail::handleCurrentException();
    return onError;
  }
}

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_GUARD_HPP_
