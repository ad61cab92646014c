// The host side of failSpin in mscclpp/device.hpp.
// A host wait(), sync() or push() that did not complete throws on the calling thread.
#include "core/format.hpp"
#include "mscclpp/device.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp {

void throwSpinFailure(SpinStatus status, const char* what) { throwSpinFailure(status, what, kTimeoutFromEnvironment); }

void throwSpinFailure(SpinStatus status, const char* what, uint32_t timeoutSource) {
  if (status == SpinStatus::Timeout) {
    throw TimeoutError(
        strFormat("%s did not complete within its timeout (%s)", what, timeoutSourceName(timeoutSource)));
  }
  if (status == SpinStatus::Aborted) throw Error(ErrorCode::Aborted, strFormat("%s was aborted", what));
  throw Error(ErrorCode::InvalidArgument, strFormat("%s: the request cannot be encoded", what));
}

}  // namespace mscclpp
