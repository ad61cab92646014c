// The one logger, quiet unless NCCL_DEBUG or MSCCLPP_DEBUG asks (core/log_config.hpp).
// Every line reads "host:pid:tid [rank] MSCCLPP LEVEL SUBSYS message".
// The rank is per thread, since one process may hold several ranks;
// ScopedLogRank sets it where a rank does work.
// Thread-safety: any function from any thread; each line is one write.
#ifndef MSCCLPP_CORE_LOGGER_HPP_
#define MSCCLPP_CORE_LOGGER_HPP_

#include <atomic>
#include <cstdint>
#include <string>

#include "log_config.hpp"

namespace mscclpp {

namespace detail {
struct LogConfigCache {
  std::atomic<int> level{-1};  // -1 until the environment is read
  std::atomic<uint32_t> subsysMask{LogAll};
};
extern LogConfigCache logConfigCache;
void loadLogConfig();
}  // namespace detail

// True when a message of this level and subsystem would print.
// Relaxed loads: a thread may see a reloaded setting a moment late.
inline bool logEnabled(LogLevel level, LogSubsys subsys) {
  int current = detail::logConfigCache.level.load(std::memory_order_relaxed);
  if (current < 0) {
    detail::loadLogConfig();
    current = detail::logConfigCache.level.load(std::memory_order_relaxed);
  }
  if (static_cast<int>(level) > current) return false;
  return level == LogLevel::Warn || (detail::logConfigCache.subsysMask.load(std::memory_order_relaxed) & subsys) != 0;
}

void logMessage(LogLevel level, LogSubsys subsys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// Logs a warning and records it as the process's last error text.
// It is recorded even when the level hides it, for ncclGetLastError.
// At level ABORT the process aborts after printing it, as NCCL does.
void logWarning(LogSubsys subsys, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The text of the most recent warning in this process, or "".
std::string lastWarning();

// Re-reads the logging variables,
// and every cached parameter at its next use.
// Tests and ncclResetDebugInit change them at run time.
// An invalid value leaves the defaults at level WARN,
// so checkEnvironment()'s rejection prints.
void reloadLogConfig();

// The rank on this thread's log lines; -1 prints "-".
int currentLogRank();
class ScopedLogRank {
 public:
  explicit ScopedLogRank(int rank);
  ~ScopedLogRank();
  ScopedLogRank(const ScopedLogRank&) = delete;
  ScopedLogRank& operator=(const ScopedLogRank&) = delete;

 private:
  int previous_;
};

}  // namespace mscclpp

#define MSCCLPP_WARN(subsys, ...) ::mscclpp::logWarning((subsys), __VA_ARGS__)
#define MSCCLPP_INFO(subsys, ...)                                              \
  do {                                                                         \
    if (::mscclpp::logEnabled(::mscclpp::LogLevel::Info, (subsys)))            \
      ::mscclpp::logMessage(::mscclpp::LogLevel::Info, (subsys), __VA_ARGS__); \
  } while (0)
#define MSCCLPP_TRACE(subsys, ...)                                              \
  do {                                                                          \
    if (::mscclpp::logEnabled(::mscclpp::LogLevel::Trace, (subsys)))            \
      ::mscclpp::logMessage(::mscclpp::LogLevel::Trace, (subsys), __VA_ARGS__); \
  } while (0)

#endif  // MSCCLPP_CORE_LOGGER_HPP_
