// Checks that throw mscclpp::Error, printing both values: "a=3 vs b=4".
// A failed check then explains itself without a debugger.
// Use them for input and peers; for our own invariants, with InternalError.
#ifndef MSCCLPP_CORE_ENFORCE_HPP_
#define MSCCLPP_CORE_ENFORCE_HPP_

#include <sstream>
#include <string>

#include "format.hpp"
#include "mscclpp/errors.hpp"

#define MSCCLPP_THROW(code, ...) throw ::mscclpp::Error((code), ::mscclpp::strFormat(__VA_ARGS__))

#define MSCCLPP_ENFORCE(cond, code, ...) \
  do {                                   \
    if (!(cond)) {                       \
      MSCCLPP_THROW(code, __VA_ARGS__);  \
    }                                    \
  } while (0)

namespace mscclpp::detail {
template <class A, class B>
[[noreturn]] void enforceBinaryFailed(ErrorCode code, const char* exprA, const char* op, const char* exprB, const A& a,
                                      const B& b, const std::string& context) {
  std::ostringstream s;
  s << context << (context.empty() ? "" : ": ") << "expected " << exprA << " " << op << " " << exprB << " (" << exprA
    << "=" << a << " vs " << exprB << "=" << b << ")";
  throw Error(code, s.str());
}
}  // namespace mscclpp::detail

#define MSCCLPP_ENFORCE_BINARY_(a, op, b, code, ...)                                    \
  do {                                                                                  \
    const auto& mscclppA_ = (a);                                                        \
    const auto& mscclppB_ = (b);                                                        \
    if (!(mscclppA_ op mscclppB_)) {                                                    \
      ::mscclpp::detail::enforceBinaryFailed((code), #a, #op, #b, mscclppA_, mscclppB_, \
                                             ::mscclpp::strFormat(__VA_ARGS__));        \
    }                                                                                   \
  } while (0)

// The trailing arguments are a printf format for context; "" gives none.
#define MSCCLPP_ENFORCE_EQ(a, b, code, ...) MSCCLPP_ENFORCE_BINARY_(a, ==, b, code, __VA_ARGS__)
#define MSCCLPP_ENFORCE_NE(a, b, code, ...) MSCCLPP_ENFORCE_BINARY_(a, !=, b, code, __VA_ARGS__)
#define MSCCLPP_ENFORCE_LT(a, b, code, ...) MSCCLPP_ENFORCE_BINARY_(a, <, b, code, __VA_ARGS__)
#define MSCCLPP_ENFORCE_LE(a, b, code, ...) MSCCLPP_ENFORCE_BINARY_(a, <=, b, code, __VA_ARGS__)
#define MSCCLPP_ENFORCE_GE(a, b, code, ...) MSCCLPP_ENFORCE_BINARY_(a, >=, b, code, __VA_ARGS__)

// An OS call that returns -1 and sets errno.
#define MSCCLPP_SYSCHECK(call, what)                               \
  do {                                                             \
    if ((call) == -1) throw ::mscclpp::SystemError((what), errno); \
  } while (0)

#endif  // MSCCLPP_CORE_ENFORCE_HPP_
