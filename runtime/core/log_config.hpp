// What the logger prints and where, read from the environment as NCCL does.
// NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE set level, subsystems and file;
// MSCCLPP_DEBUG, MSCCLPP_DEBUG_SUBSYS and MSCCLPP_DEBUG_FILE override them.
// Unset, nothing is printed, like NCCL.
// NCCL's subsystem names map to ours, so a list written for NCCL keeps working.
// docs/environment.md has the table.
#ifndef MSCCLPP_CORE_LOG_CONFIG_HPP_
#define MSCCLPP_CORE_LOG_CONFIG_HPP_

#include <cstdint>
#include <string>

namespace mscclpp {

// NCCL's levels in NCCL's order.
// ABORT logs like INFO and aborts at the first warning.
enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Abort = 4, Trace = 5 };

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

struct LogConfig {
  LogLevel level = LogLevel::None;
  uint32_t subsysMask = LogAll;
  std::string filePattern;  // "" is stderr; %h and %p are not expanded yet
};

// The configuration the environment asks for.
// An invalid value throws InvalidArgument naming variable,
// value and accepted values.
LogConfig logConfigFromEnvironment();

// The subsystems of a list such as "INIT,PLAN", "^PROXY" or "ALL".
// An unknown name throws InvalidArgument.
uint32_t parseSubsystemMask(const std::string& list);

// The level of a name, ignoring case; false when it names none.
bool parseLogLevel(const std::string& name, LogLevel* level);

// Expands %h to the host name, %p to the pid and %% to %, as NCCL does.
std::string expandLogFileName(const std::string& pattern);

// The short host name printed on every line and used for %h.
const std::string& logHostName();

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_LOG_CONFIG_HPP_
