// Bad input never crashes or hangs the loader: truncated and corrupted text,
// huge files, paths that are not plan files, unreadable files, bad
// MSCCLPP_PLAN_MAX_BYTES values.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <random>

#include "../../support/scoped_env.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_loader.hpp"
#include "plan_test_util.hpp"

using namespace mscclpp::plan;

namespace {

std::string fileError(const std::string& path) {
  try {
    loadPlanFile(path);
  } catch (const mscclpp::Error& e) {
    return e.what();
  }
  return "";
}

using ScopedEnv = mscclpp::test::ScopedEnv;

}  // namespace

TEST_CASE("every truncation of a valid plan is a clear error", "[plan][bad-input]") {
  for (const auto& plan : {plantest::simplePlan(), plantest::packetPlan()}) {
    const std::string text = plan.dump();
    for (size_t n = 0; n < text.size(); ++n) {
      try {
        loadPlanJson(std::string_view(text.data(), n), "cut.json");
        FAIL("a prefix of " << n << " bytes loaded");
      } catch (const mscclpp::Error& e) {
        CHECK(e.code() == mscclpp::ErrorCode::InvalidPlan);
        CHECK(std::string(e.what()).rfind("cut.json: invalid JSON at line 1, column ", 0) == 0);
      }
    }
  }
}

TEST_CASE("corrupted bytes give an error or a valid plan, never a crash", "[plan][bad-input]") {
  const std::string text = plantest::packetPlan().dump();
  std::mt19937 rng(12345);  // deterministic
  const char replacements[] = {'0', '9', '-', '"', '{', '}', '[', ']', ',', ':', 'x', '\0', '\\', ' ', '1'};
  size_t errors = 0, loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bad = text;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = replacements[rng() % sizeof(replacements)];
    try {
      PlanPtr p = loadPlanJson(bad, "flip.json");
      CHECK(p->header.worldSize >= 1);
      ++loaded;
    } catch (const mscclpp::Error& e) {
      CHECK(e.code() == mscclpp::ErrorCode::InvalidPlan);
      CHECK(std::string(e.what()).rfind("flip.json: ", 0) == 0);
      ++errors;
    }
  }
  CHECK(errors > 2000);  // most corruptions break something
  CHECK(errors + loaded == 3000);
}

TEST_CASE("wrong top-level shapes", "[plan][bad-input]") {
  auto err = [](const std::string& text) {
    try {
      loadPlanJson(text, "w.json");
    } catch (const mscclpp::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(err("[]") == "w.json: the plan is an array, expected an object");
  CHECK(err("\"plan\"") == "w.json: the plan is a string, expected an object");
  CHECK(err("{}") == "w.json: missing required key \"gpus\"");
  CHECK(err(std::string("\x00\x01", 2)) ==
        "w.json: invalid JSON at line 1, column 1: invalid value (expected a number, string, object, array, true, "
        "false or null)");
  CHECK(err("{\"gpus\": [{\"threadblocks\": 5}], \"name\": \"n\"}") == "w.json: missing required key \"collective\"");
}

TEST_CASE("a file over MSCCLPP_PLAN_MAX_BYTES is refused unread", "[plan][bad-input]") {
  plantest::TempDir dir;
  const std::string huge = dir.file("huge.json");
  const int fd = ::open(huge.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 1ll << 30) == 0);  // sparse: 1 GiB that costs no disk
  ::close(fd);
  const auto start = std::chrono::steady_clock::now();
  CHECK(fileError(huge) == huge +
                               ": 1 GiB (1073741824 bytes) is larger than MSCCLPP_PLAN_MAX_BYTES=134217728 "
                               "(128 MiB); raise the limit to load it");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));  // it was not read

  const std::string small = dir.file("small.json");
  plantest::writeFile(small, plantest::simplePlan().dump());
  {
    ScopedEnv limit("MSCCLPP_PLAN_MAX_BYTES", "100");
    CHECK(fileError(small).find(": is larger than") == std::string::npos);
    CHECK(fileError(small).find("is larger than MSCCLPP_PLAN_MAX_BYTES=100 (100 B)") != std::string::npos);
  }
  {
    ScopedEnv limit("MSCCLPP_PLAN_MAX_BYTES", "0");
    CHECK(fileError(small) == "MSCCLPP_PLAN_MAX_BYTES=0 must be positive");
  }
  {
    ScopedEnv limit("MSCCLPP_PLAN_MAX_BYTES", "lots");
    CHECK(fileError(small) == "MSCCLPP_PLAN_MAX_BYTES='lots' is not valid: expected an integer (default 134217728)");
  }
  CHECK(fileError(small) == "");
}

TEST_CASE("paths that are not readable plan files", "[plan][bad-input]") {
  plantest::TempDir dir;
  CHECK(fileError(dir.path()) == dir.path() + ": is a directory, not a plan file");
  const std::string missing = dir.file("missing.json");
  CHECK(fileError(missing) == missing + ": cannot open plan file: No such file or directory");
  const std::string fifo = dir.file("fifo.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(fileError(fifo) == fifo + ": is a FIFO, not a plan file");  // and it did not block waiting for a writer
  CHECK(fileError("/dev/zero") == "/dev/zero: is a character device, not a plan file");
  const std::string empty = dir.file("empty.json");
  plantest::writeFile(empty, "");
  CHECK(fileError(empty) == empty + ": invalid JSON at line 1, column 1: no JSON value (the input is empty)");
  const std::string underFile = empty + "/x.json";
  CHECK(fileError(underFile) == underFile + ": cannot open plan file: Not a directory");
  const std::string locked = dir.file("locked.json");
  plantest::writeFile(locked, plantest::simplePlan().dump());
  REQUIRE(::chmod(locked.c_str(), 0) == 0);
  if (::geteuid() != 0) {
    CHECK(fileError(locked) == locked + ": cannot open plan file: Permission denied");
  } else {
    // root reads files whatever their mode; the other unreadable kinds above still apply
    WARN("running as root: the permission-denied case cannot be produced");
    CHECK(fileError(locked) == "");
  }
}

TEST_CASE("huge counts in a small file are refused, not allocated", "[plan][bad-input]") {
  plantest::json j = plantest::simplePlan();
  j["gpus"][0]["scratch_chunks"] = 4294967295ull;
  j["gpus"][1]["scratch_chunks"] = 4294967295ull;
  j["gpus"][0]["threadblocks"][0]["ops"][8]["num_threadblocks"] = 4000000000ull;
  CHECK(plantest::loadError(j) ==
        "t.json: gpus[0].threadblocks[0].ops[8].num_threadblocks=4000000000 out of range (rank 0 has 2 threadblocks)");
  plantest::json k = plantest::simplePlan();
  k["gpus"][0]["threadblocks"][1]["ops"][3]["iter_context"]["unit_size"] = 18446744073709551615ull;
  CHECK(plantest::loadError(k) == "");  // a 64-bit unit size is legal; the executor clips iterations
}
