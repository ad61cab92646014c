// The one guard of the C APIs (runtime/capi/guard.hpp): every kind of exception
// becomes a status, a message in errBuf and the thread's last error; nothing
// escapes.
#include <catch2/catch.hpp>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <string>

#include "capi/guard.hpp"
#include "mscclpp/status.h"

using mscclpp::Error;
using mscclpp::ErrorCode;
using mscclpp::capi::guarded;

namespace {

template <class Body>
std::string failWith(Body&& body, int expectedStatus) {
  char err[128];
  std::strcpy(err, "stale");
  const int status = guarded(err, sizeof(err), body);
  CHECK(status == expectedStatus);
  CHECK(std::string(err) == mscclppGetLastError());
  return err;
}

}  // namespace

TEST_CASE("guard: each exception kind maps to its status and message", "[capi][guard]") {
  CHECK(failWith([]() -> int { throw Error(ErrorCode::Timeout, "waited 3 s for rank 1"); }, mscclppTimeout) ==
        "waited 3 s for rank 1");
  CHECK(failWith([]() -> int { throw std::bad_alloc(); }, mscclppSystemError) == "out of host memory");
  CHECK(failWith([]() -> int { throw std::out_of_range("vector::at"); }, mscclppInternalError) == "vector::at");
  CHECK(failWith([]() -> int { throw 42; }, mscclppInternalError) ==
        "unknown exception (not derived from std::exception)");
  CHECK(failWith([]() -> int { throw mscclpp::capi::StatusError(mscclppAlreadyExists, "twice"); },
                 mscclppAlreadyExists) == "twice");
}

TEST_CASE("guard: the body's value passes; a success clears errBuf", "[capi][guard]") {
  char err[16];
  std::strcpy(err, "stale");
  CHECK(guarded(err, sizeof(err), [] { return 7; }) == 7);  // a count
  CHECK(std::string(err).empty());
  CHECK(guarded(nullptr, 0, [] { return static_cast<int>(mscclppSuccess); }) == mscclppSuccess);
  auto throwing = []() -> int { throw 1; };
  STATIC_REQUIRE(noexcept(guarded(nullptr, 0, throwing)));
}

TEST_CASE("guard: errBuf truncates a long message, the last error not", "[capi][guard]") {
  const std::string longMessage(5000, 'm');
  char err[11];
  std::memset(err, 'x', sizeof(err));
  CHECK(guarded(err, 10, [&]() -> int { throw Error(ErrorCode::InvalidPlan, longMessage); }) == mscclppInvalidPlan);
  CHECK(std::string(err) == "mmmmmmmmm");
  CHECK(err[10] == 'x');
  CHECK(std::string(mscclppGetLastError()) == longMessage);
}

TEST_CASE("guard: each ErrorCode has the status status.h numbers", "[capi][guard]") {
  std::set<int> seen;
  for (int c = static_cast<int>(ErrorCode::InvalidUsage); c <= static_cast<int>(ErrorCode::Aborted); ++c) {
    const mscclppStatus s = mscclpp::capi::statusOf(static_cast<ErrorCode>(c));
    CHECK(s == -(c + 1));  // the enum orders match: InvalidUsage -1 ... Aborted -10
    CHECK(std::string(mscclppStatusName(s)) != "unknown status");
    seen.insert(s);
  }
  CHECK(seen.size() == 10);
}
