// What the logger prints and where, read from the environment with NCCL's conventions:
//   NCCL_DEBUG=VERSION|WARN|INFO|ABORT|TRACE (and NONE), NCCL_DEBUG_SUBSYS=INIT,COLL,... (a leading ^
//   inverts, ALL), NCCL_DEBUG_FILE=/tmp/log.%h.%p; MSCCLPP_DEBUG, MSCCLPP_DEBUG_SUBSYS and
//   MSCCLPP_DEBUG_FILE override each of them. Unset, nothing is printed (NCCL is quiet by default).
// The subsystem list takes our names and NCCL's (mapped to the nearest of ours), so an
// NCCL_DEBUG_SUBSYS written for NCCL keeps working. docs/environment.md has the table.
#ifndef MSCCLPP_CORE_LOG_CONFIG_HPP_
#define MSCCLPP_CORE_LOG_CONFIG_HPP_

#include <cstdint>
#include <string>

namespace mscclpp {

// NCCL's levels in NCCL's order: ABORT logs like INFO and aborts the process at the first warning.
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
  std::string filePattern;  // "" writes to stderr; %h and %p not yet expanded
};

// The configuration the environment asks for. A value that is not valid throws
// Error(InvalidArgument) naming the variable, the value and what is accepted.
LogConfig logConfigFromEnvironment();

// The subsystems of a list ("INIT,PLAN", "^PROXY", "ALL", NCCL's "COLL,NET"); throws
// Error(InvalidArgument) for an unknown name.
uint32_t parseSubsystemMask(const std::string& list);

// The level of a name (case-insensitive); false when it is not one.
bool parseLogLevel(const std::string& name, LogLevel* level);

// Expands %h (host name), %p (pid) and %% in a log file pattern, as NCCL does.
std::string expandLogFileName(const std::string& pattern);

// The short host name printed on every line and used for %h.
const std::string& logHostName();

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_LOG_CONFIG_HPP_
