// Test helpers shared by the runtime's unit suites (bootstrap, comm, transport,
// proxy, channel): run a function as N ranks on N threads and rethrow the first
// failure on the calling thread.
#ifndef MSCCLPP_TESTS_UNIT_RANK_THREADS_HPP_
#define MSCCLPP_TESTS_UNIT_RANK_THREADS_HPP_

#include <catch2/catch.hpp>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mscclpp/bootstrap.hpp"

namespace mscclpp::test {

// Catch2 2.x records assertions in unsynchronised global state, and the tests
// below assert on rank threads. Every assertion macro is redefined to take this
// lock, so assertions from several threads are recorded one at a time. Keep
// blocking calls out of assertion expressions in rank threads (evaluate them
// first): the lock is held while the expression runs.
inline std::recursive_mutex& catchMutex() {
  static std::recursive_mutex m;
  return m;
}

}  // namespace mscclpp::test

#define MSCCLPP_LOCKED_(stmt)                                                               \
  do {                                                                                      \
    std::lock_guard<std::recursive_mutex> mscclppCatchLock_(::mscclpp::test::catchMutex()); \
    stmt;                                                                                   \
  } while (0)
#undef REQUIRE
#undef REQUIRE_FALSE
#undef CHECK
#undef CHECK_FALSE
#undef CHECK_THROWS_WITH
#undef CHECK_THAT
#undef REQUIRE_THAT
#undef FAIL
#undef WARN
#define REQUIRE(...) MSCCLPP_LOCKED_(INTERNAL_CATCH_TEST("REQUIRE", Catch::ResultDisposition::Normal, __VA_ARGS__))
#define REQUIRE_FALSE(...)             \
  MSCCLPP_LOCKED_(INTERNAL_CATCH_TEST( \
      "REQUIRE_FALSE", Catch::ResultDisposition::Normal | Catch::ResultDisposition::FalseTest, __VA_ARGS__))
#define CHECK(...) \
  MSCCLPP_LOCKED_(INTERNAL_CATCH_TEST("CHECK", Catch::ResultDisposition::ContinueOnFailure, __VA_ARGS__))
#define CHECK_FALSE(...)               \
  MSCCLPP_LOCKED_(INTERNAL_CATCH_TEST( \
      "CHECK_FALSE", Catch::ResultDisposition::ContinueOnFailure | Catch::ResultDisposition::FalseTest, __VA_ARGS__))
#define CHECK_THROWS_WITH(expr, matcher)                                                                              \
  MSCCLPP_LOCKED_(INTERNAL_CATCH_THROWS_STR_MATCHES("CHECK_THROWS_WITH", Catch::ResultDisposition::ContinueOnFailure, \
                                                    matcher, expr))
#define CHECK_THAT(arg, matcher) \
  MSCCLPP_LOCKED_(INTERNAL_CHECK_THAT("CHECK_THAT", matcher, Catch::ResultDisposition::ContinueOnFailure, arg))
#define REQUIRE_THAT(arg, matcher) \
  MSCCLPP_LOCKED_(INTERNAL_CHECK_THAT("REQUIRE_THAT", matcher, Catch::ResultDisposition::Normal, arg))
#define FAIL(...)  \
  MSCCLPP_LOCKED_( \
      INTERNAL_CATCH_MSG("FAIL", Catch::ResultWas::ExplicitFailure, Catch::ResultDisposition::Normal, __VA_ARGS__))
#define WARN(msg)  \
  MSCCLPP_LOCKED_( \
      INTERNAL_CATCH_MSG("WARN", Catch::ResultWas::Warning, Catch::ResultDisposition::ContinueOnFailure, msg))

namespace mscclpp::test {

// The message of the Error f throws ("(no error)" when it does not throw).
inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

inline void runRanks(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  std::mutex mutex;
  std::exception_ptr first;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r]() {
      try {
        body(r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

// One TcpBootstrap per rank (as threads), initialized from one unique id.
inline std::vector<std::shared_ptr<Bootstrap>> makeTcpBootstraps(int n, double timeout = 0) {
  UniqueId id = TcpBootstrap::createUniqueId();
  std::vector<std::shared_ptr<Bootstrap>> out(static_cast<size_t>(n));
  runRanks(n, [&](int r) {
    auto b = std::make_shared<TcpBootstrap>(r, n);
    b->initialize(id, timeout);
    out[r] = b;
  });
  return out;
}

inline std::vector<std::shared_ptr<Bootstrap>> makeInProcessBootstraps(int n) {
  auto group = InProcessBootstrap::createGroup(n);
  std::vector<std::shared_ptr<Bootstrap>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_shared<InProcessBootstrap>(group, r));
  return out;
}

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_UNIT_RANK_THREADS_HPP_
