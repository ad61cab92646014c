// Sets (or unsets, value nullptr) an environment variable for a scope and
// restores it after, for tests that link the runtime's internals. MSCCLPP_*
// parameters are read once and cached (runtime/core/params.hpp), so both ends
// reset the cache: the code under test reads the new value.
#ifndef MSCCLPP_TESTS_SUPPORT_SCOPED_ENV_HPP_
#define MSCCLPP_TESTS_SUPPORT_SCOPED_ENV_HPP_

#include <cstdlib>
#include <string>

#include "core/params.hpp"

namespace mscclpp::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    hadOld_ = old != nullptr;
    if (hadOld_) old_ = old;
    set(value);
  }
  ~ScopedEnv() { set(hadOld_ ? old_.c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const char* value) {
    if (value) {
      setenv(name_.c_str(), value, 1);
    } else {
      unsetenv(name_.c_str());
    }
    params::resetCache();
  }
  std::string name_, old_;
  bool hadOld_ = false;
};

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_SUPPORT_SCOPED_ENV_HPP_
