// The one guard at the NCCL ABI: every entry point runs its body inside guarded(), which maps mscclpp::Error (and
// anything else thrown, classified as the C API's guard does: core/caught_error.hpp) to an ncclResult_t and
// records the message as the process's last error (ncclGetLastError). Nothing thrown inside the shim or the
// runtime ever crosses into the application. The result codes stay NCCL's (toNcclResult).
#ifndef MSCCLPP_NCCL_SHIM_GUARD_HPP_
#define MSCCLPP_NCCL_SHIM_GUARD_HPP_

#include <nccl.h>

#include "mscclpp/errors.hpp"

namespace mscclpp::shim {

// NCCL's result for each of our error codes (docs/nccl-shim.md lists the mapping and why).
ncclResult_t toNcclResult(ErrorCode code);

// Records message as the last error (logged at WARN) and returns result.
ncclResult_t recordError(ncclResult_t result, const char* message);

// Thrown to return an NCCL result code computed elsewhere (e.g. by the real NCCL) through the guard; the message
// has already been recorded or is recorded by the guard.
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

// For entry points that return something other than ncclResult_t: onError is returned after the error is
// recorded.
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
