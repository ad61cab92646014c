// The fallback in other situations, each run in its own process (the real library is loaded once per process):
//   [old]        the real NCCL is older than 2.28: a function it lacks fails with ncclInvalidUsage, naming it;
//   [nofallback] no real NCCL at all: our communicators work, every call that needs NCCL says why it cannot;
//   [preloaded]  the application loaded libnccl.so.2 itself before the shim (PyTorch does): its internal calls
//                reach the shim through the dynamic linker and are passed straight back to it.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdarg>
#include <string>
#include <vector>

#include "shim_test_util.hpp"

using shimtest::Double;
using shimtest::lastError;
using shimtest::soloComm;

TEST_CASE("older NCCL: a missing function is ncclInvalidUsage, named", "[old]") {
  ncclComm_t comm = soloComm();
  Double dbl(NCCL_DOUBLE_OLD_PATH);
  REQUIRE(dbl.loaded());
  float a[4] = {1, 2, 3, 4}, b[4] = {};
  REQUIRE(ncclAllReduce(a, b, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(b[3] == 4.0f);
  CHECK(ncclAlltoAll(a, b, 4, ncclFloat32, comm, nullptr) == ncclInvalidUsage);
  CHECK(lastError() == std::string("the real NCCL at ") + NCCL_DOUBLE_OLD_PATH +
                           " (version 21803) has no symbol ncclAlltoAll: it is older than the NCCL 2.28 API this call "
                           "needs");
  CHECK(ncclCommRevoke(comm, 0) == ncclInvalidUsage);
  CHECK(lastError().find("has no symbol ncclCommRevoke") != std::string::npos);
  // The shim still reports the version it emulates, not the real library's.
  int v = 0;
  CHECK(ncclGetVersion(&v) == ncclSuccess);
  CHECK(v == 22809);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("no real NCCL: our communicators work; fallbacks say why", "[nofallback]") {
  ncclComm_t comm = soloComm();
  int n = 0;
  CHECK(ncclCommCount(comm, &n) == ncclSuccess);
  CHECK(n == 1);
  float a = 1, b = 0;
  CHECK(ncclAllReduce(&a, &b, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidUsage);
  CHECK(lastError() ==
        "AllReduce : a one-rank communicator runs no plans, and the NCCL fallback is unavailable: rank 0 cannot load "
        "the real NCCL: MSCCLPP_NCCL_LIB_PATH: dlopen(/nonexistent/libnccl.so.2) failed: /nonexistent/libnccl.so.2: "
        "cannot open shared object file: No such file or directory");
  CHECK(ncclGroupStart() == ncclSuccess);
  CHECK(ncclSend(&a, 1, ncclFloat32, 0, comm, nullptr) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  CHECK(lastError().find("Send : send to/from rank 0 is not part of a pattern plans serve, and the NCCL fallback is "
                         "unavailable") == 0);
  ncclRedOp_t op;
  float scalar = 2;
  // A user op can still be created (for plans); a fallback call with it fails like any other.
  CHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm) == ncclSuccess);
  CHECK(ncclRedOpDestroy(op, comm) == ncclSuccess);
  ncclDevComm_t dev;
  CHECK(ncclDevCommCreate(comm, nullptr, &dev) == ncclInvalidUsage);
  ncclLsaBarrierHandle_t h;
  CHECK(ncclLsaBarrierCreateRequirement(ncclTeamWorld(comm), 1, &h, nullptr) == ncclInvalidUsage);
  CHECK(lastError().find("ncclLsaBarrierCreateRequirement : the NCCL device API needs the real NCCL, which is "
                         "unavailable") == 0);
  CHECK(ncclLLA2ACalcSlots(10, 12) == 20);  // pure arithmetic: answered by the shim
  ncclWindow_t win = nullptr;
  std::vector<char> buf(64);
  CHECK(ncclCommWindowRegister(comm, buf.data(), buf.size(), &win, NCCL_WIN_DEFAULT) == ncclSuccess);
  CHECK(ncclCommWindowDeregister(comm, win) == ncclSuccess);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("app-loaded NCCL: its internal calls are passed straight back", "[preloaded]") {
  // As an application linked against libnccl.so.2 would have it: loaded before
  // the shim opens it, without RTLD_DEEPBIND, so its internal calls bind to the
  // first definition in the process: the shim's.
  void* h = dlopen(NCCL_DOUBLE_PATH, RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(h != nullptr);
  Double dbl(NCCL_DOUBLE_PATH);
  ncclComm_t comm = soloComm();
  dbl.reset();
  std::vector<int> buf(8, 5);
  REQUIRE(ncclBcast(buf.data(), 8, ncclInt32, 0, comm, nullptr) == ncclSuccess);
  INFO(dbl.dump());
  CHECK(dbl.bcastBoundInside() == 0);  // the dynamic linker bound the library's ncclBroadcast to the shim...
  int inner = dbl.find("ncclBroadcast(");
  REQUIRE(inner >= 0);  // ...and the shim handed it straight back, unchanged
  CHECK(dbl.depth(inner) == 1);
  CHECK(dbl.comm(inner) == dbl.comm(dbl.find("ncclBcast(")));
  CHECK(dbl.isComm(dbl.comm(inner)));
  // A real communicator handed to a shim entry point directly is served unchanged too.
  void* real = dbl.comm(inner);
  dbl.reset();
  REQUIRE(ncclAllReduce(buf.data(), buf.data(), 8, ncclInt32, ncclSum, reinterpret_cast<ncclComm_t>(real), nullptr) ==
          ncclSuccess);
  CHECK(dbl.comm(dbl.find("ncclAllReduce(")) == real);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
