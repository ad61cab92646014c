// The one logger. Levels, subsystems and the log file follow NCCL's conventions (core/log_config.hpp):
// quiet unless NCCL_DEBUG or MSCCLPP_DEBUG asks. Every line reads
// "host:pid:tid [rank] MSCCLPP LEVEL SUBSYS message". The rank is thread-local (several ranks may
// live in one process): set it with ScopedLogRank where a rank does work.
// Thread-safety: all functions may be called from any thread; a line is written with one call.
#ifndef MSCCLPP_CORE_LOGGER_HPP_
#define MSCCLPP_CORE_LOGGER_HPP_

#include <atomic>
#include <cstdint>
#include <string>

#include "log_config.hpp"

namespace mscclpp {

namespace detail {
struct LogConfigCache {
  std::atomic<int> level{-1};  // -1: not read from the environment yet
  std::atomic<uint32_t> subsysMask{LogAll};
};
extern LogConfigCache logConfigCache;
void loadLogConfig();
}  // namespace detail

// True when a message of this level and subsystem would be printed. Cheap: two relaxed loads.
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

// Records a warning as the process's last error text (ncclGetLastError) and logs it at WARN.
// Warnings are recorded even when the level hides them. At level ABORT the process aborts after
// printing it (NCCL's ABORT: a core dump at the first warning).
void logWarning(LogSubsys subsys, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The text of the most recent warning in this process ("" if none).
std::string lastWarning();

// Re-reads the logging variables from the environment (tests change them at run time;
// ncclResetDebugInit), and every cached parameter at its next use (params::resetCache). A value
// that is not valid leaves the default (level WARN, so that the rejection at init is printed);
// checkEnvironment() reports it.
void reloadLogConfig();

// The rank printed on this thread's log lines; -1 prints "-".
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
