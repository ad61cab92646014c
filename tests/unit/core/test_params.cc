#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <string>

#include "core/deadline.hpp"
#include "core/params.hpp"
#include "mscclpp/errors.hpp"

using namespace mscclpp;

namespace {
struct EnvGuard {
  std::string name;
  explicit EnvGuard(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~EnvGuard() { unsetenv(name.c_str()); }
};
}  // namespace

TEST_CASE("defaults apply when a variable is unset or empty", "[params]") {
  unsetenv("MSCCLPP_TIMEOUT_S");
  CHECK(params::timeoutSeconds() == 120.0);
  EnvGuard g("MSCCLPP_TIMEOUT_S", "");
  CHECK(params::timeoutSeconds() == 120.0);
  unsetenv("MSCCLPP_BACKEND");
  CHECK(params::backend() == "auto");
}

TEST_CASE("typed parsing and precise errors", "[params]") {
  {
    EnvGuard g("MSCCLPP_TIMEOUT_S", "2.5");
    CHECK(params::timeoutSeconds() == 2.5);
  }
  {
    EnvGuard g("MSCCLPP_TIMEOUT_S", "abc");
    CHECK_THROWS_WITH(params::timeoutSeconds(),
                      "MSCCLPP_TIMEOUT_S='abc' is not valid: expected a number (default 120)");
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
      CHECK(std::string(e.what()) == "MSCCLPP_BACKEND='gpu' is not valid: expected one of auto|cuda|cpu (default auto)");
    }
  }
}

TEST_CASE("every parameter is declared once, documented, and its default parses", "[params]") {
  std::set<std::string> names;
  for (const auto& p : params::allParams()) {
    INFO(p.envName);
    // Ours, and the NCCL logging variables we honour (core/log_config.hpp).
    const std::string name = p.envName;
    CHECK((name.rfind("MSCCLPP_", 0) == 0 || name.rfind("NCCL_DEBUG", 0) == 0));
    CHECK(names.insert(p.envName).second);
    CHECK(std::string(p.doc).size() > 10);
    setenv(p.envName, p.defaultValue, 1);
    if (p.defaultValue[0] != '\0') CHECK_NOTHROW(params::checkValue(p));
    unsetenv(p.envName);
  }
  CHECK(names.count("MSCCLPP_DEBUG") == 1);
  CHECK(names.count("NCCL_DEBUG") == 1);
  CHECK(names.count("MSCCLPP_PLAN_DIR") == 1);
  CHECK(names.count("MSCCLPP_NCCL_LIB_PATH") == 1);
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
