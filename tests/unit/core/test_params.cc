#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "../../support/run_command.hpp"
#include "../../support/scoped_env.hpp"
#include "core/deadline.hpp"
#include "core/params.hpp"
#include "mscclpp/errors.hpp"

// This test's own parameters, declared and registered like a layer's (params_test.def).
#define MSCCLPP_PARAMS_DEF "params_test.def"
#include "core/params_declare.inc"
#define MSCCLPP_PARAMS_OWNER "test"
#include "core/params_define.inc"
#undef MSCCLPP_PARAMS_OWNER
#undef MSCCLPP_PARAMS_DEF

using namespace mscclpp;

using EnvGuard = test::ScopedEnv;

TEST_CASE("defaults apply when a variable is unset or empty", "[params]") {
  EnvGuard unset("MSCCLPP_TIMEOUT_S", nullptr);
  CHECK(params::timeoutSeconds() == 0.0);  // live peers are waited for (issue 13)
  EnvGuard g("MSCCLPP_TIMEOUT_S", "");
  CHECK(params::timeoutSeconds() == 0.0);
  EnvGuard unsetChoice("MSCCLPP_TEST_CHOICE", nullptr);
  CHECK(params::testChoice() == "auto");
  CHECK(params::testInt() == 7);
  CHECK_FALSE(params::testBool());
}

TEST_CASE("typed parsing and precise errors", "[params]") {
  {
    EnvGuard g("MSCCLPP_TIMEOUT_S", "2.5");
    CHECK(params::timeoutSeconds() == 2.5);
  }
  {
    EnvGuard g("MSCCLPP_TIMEOUT_S", "abc");
    CHECK_THROWS_WITH(params::timeoutSeconds(), "MSCCLPP_TIMEOUT_S='abc' is not valid: expected a number (default 0)");
  }
  {
    EnvGuard g("MSCCLPP_TEST_CHOICE", "CPU");
    CHECK(params::testChoice() == "cpu");
  }
  {
    EnvGuard g("MSCCLPP_TEST_CHOICE", "gpu");
    try {
      params::testChoice();
      FAIL("no throw");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidArgument);
      CHECK(std::string(e.what()) ==
            "MSCCLPP_TEST_CHOICE='gpu' is not valid: expected one of auto|cuda|cpu (default auto)");
    }
  }
  {
    EnvGuard g("MSCCLPP_TEST_INT", "12x");
    CHECK_THROWS_WITH(params::testInt(), "MSCCLPP_TEST_INT='12x' is not valid: expected an integer (default 7)");
  }
  {
    EnvGuard g("MSCCLPP_TEST_BOOL", "On");
    CHECK(params::testBool());
  }
}

TEST_CASE("values are read once and kept until the cache is reset", "[params]") {
  EnvGuard g("MSCCLPP_TEST_INT", "11");
  CHECK(params::testInt() == 11);
  setenv("MSCCLPP_TEST_INT", "12", 1);
  CHECK(params::testInt() == 11);  // cached: the environment is not read again
  params::resetCache();
  CHECK(params::testInt() == 12);
  // A bad value is not cached: every read reports it, and a fixed environment is read again.
  setenv("MSCCLPP_TEST_INT", "many", 1);
  params::resetCache();
  CHECK_THROWS(params::testInt());
  CHECK_THROWS(params::testInt());
  setenv("MSCCLPP_TEST_INT", "13", 1);
  CHECK(params::testInt() == 13);
}

TEST_CASE("every registered parameter is declared once, documented, and its default parses", "[params]") {
  std::set<std::string> names;
  for (const auto& p : params::allParams()) {
    INFO(p.envName);
    // Ours, and the NCCL logging variables we honour (core/log_config.hpp).
    const std::string name = p.envName;
    CHECK((name.rfind("MSCCLPP_", 0) == 0 || name.rfind("NCCL_DEBUG", 0) == 0));
    CHECK(names.insert(p.envName).second);
    CHECK(std::string(p.doc).size() > 10);
    CHECK(std::string(p.owner).size() > 0);
    EnvGuard g(p.envName, p.defaultValue);
    if (p.defaultValue[0] != '\0') CHECK_NOTHROW(params::checkValue(p));
  }
  // The core's own and this test's: each layer registers its own, nothing names the layers above.
  CHECK(names.count("MSCCLPP_DEBUG") == 1);
  CHECK(names.count("NCCL_DEBUG") == 1);
  CHECK(names.count("MSCCLPP_TEST_CHOICE") == 1);
}

TEST_CASE("mscclpp-info --params lists every layer's parameters, the shim's too", "[params]") {
  const std::string out = test::runCommand(MSCCLPP_INFO_TOOL " --params");
  for (const char* name :
       {"MSCCLPP_DEBUG", "NCCL_DEBUG", "MSCCLPP_PLAN_DIR", "MSCCLPP_COMM_ID", "MSCCLPP_HOST_SHM", "MSCCLPP_HOSTID",
        "MSCCLPP_EXEC_CONTEXT_CACHE", "MSCCLPP_LIBRARY", "MSCCLPP_NCCL_LIB_PATH"}) {
    INFO(name);
    CHECK(out.find(std::string(name) + " ") != std::string::npos);
  }
  CHECK(out.find("declared by nccl_shim") != std::string::npos);
  CHECK(out.find("MSCCLPP_TEST_CHOICE") == std::string::npos);
}

TEST_CASE("deadlines expire and waitUntil names what it waited for", "[params]") {
  Deadline d(0.05);
  CHECK_FALSE(d.expired());
  CHECK(d.remainingMs() <= 50);
  try {
    waitUntil([] { return false; }, d, "rank 3 waiting for the root");
    FAIL("no timeout");
  } catch (const TimeoutError& e) {
    CHECK(std::string(e.what()) == "rank 3 waiting for the root did not complete within 0.05 s (MSCCLPP_TIMEOUT_S)");
  }
  CHECK(d.expired());
  Deadline never(0);
  CHECK_FALSE(never.expired());
  CHECK(never.remainingMs() == -1);
  int n = 0;
  waitUntil([&] { return ++n == 100; }, Deadline(5), "counter");
  CHECK(n == 100);
}
