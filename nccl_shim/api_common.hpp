// What every api_*.cc entry point shares.
//
// MSCCLPP_NCCL_API lays a function out as libnccl.so.2 does:
// a strong pncclX and a weak ncclX alias, both exported.
//
// MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL sends a call
// straight to the real symbol when this thread is inside
// the real NCCL. That happens when the real library
// calls one of its own public names (real_nccl.hpp).
#ifndef MSCCLPP_NCCL_SHIM_API_COMMON_HPP_
#define MSCCLPP_NCCL_SHIM_API_COMMON_HPP_

#include <nccl.h>
#include <nccl_device.h>

#include <type_traits>

#include "guard.hpp"
#include "real_nccl.hpp"

#define MSCCLPP_NCCL_API(ret, name, ...)                                      \
  extern "C" __attribute__((visibility("default"))) ret p##name(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name(__VA_ARGS__)

namespace mscclpp::shim {

// What an entry point returns when the real symbol is missing.
template <class R>
R passThroughFailure() {
  if constexpr (std::is_same<R, ncclResult_t>::value) {
    return ncclInternalError;
  } else if constexpr (std::is_same<R, const char*>::value) {
    return "internal error: the MSCCL++ shim could not reach the real NCCL";
  } else if constexpr (std::is_void<R>::value) {
    return;
  } else {
    return R{};
  }
}

template <NcclFn F, class... Args>
auto passThrough(Args... args) -> decltype(RealNccl::instance().fnOrNull<F>()(args...)) {
  using R = decltype(RealNccl::instance().fnOrNull<F>()(args...));
  auto f = RealNccl::instance().fnOrNull<F>();
  if (f == nullptr) return passThroughFailure<R>();
  return f(args...);
}

}  // namespace mscclpp::shim

#define MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(name, ...)                                 \
  do {                                                                                 \
    if (__builtin_expect(::mscclpp::shim::insideRealNccl(), 0)) {                      \
      return ::mscclpp::shim::passThrough<::mscclpp::shim::NcclFn::name>(__VA_ARGS__); \
    }                                                                                  \
  } while (0)

#endif  // MSCCLPP_NCCL_SHIM_API_COMMON_HPP_
