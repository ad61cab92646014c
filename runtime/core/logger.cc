#include "logger.hpp"

#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
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
};

LogSink& sink() {
  static LogSink* s = new LogSink();  // never destroyed: logging works during static destruction
  return *s;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::Version: return "VERSION";
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
    default: return "";
  }
}

struct SubsysName {
  const char* name;
  uint32_t bit;
};
const SubsysName kSubsysNames[] = {{"INIT", LogInit},           {"PLAN", LogPlan},   {"EXEC", LogExec},
                                   {"BOOTSTRAP", LogBootstrap}, {"TRANSPORT", LogTransport},
                                   {"PROXY", LogProxy},         {"SHIM", LogShim},   {"ENV", LogEnv},
                                   {"ALL", LogAll}};

const char* subsysName(LogSubsys subsys) {
  for (const auto& s : kSubsysNames)
    if (s.bit == subsys) return s.name;
  return "ALL";
}

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  // Keep the short name, like NCCL does, so lines stay readable.
  char* dot = std::strchr(buf, '.');
  if (dot) *dot = '\0';
  return buf;
}

std::string linePrefix(LogLevel level, LogSubsys subsys) {
  static const std::string host = hostName();
  char rank[24];
  if (tlsLogRank >= 0)
    std::snprintf(rank, sizeof(rank), "%d", tlsLogRank);
  else
    std::snprintf(rank, sizeof(rank), "-");
  return strFormat("%s:%d:%ld [%s] MSCCLPP %s %s ", host.c_str(), static_cast<int>(getpid()),
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

uint32_t parseSubsystemMask(const std::string& list) {
  std::string text = list;
  bool invert = false;
  if (!text.empty() && text[0] == '^') {
    invert = true;
    text = text.substr(1);
  }
  uint32_t mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty()) {
      bool found = false;
      for (const auto& s : kSubsysNames) {
        if (strcasecmp(name.c_str(), s.name) == 0) {
          mask |= s.bit;
          found = true;
        }
      }
      MSCCLPP_ENFORCE(found, ErrorCode::InvalidArgument,
                      "MSCCLPP_DEBUG_SUBSYS: unknown subsystem '%s' (known: INIT,PLAN,EXEC,BOOTSTRAP,TRANSPORT,PROXY,SHIM,ENV,ALL)",
                      name.c_str());
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return invert ? ~mask : mask;
}

std::string expandLogFileName(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[i + 1];
      if (c == 'h') {
        out += hostName();
        ++i;
        continue;
      }
      if (c == 'p') {
        out += std::to_string(getpid());
        ++i;
        continue;
      }
    }
    out.push_back(pattern[i]);
  }
  return out;
}

namespace detail {

void loadLogConfig() {
  // A bad value must not break logging itself: fall back to the default and say so once.
  int level = static_cast<int>(LogLevel::Warn);
  uint32_t mask = LogAll;
  std::string problem;
  try {
    std::string name = params::debugLevel();
    static const char* names[] = {"NONE", "VERSION", "WARN", "INFO", "TRACE"};
    for (int i = 0; i < 5; ++i)
      if (name == names[i]) level = i;
  } catch (const Error& e) {
    problem = e.what();
  }
  try {
    mask = parseSubsystemMask(params::debugSubsystems());
  } catch (const Error& e) {
    problem = e.what();
  }
  std::string file = params::debugFile();
  {
    LogSink& s = sink();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.file) {
      std::fclose(s.file);
      s.file = nullptr;
    }
    if (!file.empty()) {
      std::string path = expandLogFileName(file);
      s.file = std::fopen(path.c_str(), "a");
      if (!s.file) problem = strFormat("MSCCLPP_DEBUG_FILE: cannot open '%s': %s", path.c_str(), std::strerror(errno));
    }
  }
  logConfigCache.subsysMask.store(mask, std::memory_order_relaxed);
  logConfigCache.level.store(level, std::memory_order_relaxed);
  if (!problem.empty()) writeLine(LogLevel::Warn, LogEnv, problem + " (using the default)");
  if (level >= static_cast<int>(LogLevel::Version)) printVersionOnce();
}

}  // namespace detail

void reloadLogConfig() {
  params::resetCache();  // parameters are read once: read the environment again
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
  if (logEnabled(LogLevel::Warn, subsys)) writeLine(LogLevel::Warn, subsys, message);
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
