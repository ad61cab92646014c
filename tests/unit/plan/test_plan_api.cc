// The C API (mscclpp/plan_api.h) over the process-wide registry: status codes,
// messages, errBuf truncation, info, selection and the selector.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/params.hpp"
#include "mscclpp/plan_api.h"
#include "plan/registry.hpp"
#include "plan_test_util.hpp"

namespace {

// Points the process-wide registry at one directory for the test, and back to nothing afterwards.
class GlobalPlanDir {
 public:
  explicit GlobalPlanDir(const std::string& dir) {
    setenv("MSCCLPP_PLAN_DIR", dir.c_str(), 1);
    mscclpp::params::resetCache();
    mscclpp::plan::Registry::instance().rescan();
  }
  ~GlobalPlanDir() {
    setenv("MSCCLPP_PLAN_DIR", "/nonexistent-mscclpp-plan-dir", 1);
    mscclpp::params::resetCache();
    mscclpp::plan::Registry::instance().rescan();
    unsetenv("MSCCLPP_PLAN_DIR");
    mscclpp::params::resetCache();
  }
};

struct Chooser {
  int calls = 0;
  std::string wanted;
};
int chooseByName(const mscclppPlanInfo* candidates, int n, const mscclppPlanRequest*, void* userData) {
  auto* c = static_cast<Chooser*>(userData);
  ++c->calls;
  for (int i = 0; i < n; ++i)
    if (c->wanted == candidates[i].name) return i;
  return -2;
}

mscclppPlanRequest allreduce(uint64_t bytes) {
  mscclppPlanRequest r{};
  r.collective = "allreduce";
  r.worldSize = 2;
  r.nRanksPerNode = 2;
  r.messageBytes = bytes;
  r.inPlace = 1;
  r.dtype = 7;
  r.redOp = 0;
  r.root = -1;
  return r;
}

}  // namespace

TEST_CASE("C API: register, info, select, selector and unregister", "[plan][api]") {
  GlobalPlanDir dirs(plantest::planDataDir() + "/select");
  CHECK(mscclppPlanApiVersion() == 3);
  CHECK(mscclppPlanCount() == 3);
  mscclppPlanInfo info{};
  REQUIRE(mscclppPlanGetInfo(0, &info) == mscclppSuccess);
  CHECK(std::string(info.name) == "ag");  // files in name order
  CHECK(mscclppPlanGetInfo(3, &info) == mscclppInvalidArgument);
  CHECK(mscclppPlanGetInfo(-1, &info) == mscclppInvalidArgument);
  CHECK(mscclppPlanGetInfo(0, nullptr) == mscclppInvalidArgument);

  char err[512];
  const std::string text = plantest::minimalPlan("api_plan", "allreduce", 2, 2, 2, true, "sum").dump();
  const char* tags[] = {"api"};
  CHECK(mscclppPlanRegisterJson(text.data(), text.size(), "api.json", tags, 1, err, sizeof(err)) == mscclppSuccess);
  CHECK(std::string(err).empty());
  CHECK(mscclppPlanCount() == 4);
  REQUIRE(mscclppPlanGetInfo(0, &info) == mscclppSuccess);  // registrations come first
  CHECK(std::string(info.name) == "api_plan");
  CHECK(std::string(info.source) == "api.json");
  REQUIRE(info.nTags == 1);
  CHECK(std::string(info.tags[0]) == "api");
  CHECK(info.minMessageBytes == 0);
  CHECK(info.maxMessageBytes == UINT64_MAX);

  CHECK(mscclppPlanRegisterJson(text.data(), text.size(), "again.json", nullptr, 0, err, sizeof(err)) ==
        mscclppAlreadyExists);
  CHECK(std::string(err) == "again.json: a plan named 'api_plan' is already registered");

  // selection: the tagged plan only when the tag is asked for
  char name[64], reason[1024];
  mscclppPlanRequest r = allreduce(1024);
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == 1);
  CHECK(std::string(name) == "ar_small");
  r.tags = tags;
  r.nTags = 1;
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == 1);
  CHECK(std::string(name) == "api_plan");
  r = allreduce(1002);  // 250.5 floats: no whole count, no plan (any whole count runs padded)
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == 0);
  CHECK(std::string(name).empty());
  CHECK(std::string(reason).rfind("no plan for allreduce on 2 ranks (2 per node), 1002 B, in-place, float32, sum: ",
                                  0) == 0);
  r.collective = "allreduse";
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == mscclppInvalidArgument);
  CHECK(std::string(reason) ==
        "mscclppPlanSelect: collective 'allreduse' is not one of allreduce, allgather, reducescatter, "
        "alltoall, sendrecv, broadcast, reduce, gather, scatter, custom, test, alltoallv, allgatherv, "
        "reducescatterv");
  CHECK(mscclppPlanSelect(nullptr, name, sizeof(name), reason, sizeof(reason)) == mscclppInvalidArgument);
  CHECK(std::string(reason) == "mscclppPlanSelect: request is NULL");

  // a selector callback through the C API, its choice cached per request
  Chooser chooser;
  chooser.wanted = "ar_any";
  CHECK(mscclppPlanSetSelector(chooseByName, &chooser) == mscclppSuccess);
  r = allreduce(1024);
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == 1);
  CHECK(std::string(name) == "ar_any");
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == 1);
  CHECK(chooser.calls == 1);
  CHECK(mscclppPlanSetSelector(nullptr, nullptr) == mscclppSuccess);
  CHECK(mscclppPlanSelect(&r, name, sizeof(name), reason, sizeof(reason)) == 1);
  CHECK(std::string(name) == "ar_small");

  CHECK(mscclppPlanUnregister("api_plan", err, sizeof(err)) == mscclppSuccess);
  CHECK(mscclppPlanUnregister("api_plan", err, sizeof(err)) == mscclppNotFound);
  CHECK(std::string(err) == "no plan named 'api_plan' is registered");
  CHECK(mscclppPlanCount() == 3);
}

TEST_CASE("C API: bad plans, bad arguments and errBuf truncation", "[plan][api]") {
  GlobalPlanDir dirs(plantest::planDataDir() + "/select");
  char err[256];
  const std::string bad = plantest::planDataDir() + "/invalid/index_out_of_range.json";
  // the summary of this file is valid: registration succeeds; the op error shows when a rank loads it
  CHECK(mscclppPlanRegisterFile(bad.c_str(), nullptr, 0, err, sizeof(err)) == mscclppSuccess);
  CHECK(mscclppPlanUnregister("ar_bad", err, sizeof(err)) == mscclppSuccess);
  const std::string cut = plantest::planDataDir() + "/invalid/truncated.json";
  CHECK(mscclppPlanRegisterFile(cut.c_str(), nullptr, 0, err, sizeof(err)) == mscclppInvalidPlan);
  CHECK(std::string(err).rfind(cut + ": invalid JSON at line ", 0) == 0);
  // a file that cannot be read is the OS's failure, not the plan's
  CHECK(mscclppPlanRegisterFile("/nonexistent/p.json", nullptr, 0, err, sizeof(err)) == mscclppSystemError);
  CHECK(std::string(err) == "/nonexistent/p.json: cannot open plan file: No such file or directory");
  CHECK(mscclppPlanRegisterFile(nullptr, nullptr, 0, err, sizeof(err)) == mscclppInvalidArgument);
  CHECK(std::string(err) == "mscclppPlanRegisterFile: path is NULL");
  const std::string text = plantest::minimalPlan("t", "allreduce", 2, 2, 2, true).dump();
  CHECK(mscclppPlanRegisterJson(text.data(), text.size(), "t.json", nullptr, 1, err, sizeof(err)) ==
        mscclppInvalidArgument);
  CHECK(std::string(err) == "mscclppPlanRegisterJson: tags is NULL but nTags=1");
  CHECK(mscclppPlanRegisterJson(text.data(), text.size(), "t.json", nullptr, -1, err, sizeof(err)) ==
        mscclppInvalidArgument);
  CHECK(std::string(err) == "mscclppPlanRegisterJson: nTags=-1 is negative");
  const char* nullTag[] = {nullptr};
  CHECK(mscclppPlanRegisterJson(text.data(), text.size(), "t.json", nullTag, 1, err, sizeof(err)) ==
        mscclppInvalidArgument);
  CHECK(std::string(err) == "mscclppPlanRegisterJson: tags[0] is NULL");
  CHECK(mscclppPlanRegisterJson(nullptr, 0, "t.json", nullptr, 0, err, sizeof(err)) == mscclppInvalidArgument);
  CHECK(mscclppPlanUnregister(nullptr, err, sizeof(err)) == mscclppInvalidArgument);

  // the message is truncated to errLen - 1 bytes and always NUL-terminated
  char small[11];
  std::memset(small, 'x', sizeof(small));
  CHECK(mscclppPlanRegisterFile("/nonexistent/p.json", nullptr, 0, small, 10) == mscclppSystemError);
  CHECK(std::string(small) == "/nonexist");
  CHECK(small[10] == 'x');  // nothing written past errLen
  char one = 'x';
  CHECK(mscclppPlanRegisterFile("/nonexistent/p.json", nullptr, 0, &one, 1) == mscclppSystemError);
  CHECK(one == '\0');
  char untouched = 'x';
  CHECK(mscclppPlanRegisterFile("/nonexistent/p.json", nullptr, 0, &untouched, 0) == mscclppSystemError);
  CHECK(untouched == 'x');
  CHECK(mscclppPlanRegisterFile("/nonexistent/p.json", nullptr, 0, nullptr, 100) == mscclppSystemError);
  // a JSON string registered with a source name of NULL is "<memory>" in messages
  CHECK(mscclppPlanRegisterJson("{", 1, nullptr, nullptr, 0, err, sizeof(err)) == mscclppInvalidPlan);
  CHECK(std::string(err) == "<memory>: invalid JSON at line 1, column 2: unexpected end of input inside an object");
  CHECK(mscclppPlanCount() == 3);
}
