#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "mscclpp/errors.hpp"

using namespace mscclpp;

namespace {
std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* const kLogVariables[] = {"MSCCLPP_DEBUG", "MSCCLPP_DEBUG_SUBSYS", "MSCCLPP_DEBUG_FILE",
                                     "NCCL_DEBUG",    "NCCL_DEBUG_SUBSYS",    "NCCL_DEBUG_FILE"};

// Sets the logging variables for one test (nullptr unsets) and reloads the
// logger; restores all of them (unset) and reloads again at the end.
struct LoggingVariables {
  LoggingVariables() : LoggingVariables({{"MSCCLPP_DEBUG", ""}}) {}
  explicit LoggingVariables(std::initializer_list<std::pair<const char*, const char*>> values) {
    clear();
    for (const auto& v : values) setenv(v.first, v.second, 1);
    reloadLogConfig();
  }
  ~LoggingVariables() {
    clear();
    reloadLogConfig();
  }
  static void clear() {
    for (const char* name : kLogVariables) unsetenv(name);
  }
};

std::string tempLog(const char* tag) {
  std::string path = "/tmp/mscclpp_logger_test." + std::string(tag) + "." + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  return path;
}
}  // namespace

TEST_CASE("subsystem masks parse lists and inversion", "[logger]") {
  CHECK(parseSubsystemMask("INIT,PLAN") == (LogInit | LogPlan));
  CHECK(parseSubsystemMask("plan") == LogPlan);
  CHECK(parseSubsystemMask("^PROXY") == ~static_cast<uint32_t>(LogProxy));
  CHECK(parseSubsystemMask("ALL") == LogAll);
  CHECK_THROWS_WITH(parseSubsystemMask("INIT,NOPE"), Catch::Contains("unknown subsystem 'NOPE'"));
}

TEST_CASE("NCCL's subsystem names select the closest of ours", "[logger]") {
  CHECK(parseSubsystemMask("COLL") == (LogShim | LogPlan | LogExec));
  CHECK(parseSubsystemMask("INIT,NET") == (LogInit | LogTransport));
  CHECK(parseSubsystemMask("init, bootstrap ,ENV") == (LogInit | LogBootstrap | LogEnv));
  CHECK(parseSubsystemMask("PROFILE,RAS") == 0u);  // accepted: nothing of ours matches
  CHECK(parseSubsystemMask("^COLL") == ~static_cast<uint32_t>(LogShim | LogPlan | LogExec));
}

TEST_CASE("log levels are NCCL's, in NCCL's order", "[logger]") {
  LogLevel level = LogLevel::None;
  CHECK(parseLogLevel("abort", &level));
  CHECK(level == LogLevel::Abort);
  CHECK(parseLogLevel("VERSION", &level));
  CHECK(level == LogLevel::Version);
  CHECK_FALSE(parseLogLevel("LOUD", &level));
  CHECK(LogLevel::Warn < LogLevel::Info);
  CHECK(LogLevel::Info < LogLevel::Abort);
  CHECK(LogLevel::Abort < LogLevel::Trace);
}

TEST_CASE("log file pattern expands host and pid", "[logger]") {
  std::string name = expandLogFileName("/tmp/x.%p.log");
  CHECK(name == "/tmp/x." + std::to_string(getpid()) + ".log");
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string h = host;
  h = h.substr(0, h.find('.'));
  CHECK(expandLogFileName("%h-%%") == h + "-%");  // %% is one %, as in NCCL
  CHECK(expandLogFileName("a%xb%") == "a%xb%");   // anything else is kept
}

TEST_CASE("levels, subsystems, prefix with rank, and the last warning", "[logger]") {
  std::string path = "/tmp/mscclpp_logger_test." + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  setenv("MSCCLPP_DEBUG_FILE", path.c_str(), 1);
  setenv("MSCCLPP_DEBUG", "INFO", 1);
  setenv("MSCCLPP_DEBUG_SUBSYS", "^PROXY", 1);
  reloadLogConfig();
  {
    ScopedLogRank rank(5);
    MSCCLPP_INFO(LogPlan, "plan %s ran", "allreduce_pkt_8");
    MSCCLPP_INFO(LogProxy, "hidden by the subsystem mask");
    MSCCLPP_TRACE(LogPlan, "hidden by the level");
    MSCCLPP_WARN(LogProxy, "warnings always pass the subsystem mask (%d)", 42);
  }
  CHECK(currentLogRank() == -1);
  CHECK(lastWarning() == "warnings always pass the subsystem mask (42)");
  setenv("MSCCLPP_DEBUG", "NONE", 1);
  reloadLogConfig();
  MSCCLPP_WARN(LogInit, "recorded but not printed");
  CHECK(lastWarning() == "recorded but not printed");
  unsetenv("MSCCLPP_DEBUG_FILE");
  unsetenv("MSCCLPP_DEBUG");
  unsetenv("MSCCLPP_DEBUG_SUBSYS");
  reloadLogConfig();

  std::string log = readFile(path);
  std::remove(path.c_str());
  CHECK(log.find("[5] MSCCLPP INFO PLAN plan allreduce_pkt_8 ran\n") != std::string::npos);
  CHECK(log.find(":" + std::to_string(getpid()) + ":") != std::string::npos);
  CHECK(log.find("hidden") == std::string::npos);
  CHECK(log.find("[5] MSCCLPP WARN PROXY warnings always pass the subsystem mask (42)") != std::string::npos);
  CHECK(log.find("recorded but not printed") == std::string::npos);
}

TEST_CASE("quiet by default: nothing printed unless a level is set", "[logger]") {
  LoggingVariables env;
  CHECK_FALSE(logEnabled(LogLevel::Version, LogInit));
  CHECK_FALSE(logEnabled(LogLevel::Warn, LogInit));
  MSCCLPP_WARN(LogInit, "recorded, not printed");
  CHECK(lastWarning() == "recorded, not printed");
}

TEST_CASE("NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE work", "[logger]") {
  const std::string path = tempLog("nccl");
  const std::string pattern = "/tmp/mscclpp_logger_test.nccl.%p.log";
  {
    LoggingVariables env({{"NCCL_DEBUG", "info"}, {"NCCL_DEBUG_SUBSYS", "COLL"}, {"NCCL_DEBUG_FILE", pattern.c_str()}});
    CHECK(logEnabled(LogLevel::Info, LogShim));
    CHECK_FALSE(logEnabled(LogLevel::Info, LogBootstrap));
    CHECK_FALSE(logEnabled(LogLevel::Trace, LogShim));
    MSCCLPP_INFO(LogShim, "plan %s ran", "allreduce_ll_n2_oop");
    MSCCLPP_INFO(LogBootstrap, "hidden by NCCL_DEBUG_SUBSYS");
  }
  const std::string log = readFile(path);
  std::remove(path.c_str());
  CHECK(log.find("MSCCLPP INFO SHIM plan allreduce_ll_n2_oop ran\n") != std::string::npos);
  CHECK(log.find("hidden") == std::string::npos);
}

TEST_CASE("MSCCLPP_DEBUG* override NCCL_DEBUG*", "[logger]") {
  const std::string ours = tempLog("ours"), nccls = tempLog("nccls");
  {
    LoggingVariables env({{"NCCL_DEBUG", "TRACE"},
                          {"MSCCLPP_DEBUG", "WARN"},
                          {"NCCL_DEBUG_SUBSYS", "INIT"},
                          {"MSCCLPP_DEBUG_SUBSYS", "PLAN"},
                          {"NCCL_DEBUG_FILE", nccls.c_str()},
                          {"MSCCLPP_DEBUG_FILE", ours.c_str()}});
    CHECK_FALSE(logEnabled(LogLevel::Info, LogPlan));
    MSCCLPP_WARN(LogInit, "a warning");
  }
  {
    LoggingVariables env({{"NCCL_DEBUG", "WARN"}, {"MSCCLPP_DEBUG", "INFO"}, {"MSCCLPP_DEBUG_SUBSYS", "PLAN"}});
    CHECK(logEnabled(LogLevel::Info, LogPlan));
    CHECK_FALSE(logEnabled(LogLevel::Info, LogInit));
  }
  CHECK(readFile(ours).find("MSCCLPP WARN INIT a warning") != std::string::npos);
  CHECK(readFile(nccls).empty());
  std::remove(ours.c_str());
  std::remove(nccls.c_str());
}

TEST_CASE("NCCL_DEBUG=ABORT logs as INFO and aborts at a warning", "[logger]") {
  const std::string path = tempLog("abort");
  LoggingVariables env({{"NCCL_DEBUG", "ABORT"}, {"NCCL_DEBUG_FILE", path.c_str()}});
  CHECK(logEnabled(LogLevel::Info, LogPlan));
  CHECK_FALSE(logEnabled(LogLevel::Trace, LogPlan));
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const struct rlimit noCore = {0, 0};
    setrlimit(RLIMIT_CORE, &noCore);  // the abort is expected: no core file
    // Catch2's handler would report the child's SIGABRT as a failure and write
    // a second JUnit document into the parent's report file: the child dies of
    // the signal without it.
    std::signal(SIGABRT, SIG_DFL);
    MSCCLPP_WARN(LogExec, "the warning that aborts");
    _exit(0);  // not reached when the warning aborts
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT));
  const std::string log = readFile(path);
  std::remove(path.c_str());
  CHECK(log.find("MSCCLPP WARN EXEC the warning that aborts") != std::string::npos);
  CHECK(log.find("MSCCLPP ABORT EXEC aborting at this warning") != std::string::npos);
}

TEST_CASE("a bad logging value keeps WARN; checkEnvironment names it", "[logger]") {
  {
    LoggingVariables env({{"NCCL_DEBUG", "LOUD"}});
    CHECK(logEnabled(LogLevel::Warn, LogInit));  // so that the rejection at init is printed
    CHECK_FALSE(logEnabled(LogLevel::Info, LogInit));
    try {
      checkEnvironment();
      FAIL("no throw");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidArgument);
      CHECK(std::string(e.what()) ==
            "invalid environment: NCCL_DEBUG='LOUD' is not valid: expected one of NONE|VERSION|WARN|INFO|ABORT|TRACE "
            "(default NONE)");
    }
  }
  {
    LoggingVariables env({{"MSCCLPP_DEBUG_SUBSYS", "INIT,NOPE"}});
    setenv("MSCCLPP_TIMEOUT_S", "soon", 1);
    std::string what;
    try {
      checkEnvironment();
    } catch (const Error& e) {
      what = e.what();
    }
    unsetenv("MSCCLPP_TIMEOUT_S");
    CHECK(what.find("MSCCLPP_TIMEOUT_S='soon' is not valid: expected a number (default 0)") != std::string::npos);
    CHECK(what.find("MSCCLPP_DEBUG_SUBSYS='INIT,NOPE' is not valid: unknown subsystem 'NOPE' (expected a comma list "
                    "of INIT,PLAN,") != std::string::npos);
  }
  LoggingVariables clean;
  CHECK_NOTHROW(checkEnvironment());
}
