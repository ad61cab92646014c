#include "env_check.hpp"

#include <string>

#include "enforce.hpp"
#include "log_config.hpp"
#include "params.hpp"

namespace mscclpp {

void checkEnvironment() {
  std::string problems;
  auto note = [&](const Error& e) { problems += (problems.empty() ? "" : "; ") + std::string(e.what()); };
  for (const auto& p : params::allParams()) {
    try {
      params::checkValue(p);
    } catch (const Error& e) {
      note(e);
    }
  }
  try {
    logConfigFromEnvironment();
  } catch (const Error& e) {
    note(e);
  }
  MSCCLPP_ENFORCE(problems.empty(), ErrorCode::InvalidArgument, "invalid environment: %s", problems.c_str());
}

}  // namespace mscclpp
