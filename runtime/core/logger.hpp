// The one logger. Levels and subsystems follow NCCL's conventions:
//   MSCCLPP_DEBUG=NONE|VERSION|WARN|INFO|TRACE, MSCCLPP_DEBUG_SUBSYS=INIT,PLAN (or ^PROXY),
//   MSCCLPP_DEBUG_FILE=/tmp/log.%h.%p
// Every line reads "host:pid:tid [rank] MSCCLPP LEVEL SUBSYS message". The rank is thread-local
// (several ranks may live in one process): set it with ScopedLogRank where a rank does work.
// Thread-safety: all functions may be called from any thread; a line is written with one call.
#ifndef MSCCLPP_CORE_LOGGER_HPP_
#define MSCCLPP_CORE_LOGGER_HPP_

#include <atomic>
#include <cstdint>
#include <string>

namespace mscclpp {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

enum LogSubsys : uint32_t {
  LogInit = 1u << 0,
  LogPlan = 1u << 1,
  LogExec = 1u << 2,
  LogBootstrap = 1u << 3,
  LogTransport = 1u << 4,
  LogProxy = 1u << 5,
  LogShim = 1u << 6,
  LogEnv = 1u << 7,
  LogAll = ~0u,
};

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
// Warnings are recorded even when MSCCLPP_DEBUG hides them.
void logWarning(LogSubsys subsys, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The text of the most recent warning in this process ("" if none).
std::string lastWarning();

// Parses a subsystem list ("INIT,PLAN", "^PROXY", "ALL"); unknown names throw InvalidArgument.
uint32_t parseSubsystemMask(const std::string& list);

// Re-reads MSCCLPP_DEBUG* from the environment (tests change them at run time; ncclResetDebugInit).
// Every cached parameter is read again at its next use (params::resetCache).
void reloadLogConfig();

// Expands %h (host name) and %p (pid) in a log file pattern.
std::string expandLogFileName(const std::string& pattern);

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
#define MSCCLPP_INFO(subsys, ...)                                                \
  do {                                                                           \
    if (::mscclpp::logEnabled(::mscclpp::LogLevel::Info, (subsys)))              \
      ::mscclpp::logMessage(::mscclpp::LogLevel::Info, (subsys), __VA_ARGS__);   \
  } while (0)
#define MSCCLPP_TRACE(subsys, ...)                                               \
  do {                                                                           \
    if (::mscclpp::logEnabled(::mscclpp::LogLevel::Trace, (subsys)))             \
      ::mscclpp::logMessage(::mscclpp::LogLevel::Trace, (subsys), __VA_ARGS__);  \
  } while (0)

#endif  // MSCCLPP_CORE_LOGGER_HPP_
