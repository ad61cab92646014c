// The C ABI without a fallback in play: version, error strings and last error,
// NCCL's argument checks and result codes. Where the real libnccl.so.2 can
// answer without a GPU, the shim's result code and message are compared with
// the real library's own.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "shim_test_util.hpp"

using shimtest::lastError;
using shimtest::soloComm;

namespace {

// The real NCCL loaded on its own (RTLD_DEEPBIND: its internal calls stay
// inside it), or nullptr. Not in sanitized builds: there the comparison is
// skipped (its internal calls would reach the shim).
void* realNccl() {
  static void* h = SHIMTEST_SANITIZED ? nullptr : dlopen(REAL_NCCL_PATH, RTLD_LAZY | RTLD_LOCAL | RTLD_DEEPBIND);
  return h;
}

template <class F>
F realFn(const char* name) {
  return reinterpret_cast<F>(dlsym(realNccl(), name));
}

std::string realLastError() { return realFn<const char* (*)(ncclComm_t)>("ncclGetLastError")(nullptr); }

}  // namespace

TEST_CASE("ncclGetVersion reports the shim's NCCL headers", "[basics]") {
  int v = 0;
  REQUIRE(ncclGetVersion(&v) == ncclSuccess);
  CHECK(v == 22809);
  CHECK(v == NCCL_VERSION_CODE);
  CHECK(ncclGetVersion(nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "GetVersion : version argument is NULL");
}

TEST_CASE("ncclGetErrorString is worded like NCCL's", "[basics]") {
  CHECK(std::string(ncclGetErrorString(ncclSuccess)) == "no error");
  CHECK(std::string(ncclGetErrorString(ncclInvalidUsage)) == "invalid usage (run with NCCL_DEBUG=WARN for details)");
  CHECK(std::string(ncclGetErrorString(static_cast<ncclResult_t>(42))) == "unknown result code");
  if (realNccl() == nullptr) {
    WARN("no real libnccl.so.2 at " << REAL_NCCL_PATH << ": compared with NCCL's wording from its sources only");
    return;
  }
  auto real = realFn<const char* (*)(ncclResult_t)>("ncclGetErrorString");
  for (int r = 0; r <= 9; ++r) {
    INFO("result " << r);
    CHECK(std::string(ncclGetErrorString(static_cast<ncclResult_t>(r))) == real(static_cast<ncclResult_t>(r)));
  }
}

TEST_CASE("GPU-free mistakes get the real NCCL's result and message", "[basics]") {
  if (realNccl() == nullptr) {
    WARN("no real libnccl.so.2 at " << REAL_NCCL_PATH << ": skipping the side-by-side comparison");
    return;
  }
  struct Case {
    const char* what;
    std::function<ncclResult_t()> ours;
    std::function<ncclResult_t()> real;
  };
  using AllReduceFn =
      ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  using CountFn = ncclResult_t (*)(ncclComm_t, int*);
  using SendFn = ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  using CommFn = ncclResult_t (*)(ncclComm_t);
  int out;
  ncclResult_t async;
  std::vector<Case> cases = {
      {"AllReduce with a NULL comm", [] { return ncclAllReduce(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, 0); },
       [] { return realFn<AllReduceFn>("ncclAllReduce")(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, 0); }},
      {"ReduceScatter with a NULL comm",
       [] { return ncclReduceScatter(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, 0); },
       [] { return realFn<AllReduceFn>("ncclReduceScatter")(nullptr, nullptr, 1, ncclFloat, ncclSum, nullptr, 0); }},
      {"Send with a NULL comm", [] { return ncclSend(nullptr, 1, ncclFloat, 0, nullptr, 0); },
       [] { return realFn<SendFn>("ncclSend")(nullptr, 1, ncclFloat, 0, nullptr, 0); }},
      {"CommCount with a NULL comm", [&] { return ncclCommCount(nullptr, &out); },
       [&] { return realFn<CountFn>("ncclCommCount")(nullptr, &out); }},
      {"CommUserRank with a NULL comm", [&] { return ncclCommUserRank(nullptr, &out); },
       [&] { return realFn<CountFn>("ncclCommUserRank")(nullptr, &out); }},
      {"CommCuDevice with a NULL comm", [&] { return ncclCommCuDevice(nullptr, &out); },
       [&] { return realFn<CountFn>("ncclCommCuDevice")(nullptr, &out); }},
      {"GetAsyncError with a NULL comm", [&] { return ncclCommGetAsyncError(nullptr, &async); },
       [&] { return realFn<ncclResult_t (*)(ncclComm_t, ncclResult_t*)>("ncclCommGetAsyncError")(nullptr, &async); }},
      {"GroupEnd outside a group", [] { return ncclGroupEnd(); },
       [] { return realFn<ncclResult_t (*)()>("ncclGroupEnd")(); }},
      {"RedOpDestroy of a builtin", [] { return ncclRedOpDestroy(ncclProd, nullptr); },
       [] { return realFn<ncclResult_t (*)(ncclRedOp_t, ncclComm_t)>("ncclRedOpDestroy")(ncclProd, nullptr); }},
      {"RedOpDestroy with a NULL comm", [] { return ncclRedOpDestroy(static_cast<ncclRedOp_t>(7), nullptr); },
       [] {
         return realFn<ncclResult_t (*)(ncclRedOp_t, ncclComm_t)>("ncclRedOpDestroy")(static_cast<ncclRedOp_t>(7),
                                                                                      nullptr);
       }},
      {"GetUniqueId(NULL)", [] { return ncclGetUniqueId(nullptr); },
       [] { return realFn<ncclResult_t (*)(ncclUniqueId*)>("ncclGetUniqueId")(nullptr); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    ncclResult_t ours = c.ours();
    std::string ourMsg = lastError();
    ncclResult_t real = c.real();
    std::string realMsg = realLastError();
    CHECK(ours == real);
    CHECK(ourMsg == realMsg);
  }
  // NULL is accepted by the teardown calls.
  for (const char* name : {"ncclCommDestroy", "ncclCommAbort", "ncclCommFinalize"}) {
    INFO(name);
    CHECK(realFn<CommFn>(name)(nullptr) == ncclSuccess);
  }
  CHECK(ncclCommDestroy(nullptr) == ncclSuccess);
  CHECK(ncclCommAbort(nullptr) == ncclSuccess);
  CHECK(ncclCommFinalize(nullptr) == ncclSuccess);
  CHECK(ncclCommRevoke(nullptr, 0) == ncclSuccess);
}

TEST_CASE("ncclGetLastError holds the last error, process-wide", "[basics]") {
  CHECK(ncclAllGather(nullptr, nullptr, 4, ncclInt8, nullptr, 0) == ncclInvalidArgument);
  CHECK(lastError() == "AllGather : comm argument is NULL");
  // Another thread sees the same text (NCCL's last error is process-wide).
  std::string seen;
  std::thread t([&] { seen = ncclGetLastError(nullptr); });
  t.join();
  CHECK(seen == "AllGather : comm argument is NULL");
}

TEST_CASE("a pointer that is not a live communicator is rejected", "[basics]") {
  std::vector<uint64_t> garbage(64, 0x1234);
  auto bogus = reinterpret_cast<ncclComm_t>(garbage.data());
  int n = 0;
  CHECK(ncclCommCount(bogus, &n) == ncclInvalidArgument);
  CHECK(lastError() ==
        "CommCount : comm " + shimtest::ptr(bogus) + " is not a valid communicator (destroyed or corrupted)");
  CHECK(ncclAllReduce(garbage.data(), garbage.data(), 1, ncclFloat, ncclSum, bogus, 0) == ncclInvalidArgument);
}

TEST_CASE("init argument checks", "[basics]") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = reinterpret_cast<ncclComm_t>(0x1);
  CHECK(ncclCommInitRank(nullptr, 1, id, 0) == ncclInvalidArgument);
  CHECK(lastError() == "CommInitRank : newcomm argument is NULL");
  CHECK(ncclCommInitRank(&comm, 4, id, 4) == ncclInvalidArgument);
  CHECK(lastError() == "Invalid rank requested : 4/4");
  CHECK(comm == nullptr);
  CHECK(ncclCommInitRank(&comm, 0, id, 0) == ncclInvalidArgument);
  CHECK(ncclCommInitRank(&comm, 2, id, -1) == ncclInvalidArgument);
  CHECK(lastError() == "Invalid rank requested : -1/2");

  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.magic = 0xbad;
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg) == ncclInvalidArgument);
  CHECK(lastError().find("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER") == 0);
  cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 5;
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &cfg) == ncclInvalidArgument);
  CHECK(lastError() == "Invalid config blocking attribute value 5");

  CHECK(ncclCommInitRankScalable(&comm, 2, 0, 0, &id, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "improper usage of ncclCommInitRank: nId = 0, nranks=2");
  CHECK(ncclCommInitRankScalable(&comm, 2, 0, 1, nullptr, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "CommInitRankScalable : commId argument is NULL");
  CHECK(ncclCommInitAll(nullptr, 1, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "CommInitAll : comms argument is NULL");
  CHECK(ncclCommInitAll(&comm, -1, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Invalid device count requested : -1");
}

TEST_CASE("NULL config and a config from an older NCCL are accepted", "[basics]") {
  ncclComm_t a = soloComm(nullptr);
  struct OldConfig {  // what a caller built against NCCL 2.17 allocates
    size_t size;
    unsigned magic, version;
    int blocking, cgaClusterSize, minCTAs, maxCTAs;
    const char* netName;
  } old = {sizeof(OldConfig),     0xcafebeef, 21701, 1, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,
           NCCL_CONFIG_UNDEF_INT, nullptr};
  ncclComm_t b = soloComm(reinterpret_cast<ncclConfig_t*>(&old));
  CHECK(ncclCommDestroy(a) == ncclSuccess);
  CHECK(ncclCommDestroy(b) == ncclSuccess);
}

TEST_CASE("queries on a one-rank communicator", "[basics]") {
  ncclComm_t comm = soloComm();
  int n = -1, r = -1, dev = 99;
  CHECK(ncclCommCount(comm, &n) == ncclSuccess);
  CHECK(n == 1);
  CHECK(ncclCommUserRank(comm, &r) == ncclSuccess);
  CHECK(r == 0);
  CHECK(ncclCommCuDevice(comm, &dev) == ncclSuccess);
  CHECK(dev == -1);  // built without CUDA / no device: the CPU backend has no device number
  CHECK(ncclCommCount(comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "CommCount : count argument is NULL");
  ncclResult_t async = ncclInternalError;
  CHECK(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
  CHECK(async == ncclSuccess);
  CHECK(ncclCommGetAsyncError(comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "ncclGetAsyncError : asyncError argument is NULL");
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("collective argument checks: NCCL's order, codes and words", "[basics]") {
  ncclComm_t comm = soloComm();
  float a[8] = {}, b[8] = {};
  CHECK(ncclAllReduce(a, b, 8, static_cast<ncclDataType_t>(12), ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "AllReduce : invalid type 12");
  CHECK(ncclAllReduce(a, b, 8, static_cast<ncclDataType_t>(-1), ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "AllReduce : invalid type -1");
  CHECK(ncclAllReduce(a, b, 8, ncclFloat, static_cast<ncclRedOp_t>(-2), comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "AllReduce : invalid reduction operation -2");
  CHECK(ncclReduce(a, b, 8, ncclFloat, static_cast<ncclRedOp_t>(77), 0, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Reduce : reduction operation 77 unknown to this communicator");
  CHECK(ncclBroadcast(a, b, 8, ncclFloat, 1, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Broadcast : invalid root 1 (root should be in the 0..0 range)");
  CHECK(ncclReduce(a, b, 8, ncclFloat, ncclSum, -1, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Reduce : invalid root -1 (root should be in the 0..0 range)");
  CHECK(ncclSend(a, 8, ncclFloat, 3, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Send : invalid peer 3 (peer should be in the 0..0 range)");
  CHECK(ncclRecv(b, 8, ncclFloat, -1, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Recv : invalid peer -1 (peer should be in the 0..0 range)");
  CHECK(ncclAllReduce(nullptr, b, 8, ncclFloat, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "AllReduce : sendbuff argument is NULL");
  CHECK(ncclAllGather(a, nullptr, 8, ncclFloat, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "AllGather : recvbuff argument is NULL");
  CHECK(ncclSend(nullptr, 8, ncclFloat, 0, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Send : buff argument is NULL");
  CHECK(ncclAllReduce(a, b, SIZE_MAX / 2, ncclFloat, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() ==
        "AllReduce : count " + std::to_string(SIZE_MAX / 2) + " of f32 on 1 ranks overflows the byte count");
  // NCCL checks the root before the datatype.
  CHECK(ncclBroadcast(a, b, 8, static_cast<ncclDataType_t>(99), 5, comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "Broadcast : invalid root 5 (root should be in the 0..0 range)");
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
