#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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
}  // namespace

TEST_CASE("subsystem masks parse lists and inversion", "[logger]") {
  CHECK(parseSubsystemMask("INIT,PLAN") == (LogInit | LogPlan));
  CHECK(parseSubsystemMask("plan") == LogPlan);
  CHECK(parseSubsystemMask("^PROXY") == ~static_cast<uint32_t>(LogProxy));
  CHECK(parseSubsystemMask("ALL") == LogAll);
  CHECK_THROWS_WITH(parseSubsystemMask("INIT,NOPE"),
                    Catch::Contains("unknown subsystem 'NOPE'"));
}

TEST_CASE("log file pattern expands host and pid", "[logger]") {
  std::string name = expandLogFileName("/tmp/x.%p.log");
  CHECK(name == "/tmp/x." + std::to_string(getpid()) + ".log");
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string h = host;
  h = h.substr(0, h.find('.'));
  CHECK(expandLogFileName("%h-%%") == h + "-%%");
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

TEST_CASE("a bad MSCCLPP_DEBUG falls back to WARN with a message", "[logger]") {
  setenv("MSCCLPP_DEBUG", "LOUD", 1);
  CHECK_NOTHROW(reloadLogConfig());
  CHECK(logEnabled(LogLevel::Warn, LogInit));
  CHECK_FALSE(logEnabled(LogLevel::Info, LogInit));
  unsetenv("MSCCLPP_DEBUG");
  reloadLogConfig();
}
