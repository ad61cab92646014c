#include "logger.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "enforce.hpp"
#include "format.hpp"
#include "params.hpp"

namespace mscclpp {
namespace detail {
LogConfigCache logConfigCache;
}  // namespace detail

namespace {

thread_local int tlsLogRank = -1;

struct LogSink {
  std::mutex mutex;
  FILE* file = nullptr;  // nullptr: stderr
  std::string lastWarning;
  bool versionPrinted = false;
  std::atomic<bool> abortOnWarn{false};
};

LogSink& sink() {
  static LogSink* s = new LogSink();  // never destroyed: logging works during static destruction
  return *s;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Version:
      return "VERSION";
    case LogLevel::Warn:
      return "WARN";
    case LogLevel::Info:
      return "INFO";
    case LogLevel::Abort:
      return "ABORT";
    case LogLevel::Trace:
      return "TRACE";
    default:
      return "";
  }
}

const char* subsysName(LogSubsys subsys) {
  switch (subsys) {
    case LogInit:
      return "INIT";
    case LogPlan:
      return "PLAN";
    case LogExec:
      return "EXEC";
    case LogBootstrap:
      return "BOOTSTRAP";
    case LogTransport:
      return "TRANSPORT";
    case LogProxy:
      return "PROXY";
    case LogShim:
      return "SHIM";
    case LogEnv:
      return "ENV";
    default:
      return "ALL";
  }
}

std::string linePrefix(LogLevel level, LogSubsys subsys) {
  char rank[24];
  if (tlsLogRank >= 0)
    std::snprintf(rank, sizeof(rank), "%d", tlsLogRank);
  else
    std::snprintf(rank, sizeof(rank), "-");
  return strFormat("%s:%d:%ld [%s] MSCCLPP %s %s ", logHostName().c_str(), static_cast<int>(getpid()),
                   static_cast<long>(syscall(SYS_gettid)), rank, levelName(level), subsysName(subsys));
}

void writeLine(LogLevel level, LogSubsys subsys, const std::string& message) {
  std::string line = linePrefix(level, subsys) + message;
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  LogSink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  FILE* out = s.file ? s.file : stderr;
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

void printVersionOnce() {
  LogSink& s = sink();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.versionPrinted) return;
    s.versionPrinted = true;
  }
  writeLine(LogLevel::Version, LogInit, "MSCCL++ runtime " MSCCLPP_VERSION_STRING);
}

}  // namespace

namespace detail {

void loadLogConfig() {
  // Logging never fails: an invalid value leaves the defaults at level WARN.
  // The init that rejects the value is then heard.
  LogConfig config;
  try {
    config = logConfigFromEnvironment();
  } catch (const Error&) {
    config = LogConfig();
    config.level = LogLevel::Warn;
  }
  std::string fileProblem;
  {
    LogSink& s = sink();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.file) {
      std::fclose(s.file);
      s.file = nullptr;
    }
    if (!config.filePattern.empty() && config.level != LogLevel::None) {
      const std::string path = expandLogFileName(config.filePattern);
      s.file = std::fopen(path.c_str(), "a");
      if (!s.file) {
        fileProblem =
            strFormat("cannot open the log file '%s': %s; logging to stderr", path.c_str(), std::strerror(errno));
      }
    }
    s.abortOnWarn.store(config.level == LogLevel::Abort, std::memory_order_relaxed);
  }
  logConfigCache.subsysMask.store(config.subsysMask, std::memory_order_relaxed);
  logConfigCache.level.store(static_cast<int>(config.level), std::memory_order_relaxed);
  if (!fileProblem.empty()) writeLine(LogLevel::Warn, LogEnv, fileProblem);
  if (config.level >= LogLevel::Version) printVersionOnce();
}

}  // namespace detail

void reloadLogConfig() {
  params::resetCache();  // parameters are cached: read them again
  detail::loadLogConfig();
}

void logMessage(LogLevel level, LogSubsys subsys, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = strFormatV(fmt, args);
  va_end(args);
  writeLine(level, subsys, message);
}

void logWarning(LogSubsys subsys, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = strFormatV(fmt, args);
  va_end(args);
  {
    LogSink& s = sink();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.lastWarning = message;
  }
  if (!logEnabled(LogLevel::Warn, subsys)) return;
  writeLine(LogLevel::Warn, subsys, message);
  if (sink().abortOnWarn.load(std::memory_order_relaxed)) {
    writeLine(LogLevel::Abort, subsys, "aborting at this warning (the log level is ABORT)");
    std::abort();
  }
}

std::string lastWarning() {
  LogSink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.lastWarning;
}

int currentLogRank() { return tlsLogRank; }

ScopedLogRank::ScopedLogRank(int rank) : previous_(tlsLogRank) { tlsLogRank = rank; }
ScopedLogRank::~ScopedLogRank() { tlsLogRank = previous_; }

}  // namespace mscclpp
