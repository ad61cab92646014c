// Deadlines for every host-side wait. A Deadline is taken from MSCCLPP_TIMEOUT_S unless a caller
// passes its own; code that waits checks expired() in its loop and throws a TimeoutError naming
// what it waited for (see waitUntil).
#ifndef MSCCLPP_CORE_DEADLINE_HPP_
#define MSCCLPP_CORE_DEADLINE_HPP_

#include <chrono>
#include <cstdint>
#include <string>

namespace mscclpp {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // A deadline seconds from now; seconds <= 0 means "never" (only for tests that need it).
  // source: the setting the seconds came from, named in timeout errors ("MSCCLPP_INIT_TIMEOUT_S",
  // "the communicator's timeout"); a string with static storage.
  explicit Deadline(double seconds, const char* source = "MSCCLPP_TIMEOUT_S");
  // A deadline MSCCLPP_TIMEOUT_S from now.
  static Deadline fromTimeoutParam();

  bool expired() const { return !infinite_ && Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, INT_MAX]; -1 for an infinite deadline (poll()-style).
  int remainingMs() const;
  double seconds() const { return seconds_; }
  const char* source() const { return source_; }

 private:
  Clock::time_point at_;
  double seconds_;
  const char* source_;
  bool infinite_;
};

// A timeout not yet started: what an object keeps to bound each of its later waits (a connection's flush, the NVLS
// handle exchange). Made from the communicator the object is built on (Communicator::timeoutSeconds() and
// timeoutSetting(), comm/communicator_impl.hpp: timeoutOf).
struct TimeoutSetting {
  double seconds = 0;                        // <= 0: no deadline
  const char* source = "MSCCLPP_TIMEOUT_S";  // named in timeout errors; a string with static storage

  Deadline start() const { return Deadline(seconds, source); }
};

// Polls (with the host backoff of mscclpp/device.hpp: spin, yield, then sleeps growing to 1 ms) until done() is true;
// throws TimeoutError
// "<what> did not complete within <s> s (<source>)" when the deadline passes first.
template <class Done>
void waitUntil(Done&& done, const Deadline& deadline, const std::string& what);

void throwTimeout(const Deadline& deadline, const std::string& what);
// "MSCCLPP_TIMEOUT_S=3" for the variable, "the communicator's timeout: 3 s" for any other setting.
std::string describeTimeout(const char* setting, double seconds);
// Milliseconds of the steady clock (timestamps for heartbeats and long-wait reports).
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
