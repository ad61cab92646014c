#include <catch2/catch.hpp>
#include <cerrno>

#include "core/enforce.hpp"
#include "core/format.hpp"

using namespace mscclpp;

TEST_CASE("ENFORCE_EQ names both values and the context", "[core]") {
  int a = 3, b = 4;
  try {
    MSCCLPP_ENFORCE_EQ(a, b, ErrorCode::InvalidArgument, "rank %d", 7);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK(std::string(e.what()) == "rank 7: expected a == b (a=3 vs b=4)");
  }
  MSCCLPP_ENFORCE_EQ(a, 3, ErrorCode::InternalError, "");
}

TEST_CASE("ENFORCE_LE and ENFORCE_LT", "[core]") {
  CHECK_THROWS_WITH(([] { MSCCLPP_ENFORCE_LE(5, 4, ErrorCode::InvalidPlan, ""); })(), "expected 5 <= 4 (5=5 vs 4=4)");
  CHECK_NOTHROW(([] { MSCCLPP_ENFORCE_LT(1, 2, ErrorCode::InvalidPlan, ""); })());
}

TEST_CASE("SystemError carries errno and strerror", "[core]") {
  SystemError e("open /nonexistent", ENOENT);
  CHECK(e.code() == ErrorCode::SystemError);
  CHECK(e.errnoValue() == ENOENT);
  CHECK(std::string(e.what()) == "open /nonexistent: No such file or directory");
}

TEST_CASE("strFormat handles long output and formatBytes picks units", "[core]") {
  std::string big(2000, 'x');
  CHECK(strFormat("<%s>", big.c_str()).size() == 2002);
  CHECK(formatBytes(512) == "512 B");
  CHECK(formatBytes(3 * 1024) == "3 KiB");
  CHECK(formatBytes(3 * 1024 * 1024 / 2) == "1.5 MiB");
  CHECK(formatBytes(1ull << 30) == "1 GiB");
}

TEST_CASE("every error code has a name", "[core]") {
  CHECK(std::string(errorCodeName(ErrorCode::Timeout)) == "timeout");
  CHECK(std::string(errorCodeName(ErrorCode::InvalidPlan)) == "invalid plan");
}
