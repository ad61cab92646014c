#include "deadline.hpp"

#include <climits>

#include "format.hpp"
#include "mscclpp/device.hpp"
#include "mscclpp/errors.hpp"
#include "params.hpp"

namespace mscclpp {

Deadline::Deadline(double seconds, const char* source) : seconds_(seconds), source_(source), infinite_(seconds <= 0) {
  if (!infinite_)
    at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

Deadline Deadline::fromTimeoutParam() { return Deadline(params::timeoutSeconds()); }

int Deadline::remainingMs() const {
  if (infinite_) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
  if (left < 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

void throwTimeout(const Deadline& deadline, const std::string& what) {
  throw TimeoutError(
      strFormat("%s did not complete within %.3g s (%s)", what.c_str(), deadline.seconds(), deadline.source()));
}

std::string describeTimeout(const char* setting, double seconds) {
  const std::string name = setting != nullptr && *setting ? setting : "MSCCLPP_TIMEOUT_S";
  if (name.rfind("MSCCLPP_", 0) == 0) return strFormat("%s=%.3g", name.c_str(), seconds);
  return strFormat("%s: %.3g s", name.c_str(), seconds);
}

int64_t steadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::Clock::now().time_since_epoch()).count();
}

void backoffPause(unsigned iteration) { hostBackoffPause(iteration); }

}  // namespace mscclpp
