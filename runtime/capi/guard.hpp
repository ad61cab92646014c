// The one guard every entry point of mscclpp_c.h runs in: it maps mscclpp::Error (and anything
// else thrown) to an mscclppStatus and writes the message to the caller's buffer, so no C++
// exception ever crosses the C boundary.
#ifndef MSCCLPP_CAPI_GUARD_HPP_
#define MSCCLPP_CAPI_GUARD_HPP_

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "mscclpp/errors.hpp"
#include "mscclpp/mscclpp_c.h"

namespace mscclpp::capi {

// Writes s to buf, truncated to len - 1 bytes and always NUL-terminated; nothing when buf is NULL
// or len is 0.
// Takes a C string so that reporting an error never allocates (and so never throws).
inline void writeText(char* buf, size_t len, const char* s) {
  if (buf == nullptr || len == 0) return;
  const size_t n = std::min(len - 1, std::strlen(s));
  std::memcpy(buf, s, n);
  buf[n] = '\0';
}
inline void writeText(char* buf, size_t len, const std::string& s) { writeText(buf, len, s.c_str()); }

inline int statusOf(ErrorCode code) {
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

// Runs body (returning the status, or a count where the function says so) and maps exceptions.
// The message buffer is cleared first, so a success never leaves an old message behind.
template <class Body>
int guarded(char* errBuf, size_t errLen, Body&& body) noexcept {
  try {
    writeText(errBuf, errLen, "");
    return body();
  } catch (const Error& e) {
    writeText(errBuf, errLen, e.what());
    return statusOf(e.code());
  } catch (const std::bad_alloc&) {
    writeText(errBuf, errLen, "out of memory");
    return mscclppInternalError;
  } catch (const std::exception& e) {
    writeText(errBuf, errLen, e.what());
    return mscclppInternalError;
  } catch (...) {
    writeText(errBuf, errLen, "unknown exception");
    return mscclppInternalError;
  }
}

}  // namespace mscclpp::capi

#endif  // MSCCLPP_CAPI_GUARD_HPP_
