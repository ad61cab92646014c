// The parameter table (core/params.def): typed parsing, defaults, caching, precise errors, and
// mscclpp-info --params listing every row.
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

using namespace mscclpp;

using EnvGuard = test::ScopedEnv;

TEST_CASE("defaults apply when a variable is unset or empty", "[params]") {
  EnvGuard unset("MSCCLPP_TIMEOUT_S", nullptr);
  CHECK(params::timeoutSeconds() == 0.0);  // live peers are waited for
  EnvGuard g("MSCCLPP_TIMEOUT_S", "");
  CHECK(params::timeoutSeconds() == 0.0);
  EnvGuard unsetChoice("MSCCLPP_BACKEND", nullptr);
  EnvGuard unsetInt("MSCCLPP_PLAN_MAX_BYTES", nullptr);
  EnvGuard unsetBool("MSCCLPP_VERIFY_PLANS", nullptr);
  CHECK(params::backend() == "auto");
  CHECK(params::planMaxBytes() == 134217728);
  CHECK_FALSE(params::verifyPlans());
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
    EnvGuard g("MSCCLPP_BACKEND", "CPU");
    CHECK(params::backend() == "cpu");
  }
  {
    EnvGuard g("MSCCLPP_BACKEND", "gpu");
    try {
      params::backend();
      FAIL("no throw");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidArgument);
      CHECK(std::string(e.what()) ==
            "MSCCLPP_BACKEND='gpu' is not valid: expected one of auto|cuda|cpu (default auto)");
    }
  }
  {
    EnvGuard g("MSCCLPP_PLAN_MAX_BYTES", "12x");
    CHECK_THROWS_WITH(params::planMaxBytes(),
                      "MSCCLPP_PLAN_MAX_BYTES='12x' is not valid: expected an integer (default 134217728)");
  }
  {
    EnvGuard g("MSCCLPP_VERIFY_PLANS", "On");
    CHECK(params::verifyPlans());
  }
}

TEST_CASE("values are read once and kept until the cache is reset", "[params]") {
  EnvGuard g("MSCCLPP_PLAN_MAX_BYTES", "11");
  CHECK(params::planMaxBytes() == 11);
  setenv("MSCCLPP_PLAN_MAX_BYTES", "12", 1);
  CHECK(params::planMaxBytes() == 11);  // cached: the environment is not read again
  params::resetCache();
  CHECK(params::planMaxBytes() == 12);
  // A bad value is not cached: every read reports it, and a fixed environment is read again.
  setenv("MSCCLPP_PLAN_MAX_BYTES", "many", 1);
  params::resetCache();
  CHECK_THROWS(params::planMaxBytes());
  CHECK_THROWS(params::planMaxBytes());
  setenv("MSCCLPP_PLAN_MAX_BYTES", "13", 1);
  CHECK(params::planMaxBytes() == 13);
}

TEST_CASE("each parameter is declared once, documented, default parses", "[params]") {
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
  // One table: a binary of the core alone lists every layer's variables, the shim's too.
  CHECK(names.count("MSCCLPP_DEBUG") == 1);
  CHECK(names.count("NCCL_DEBUG") == 1);
  CHECK(names.count("MSCCLPP_BACKEND") == 1);
  CHECK(names.count("MSCCLPP_NCCL_LIB_PATH") == 1);
  CHECK(names.count("MSCCLPP_NATIVE_ENABLE") == 1);
  CHECK(names.count("MSCCLPP_HCA_DEVICES") == 1);
  // Every row of the table is registered, once.
  constexpr size_t kRows = 0
#define MSCCLPP_PARAM_ROW(owner, type, typeName, parse, accessor, env, def, doc) +1
#include "core/params.def"
#undef MSCCLPP_PARAM_ROW
      ;
  CHECK(names.size() == kRows);
}

TEST_CASE("mscclpp-info --params lists every layer's parameters", "[params]") {
  const std::string out = test::runCommand(MSCCLPP_INFO_TOOL " --params");
  for (const char* name :
       {"MSCCLPP_DEBUG", "NCCL_DEBUG", "MSCCLPP_PLAN_DIR", "MSCCLPP_COMM_ID", "MSCCLPP_HOST_SHM", "MSCCLPP_HOSTID",
        "MSCCLPP_EXEC_CONTEXT_CACHE", "MSCCLPP_LIBRARY", "MSCCLPP_NCCL_LIB_PATH"}) {
    INFO(name);
    CHECK(out.find(std::string(name) + " ") != std::string::npos);
  }
  CHECK(out.find("declared by nccl_shim") != std::string::npos);
}

TEST_CASE("mscclpp-info --params never prints a secret", "[params]") {
  EnvGuard secret("MSCCLPP_COMM_SECRET", "do-not-print-this-secret");
  const std::string out = test::runCommand(MSCCLPP_INFO_TOOL " --params");
  CHECK(out.find("MSCCLPP_COMM_SECRET                      = (set; not shown)") != std::string::npos);
  CHECK(out.find("do-not-print") == std::string::npos);
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
