// Every C entry point of mscclpp/status.h, plan_api.h, algorithm_api.h and mscclpp_c.h,
// called with bad input. Each returns its documented mscclppStatus, puts the
// message in errBuf and mscclppGetLastError(), and lets no exception escape.
// The list is read from the headers, so a new entry point needs a case here.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "mscclpp/algorithm_api.h"
#include "mscclpp/mscclpp_c.h"
#include "mscclpp/plan_api.h"
#include "mscclpp/status.h"

namespace {

// Declared C functions of a header: "int name(" or "const char* name(" at the start of a line.
std::set<std::string> declaredFunctions(const std::string& header) {
  std::ifstream in(std::string(MSCCLPP_TEST_PUBLIC_HEADERS) + "/" + header);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = std::regex_replace(text.str(), std::regex(R"(/\*[\s\S]*?\*/)"), " ");  // comments out
  std::set<std::string> out;
  const std::regex declaration(R"((?:^|\n)(?:MSCCLPP_API\s+)?(?:int|const char\s*\*)\s*(mscclpp\w+)\s*\()");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), declaration); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

// What a bad call returned and reported.
struct Failure {
  int status;
  std::string errBuf;     // "" for functions without one
  std::string lastError;  // mscclppGetLastError() right after
};

// A bad call of one entry point (the lambda gets an errBuf to pass, where the function takes one).
using BadCall = std::function<int(char* errBuf, size_t errLen)>;

struct Case {
  BadCall call;
  int status;           // expected
  const char* message;  // expected to occur in the message
  bool hasErrBuf;
};

Failure run(const Case& c) {
  char err[512];
  std::memset(err, 'x', sizeof(err));
  err[sizeof(err) - 1] = '\0';
  Failure f;
  f.status = c.call(err, sizeof(err));
  f.errBuf = c.hasErrBuf ? std::string(err) : std::string();
  f.lastError = mscclppGetLastError();
  return f;
}

mscclppPlanRequest badRequest() {
  mscclppPlanRequest r{};
  r.collective = "allreduse";
  r.worldSize = 2;
  r.nRanksPerNode = 2;
  r.messageBytes = 1024;
  r.redOp = 0;
  r.root = -1;
  return r;
}

// One bad call per entry point that can fail. Functions that cannot fail
// (versions, status names, the last error itself) are checked in their own test
// cases below and listed in kCannotFail.
std::map<std::string, Case> badCalls() {
  static mscclppPlanRequest request;  // outlives the calls
  request = badRequest();
  std::map<std::string, Case> cases;
  // plan_api.h
  cases["mscclppPlanRegisterFile"] = {
      [](char* e, size_t n) { return mscclppPlanRegisterFile(nullptr, nullptr, 0, e, n); }, mscclppInvalidArgument,
      "mscclppPlanRegisterFile: path is NULL", true};
  cases["mscclppPlanRegisterJson"] = {
      [](char* e, size_t n) { return mscclppPlanRegisterJson("{", 1, "bad.json", nullptr, 0, e, n); },
      mscclppInvalidPlan, "bad.json: invalid JSON", true};
  cases["mscclppPlanUnregister"] = {[](char* e, size_t n) { return mscclppPlanUnregister("no-such-plan", e, n); },
                                    mscclppNotFound, "no plan named 'no-such-plan' is registered", true};
  cases["mscclppPlanGetInfo"] = {[](char*, size_t) { return mscclppPlanGetInfo(-1, nullptr); }, mscclppInvalidArgument,
                                 "mscclppPlanGetInfo: info is NULL", false};
  cases["mscclppPlanSelect"] = {[](char* e, size_t n) {
                                  char name[32];
                                  return mscclppPlanSelect(&request, name, sizeof(name), e, n);
                                },
                                mscclppInvalidArgument, "mscclppPlanSelect: collective 'allreduse' is not one of",
                                true};
  cases["mscclppPlanVerify"] = {[](char* e, size_t n) {
                                  char report[64];
                                  return mscclppPlanVerify("bad.json", "{", 1, report, sizeof(report), e, n);
                                },
                                mscclppInvalidPlan, "bad.json: invalid JSON", true};
  // algorithm_api.h
  cases["mscclppAlgorithmRegister"] = {[](char* e, size_t n) {
                                         mscclppAlgorithmDesc d{};
                                         d.version = MSCCLPP_ALGORITHM_API_VERSION;
                                         d.name = "bad";
                                         d.collective = "gather";
                                         return mscclppAlgorithmRegister(&d, e, n);
                                       },
                                       mscclppInvalidArgument,
                                       "native algorithm bad: collective 'gather' is not one of", true};
  cases["mscclppAlgorithmUnregister"] = {
      [](char* e, size_t n) { return mscclppAlgorithmUnregister("allreduce_packets", e, n); }, mscclppInvalidArgument,
      "'allreduce_packets' is built in", true};
  cases["mscclppAlgorithmGetInfo"] = {[](char*, size_t) { return mscclppAlgorithmGetInfo(0, nullptr); },
                                      mscclppInvalidArgument, "mscclppAlgorithmGetInfo: info is NULL", false};
  cases["mscclppAlgorithmSelect"] = {
      [](char* e, size_t n) {
        char name[32], kind[16];
        return mscclppAlgorithmSelect(&request, name, sizeof(name), kind, sizeof(kind), e, n);
      },
      mscclppInvalidArgument, "mscclppAlgorithmSelect: collective 'allreduse' is not one of", true};
  // mscclpp_c.h
  cases["mscclppUniqueIdCreate"] = {[](char* e, size_t n) {
                                      uint8_t id[MSCCLPP_C_UNIQUE_ID_BYTES];
                                      return mscclppUniqueIdCreate(id, 5, e, n);
                                    },
                                    mscclppInvalidArgument, "idLen=5, a unique id has 128 bytes", true};
  cases["mscclppCommInitUniqueId"] = {[](char* e, size_t n) {
                                        uint8_t id[MSCCLPP_C_UNIQUE_ID_BYTES] = {};
                                        mscclppComm_t comm;
                                        return mscclppCommInitUniqueId(id, sizeof(id), 3, 2, MSCCLPP_C_DEVICE_HOST, 1.0,
                                                                       &comm, e, n);
                                      },
                                      mscclppInvalidArgument, "rank 3 is not in 0..1 (nRanks=2)", true};
  cases["mscclppCommInitAddress"] = {[](char* e, size_t n) {
                                       mscclppComm_t comm;
                                       return mscclppCommInitAddress("a:b:c:d", 0, 1, MSCCLPP_C_DEVICE_HOST, 1.0, &comm,
                                                                     e, n);
                                     },
                                     mscclppInvalidArgument, "bootstrap address 'a:b:c:d' has 3 ':'", true};
  cases["mscclppCommGetInfo"] = {[](char* e, size_t n) {
                                   mscclppCommInfo info;
                                   return mscclppCommGetInfo(nullptr, &info, e, n);
                                 },
                                 mscclppInvalidArgument, "mscclppCommGetInfo: the communicator handle is NULL", true};
  cases["mscclppCommBarrier"] = {[](char* e, size_t n) { return mscclppCommBarrier(nullptr, e, n); },
                                 mscclppInvalidArgument, "mscclppCommBarrier: the communicator handle is NULL", true};
  cases["mscclppExecutorCreate"] = {[](char* e, size_t n) {
                                      mscclppExecutor_t ex;
                                      return mscclppExecutorCreate(nullptr, &ex, e, n);
                                    },
                                    mscclppInvalidArgument, "mscclppExecutorCreate: the communicator handle is NULL",
                                    true};
  cases["mscclppExecutorBackend"] = {[](char* e, size_t n) { return mscclppExecutorBackend(nullptr, e, n); },
                                     mscclppInvalidArgument, "mscclppExecutorBackend: the executor handle is NULL",
                                     true};
  cases["mscclppPlanSelectHandle"] = {[](char* e, size_t n) {
                                        char name[32];
                                        return mscclppPlanSelectHandle(&request, nullptr, name, sizeof(name), e, n);
                                      },
                                      mscclppInvalidArgument,
                                      "mscclppPlanSelectHandle: the output pointer plan is NULL", true};
  cases["mscclppExecute"] = {[](char* e, size_t n) {
                               return mscclppExecute(nullptr, 0, nullptr, nullptr, 0, 0, 7, nullptr, nullptr, 0, e, n);
                             },
                             mscclppInvalidArgument, "mscclppExecute: the executor handle is NULL", true};
  cases["mscclppExecuteSplits"] = {[](char* e, size_t n) {
                                     return mscclppExecuteSplits(nullptr, 0, nullptr, nullptr, 0, 0, 7, nullptr,
                                                                 nullptr, 0, nullptr, 0, e, n);
                                   },
                                   mscclppInvalidArgument, "mscclppExecuteSplits: the executor handle is NULL", true};
  cases["mscclppExecuteWithScalar"] = {
      [](char* e, size_t n) {
        return mscclppExecuteWithScalar(nullptr, 0, nullptr, nullptr, 0, 0, 7, nullptr, nullptr, 5, nullptr, e, n);
      },
      mscclppInvalidArgument, "mscclppExecuteWithScalar: the executor handle is NULL", true};
  cases["mscclppExecuteSplitsWithScalar"] = {
      [](char* e, size_t n) {
        return mscclppExecuteSplitsWithScalar(nullptr, 0, nullptr, nullptr, 0, 0, 7, nullptr, nullptr, 0, nullptr, 5,
                                              nullptr, e, n);
      },
      mscclppInvalidArgument, "mscclppExecuteSplitsWithScalar: the executor handle is NULL", true};
  return cases;
}

// Entry points with no bad input: each gets its own check below.
const std::set<std::string> kCannotFail = {
    "mscclppStatusName",        "mscclppGetLastError",        "mscclppPlanApiVersion",       "mscclppCApiVersion",
    "mscclppPlanSetSelector",   "mscclppPlanCount",           "mscclppCommDestroy",          "mscclppExecutorDestroy",
    "mscclppPlanHandleDestroy", "mscclppAlgorithmApiVersion", "mscclppAlgorithmSetSelector", "mscclppAlgorithmCount",
};

}  // namespace

TEST_CASE("every C entry point of the headers has a bad-input case here", "[capi]") {
  std::set<std::string> declared;
  for (const char* header : {"status.h", "plan_api.h", "algorithm_api.h", "mscclpp_c.h"}) {
    for (const std::string& f : declaredFunctions(header)) declared.insert(f);
  }
  CHECK(declared.size() == 34);  // 2 + 9 + 7 + 16: the parse found them all
  std::set<std::string> covered = kCannotFail;
  for (const auto& [name, c] : badCalls()) covered.insert(name);
  for (const std::string& f : declared) {
    INFO(f);
    CHECK(covered.count(f) == 1);  // a new entry point needs a case in badCalls() or kCannotFail
  }
  for (const std::string& f : covered) {
    INFO(f);
    CHECK(declared.count(f) == 1);  // a case for a function the headers do not declare
  }
}

TEST_CASE("a failing C call returns its status, errBuf and last error", "[capi]") {
  for (const auto& [name, c] : badCalls()) {
    INFO(name);
    const Failure f = run(c);
    CHECK(f.status == c.status);
    CHECK(std::string(mscclppStatusName(f.status)) == mscclppStatusName(c.status));
    CHECK(f.lastError.find(c.message) != std::string::npos);
    if (c.hasErrBuf) CHECK(f.errBuf == f.lastError);
  }
}

TEST_CASE("a succeeding call clears errBuf, keeps the last error", "[capi]") {
  char err[64];
  REQUIRE(mscclppExecutorBackend(nullptr, err, sizeof(err)) == mscclppInvalidArgument);
  CHECK(std::string(mscclppGetLastError()) == "mscclppExecutorBackend: the executor handle is NULL");
  std::strcpy(err, "stale");
  uint8_t id[MSCCLPP_C_UNIQUE_ID_BYTES];
  CHECK(mscclppUniqueIdCreate(id, sizeof(id), err, sizeof(err)) == mscclppSuccess);
  CHECK(std::string(err).empty());
  CHECK(std::string(mscclppGetLastError()) == "mscclppExecutorBackend: the executor handle is NULL");
}

TEST_CASE("the last error is per thread", "[capi]") {
  REQUIRE(mscclppPlanGetInfo(0, nullptr) == mscclppInvalidArgument);
  std::string other = "unset";
  std::thread([&] { other = mscclppGetLastError(); }).join();
  CHECK(other.empty());
  CHECK(std::string(mscclppGetLastError()) == "mscclppPlanGetInfo: info is NULL");
}

TEST_CASE("entry points without bad input", "[capi]") {
  CHECK(mscclppPlanApiVersion() == MSCCLPP_PLAN_API_VERSION);
  CHECK(mscclppCApiVersion() == MSCCLPP_C_API_VERSION);
  CHECK(mscclppPlanCount() >= 0);
  CHECK(mscclppPlanSetSelector(nullptr, nullptr) == mscclppSuccess);
  CHECK(mscclppAlgorithmApiVersion() == MSCCLPP_ALGORITHM_API_VERSION);
  CHECK(mscclppAlgorithmCount() >= 8);  // the built-in ones
  CHECK(mscclppAlgorithmSetSelector(nullptr, nullptr) == mscclppSuccess);
  // Destroying NULL is accepted, as free() does.
  CHECK(mscclppCommDestroy(nullptr) == mscclppSuccess);
  CHECK(mscclppExecutorDestroy(nullptr) == mscclppSuccess);
  CHECK(mscclppPlanHandleDestroy(nullptr) == mscclppSuccess);
  CHECK(std::string(mscclppStatusName(mscclppSuccess)) == "mscclppSuccess");
  CHECK(std::string(mscclppStatusName(mscclppAlreadyExists)) == "mscclppAlreadyExists");
  CHECK(std::string(mscclppStatusName(7)) == "unknown status");
  CHECK(std::string(mscclppStatusName(-13)) == "unknown status");
  CHECK(mscclppGetLastError() != nullptr);
}

TEST_CASE("version 2's plan status names are aliases of mscclppStatus", "[capi]") {
  STATIC_REQUIRE(mscclppPlanOk == mscclppSuccess);
  STATIC_REQUIRE(mscclppPlanInvalid == mscclppInvalidPlan);
  STATIC_REQUIRE(mscclppPlanNotFound == mscclppNotFound);
  STATIC_REQUIRE(mscclppPlanDuplicate == mscclppAlreadyExists);
  STATIC_REQUIRE(mscclppPlanBadArgument == mscclppInvalidArgument);
  STATIC_REQUIRE(mscclppPlanInternalError == mscclppInternalError);
}

TEST_CASE("C API on one rank: queries, then bad execute arguments", "[capi]") {
  char err[512];
  uint8_t id[MSCCLPP_C_UNIQUE_ID_BYTES];
  REQUIRE(mscclppUniqueIdCreate(id, sizeof(id), err, sizeof(err)) == mscclppSuccess);
  mscclppComm_t comm = nullptr;
  REQUIRE(mscclppCommInitUniqueId(id, sizeof(id), 0, 1, MSCCLPP_C_DEVICE_HOST, 10.0, &comm, err, sizeof(err)) ==
          mscclppSuccess);
  mscclppCommInfo info{};
  CHECK(mscclppCommGetInfo(comm, &info, err, sizeof(err)) == mscclppSuccess);
  CHECK((info.rank == 0 && info.nRanks == 1 && info.device == MSCCLPP_C_DEVICE_HOST));
  CHECK(mscclppCommGetInfo(comm, nullptr, err, sizeof(err)) == mscclppInvalidArgument);
  CHECK(std::string(err) == "mscclppCommGetInfo: info is NULL");
  CHECK(mscclppCommBarrier(comm, err, sizeof(err)) == mscclppSuccess);
  mscclppExecutor_t executor = nullptr;
  REQUIRE(mscclppExecutorCreate(comm, &executor, err, sizeof(err)) == mscclppSuccess);
  char backend[16];
  CHECK(mscclppExecutorBackend(executor, backend, sizeof(backend)) == mscclppSuccess);
  CHECK(std::string(backend) == "cpu");
  CHECK(mscclppExecute(executor, 0, nullptr, nullptr, 0, 0, 7, nullptr, nullptr, 0, err, sizeof(err)) ==
        mscclppInvalidArgument);
  CHECK(std::string(err).find("the plan handle is NULL") != std::string::npos);
  CHECK(mscclppExecutorDestroy(executor) == mscclppSuccess);
  CHECK(mscclppCommDestroy(comm) == mscclppSuccess);
}
