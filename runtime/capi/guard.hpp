// The one guard every C entry point of mscclpp_c.h and plan_api.h runs in. It maps mscclpp::Error
// (and anything else thrown: core/caught_error.hpp) to an mscclppStatus, writes the message to the
// caller's buffer and records it as the thread's last error (mscclppGetLastError), so no C++
// exception ever crosses the C boundary. tests/unit/capi/test_c_entry_points.cc calls every entry
// point the headers declare with bad input and checks the status and the message.
#ifndef MSCCLPP_CAPI_GUARD_HPP_
#define MSCCLPP_CAPI_GUARD_HPP_

#include <cstddef>
#include <stdexcept>
#include <string>

#include "mscclpp/errors.hpp"
#include "mscclpp/status.h"

namespace mscclpp::capi {

// Writes s to buf, truncated to len - 1 bytes and always NUL-terminated; nothing when buf is NULL
// or len is 0. Takes a C string so that reporting an error never allocates (and so never throws).
void writeText(char* buf, size_t len, const char* s) noexcept;
inline void writeText(char* buf, size_t len, const std::string& s) noexcept { writeText(buf, len, s.c_str()); }

mscclppStatus statusOf(ErrorCode code) noexcept;

// Thrown inside a guarded body to fail with a status that no ErrorCode stands for (NotFound,
// AlreadyExists).
class StatusError : public std::runtime_error {
 public:
  StatusError(mscclppStatus status, const std::string& message) : std::runtime_error(message), status_(status) {}
  mscclppStatus status() const { return status_; }

 private:
  mscclppStatus status_;
};

// The failure of the exception being handled (call only inside a catch block): writes the message to
// errBuf, records it as the last error, returns the negative status.
int failCaughtException(char* errBuf, size_t errLen) noexcept;

// Runs body, which returns mscclppSuccess (or a count or yes/no answer where the function says so),
// and maps any exception to its status. errBuf is cleared first, so a success never leaves an old
// message behind; errBuf may be NULL (functions without a message buffer: mscclppGetLastError has it).
template <class Body>
int guarded(char* errBuf, size_t errLen, Body&& body) noexcept {
  try {
    writeText(errBuf, errLen, "");
    return body();
  } catch (...) {
    return failCaughtException(errBuf, errLen);
  }
}

}  // namespace mscclpp::capi

#endif  // MSCCLPP_CAPI_GUARD_HPP_
