// Deadlines for every host-side wait.
// A Deadline comes from MSCCLPP_TIMEOUT_S unless the caller passes one.
// A waiting loop checks expired() and throws a TimeoutError naming its wait.
#ifndef MSCCLPP_CORE_DEADLINE_HPP_
#define MSCCLPP_CORE_DEADLINE_HPP_

#include <chrono>
#include <cstdint>
#include <string>

namespace mscclpp {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // A deadline seconds from now; seconds <= 0 means never (tests only).
  // source names the setting in timeout errors; it has static storage.
  explicit Deadline(double seconds, const char* source = "MSCCLPP_TIMEOUT_S");
  // A deadline MSCCLPP_TIMEOUT_S from now.
  static Deadline fromTimeoutParam();

  bool expired() const { return !infinite_ && Clock::now() >= at_; }
  // Milliseconds left, at most INT_MAX; -1 when infinite,
  // as poll() takes it.
  int remainingMs() const;
  double seconds() const { return seconds_; }
  const char* source() const { return source_; }

 private:
  Clock::time_point at_;
  double seconds_;
  const char* source_;
  bool infinite_;
};

// A timeout not yet started, kept by an object to bound its later waits.
// It comes from the object's communicator
// (timeoutOf in comm/communicator_impl.hpp).
struct TimeoutSetting {
  double seconds = 0;                        // <= 0: no deadline
  const char* source = "MSCCLPP_TIMEOUT_S";  // named in timeout errors; a string with static storage

  Deadline start() const { return Deadline(seconds, source); }
};

// Polls until done() is true, backing off as mscclpp/device.hpp does.
// Past the deadline it throws TimeoutError:
// "<what> did not complete within <s> s (<source>)".
template <class Done>
void waitUntil(Done&& done, const Deadline& deadline, const std::string& what);

void throwTimeout(const Deadline& deadline, const std::string& what);
// "MSCCLPP_TIMEOUT_S=3" for the variable;
// "the communicator's timeout: 3 s" for other settings.
std::string describeTimeout(const char* setting, double seconds);
// Milliseconds of the steady clock, for heartbeats and long-wait reports.
int64_t steadyMs();
void backoffPause(unsigned iteration);

template <class Done>
void waitUntil(Done&& done, const Deadline& deadline, const std::string& what) {
  for (unsigned i = 0; !done(); ++i) {
    if ((i & 63) == 0 && deadline.expired()) throwTimeout(deadline, what);
    backoffPause(i);
  }
}

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_DEADLINE_HPP_
