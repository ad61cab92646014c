// Turns the exception being handled into an ErrorCode and a message.
// Both C ABI guards classify here, then map the code to their result codes
// (runtime/capi/guard.hpp, nccl_shim/guard.hpp): one exception, one code.
#ifndef MSCCLPP_CORE_CAUGHT_ERROR_HPP_
#define MSCCLPP_CORE_CAUGHT_ERROR_HPP_

#include <exception>
#include <new>

#include "mscclpp/errors.hpp"

namespace mscclpp {

struct CaughtError {
  ErrorCode code;
  const char* message;  // valid inside the catch block only
};

// Call only inside a catch block.
// Error keeps its code.
// Running out of memory is a SystemError, as NCCL reports it.
// Any other exception is an InternalError: a bug of ours.
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
