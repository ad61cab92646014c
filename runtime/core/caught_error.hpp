// What the exception being handled means at a C boundary: an ErrorCode and its message. The two
// guards of our C ABIs (runtime/capi/guard.hpp for mscclpp_c.h and plan_api.h, nccl_shim/guard.hpp
// for the NCCL names) classify every exception here, then map the code to their own result codes
// (mscclppStatus, ncclResult_t), so both treat the same exception the same way.
#ifndef MSCCLPP_CORE_CAUGHT_ERROR_HPP_
#define MSCCLPP_CORE_CAUGHT_ERROR_HPP_

#include <exception>
#include <new>

#include "mscclpp/errors.hpp"

namespace mscclpp {

struct CaughtError {
  ErrorCode code;
  const char* message;  // valid while the exception is being handled (inside the catch block)
};

// Call only inside a catch block. Error keeps its code; running out of memory is a SystemError (as
// NCCL reports a failed allocation); any other exception is an InternalError (a bug of ours).
// Never throws and never allocates.
inline CaughtError classifyCaughtException() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return {e.code(), e.what()};
  } catch (const std::bad_alloc&) {
    return {ErrorCode::SystemError, "out of host memory"};
  } catch (const std::exception& e) {
    return {ErrorCode::InternalError, e.what()};
  } catch (...) {
    return {ErrorCode::InternalError, "unknown exception (not derived from std::exception)"};
  }
}

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_CAUGHT_ERROR_HPP_
