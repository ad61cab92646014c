// The fallback path against the test-double libnccl (MSCCLPP_NCCL_LIB_PATH
// points at it; no plan directory has plans): every call reaches the real
// NCCL's counterpart with the caller's exact arguments and the real
// communicator (never ours), user ops translated, internal calls kept inside
// the library, decisions logged.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "shim_test_util.hpp"

using shimtest::Double;
using shimtest::lastError;
using shimtest::ptr;
using shimtest::ScopedEnv;
using shimtest::soloComm;
using shimtest::takeLog;

// ncclResetDebugInit is deprecated in nccl.h but still part of the ABI: the tests call it on purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

const Double& dbl() {
  static Double d(NCCL_DOUBLE_PATH);
  return d;
}

// Creates a one-rank communicator and returns it with its real twin (found through a first call).
struct Solo {
  ncclComm_t comm;
  void* real;
};

Solo makeSolo(ncclConfig_t* config = nullptr) {
  Solo s;
  s.comm = soloComm(config);
  REQUIRE(dbl().loaded());
  dbl().reset();
  int n = 0;
  // A query the shim answers itself, then a collective that must go to the real library.
  REQUIRE(ncclCommCount(s.comm, &n) == ncclSuccess);
  CHECK(dbl().count() == 0);
  char x = 1, y = 0;
  REQUIRE(ncclAllReduce(&x, &y, 1, ncclInt8, ncclSum, s.comm, nullptr) == ncclSuccess);
  REQUIRE(dbl().count() == 1);
  s.real = dbl().comm(0);
  REQUIRE(dbl().isComm(s.real));
  REQUIRE(s.real != static_cast<void*>(s.comm));
  dbl().reset();
  return s;
}

auto fakeStream = reinterpret_cast<cudaStream_t>(0x5151);

}  // namespace

TEST_CASE("every collective reaches the real NCCL and communicator", "[fallback]") {
  Solo s = makeSolo();
  std::vector<int32_t> in(64), out(64, -1);
  for (int i = 0; i < 64; ++i) in[i] = i * 3 + 1;
  const void* a = in.data();
  void* b = out.data();
  void* real = s.real;
  const void* st = fakeStream;

  REQUIRE(ncclAllReduce(a, b, 64, ncclInt32, ncclMax, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclAllGather(a, b, 64, ncclInt32, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclReduceScatter(a, b, 64, ncclInt32, ncclProd, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclBroadcast(a, b, 64, ncclInt32, 0, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclReduce(a, b, 64, ncclInt32, ncclMin, 0, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclAlltoAll(a, b, 64, ncclInt32, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclGather(a, b, 64, ncclInt32, 0, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclScatter(a, b, 64, ncclInt32, 0, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclSend(a, 64, ncclInt32, 0, s.comm, fakeStream) == ncclSuccess);
  REQUIRE(ncclRecv(b, 64, ncclInt32, 0, s.comm, fakeStream) == ncclSuccess);

  std::vector<std::string> want = {
      fmt("ncclAllReduce(sendbuff=%p, recvbuff=%p, count=64, datatype=2, op=2, comm=%p, stream=%p)", a, b, real, st),
      fmt("ncclAllGather(sendbuff=%p, recvbuff=%p, sendcount=64, datatype=2, comm=%p, stream=%p)", a, b, real, st),
      fmt("ncclReduceScatter(sendbuff=%p, recvbuff=%p, recvcount=64, datatype=2, op=1, comm=%p, stream=%p)", a, b, real,
          st),
      fmt("ncclBroadcast(sendbuff=%p, recvbuff=%p, count=64, datatype=2, root=0, comm=%p, stream=%p)", a, b, real, st),
      fmt("ncclReduce(sendbuff=%p, recvbuff=%p, count=64, datatype=2, op=3, root=0, comm=%p, stream=%p)", a, b, real,
          st),
      fmt("ncclAlltoAll(sendbuff=%p, recvbuff=%p, count=64, datatype=2, comm=%p, stream=%p)", a, b, real, st),
      fmt("ncclGather(sendbuff=%p, recvbuff=%p, count=64, datatype=2, root=0, comm=%p, stream=%p)", a, b, real, st),
      fmt("ncclScatter(sendbuff=%p, recvbuff=%p, count=64, datatype=2, root=0, comm=%p, stream=%p)", a, b, real, st),
      // A lone send or recv goes as it came (the real NCCL groups it internally).
      fmt("ncclSend(sendbuff=%p, count=64, datatype=2, peer=0, comm=%p, stream=%p)", a, real, st),
      fmt("ncclRecv(recvbuff=%p, count=64, datatype=2, peer=0, comm=%p, stream=%p)", b, real, st),
  };
  std::vector<std::string> got;
  for (int i = 0; i < dbl().count(); ++i) {
    if (dbl().record(i).rfind("ncclCommGetAsyncError", 0) == 0) continue;  // polling is the shim's business
    got.push_back(dbl().record(i));
    CHECK(dbl().depth(i) == 0);
    CHECK(dbl().comm(i) == real);
  }
  INFO(dbl().dump());
  CHECK(got == want);
  CHECK(out == in);  // the double moved the data as a one-rank collective does
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("ncclBcast reaches the real one; its inner call stays inside", "[fallback]") {
  Solo s = makeSolo();
  std::vector<float> buf(16, 2.5f);
  REQUIRE(ncclBcast(buf.data(), 16, ncclFloat32, 0, s.comm, fakeStream) == ncclSuccess);
  INFO(dbl().dump());
  REQUIRE(dbl().count() >= 2);
  const void* p = buf.data();
  CHECK(dbl().record(0) ==
        fmt("ncclBcast(buff=%p, count=16, datatype=7, root=0, comm=%p, stream=%p)", p, s.real, (void*)fakeStream));
  CHECK(dbl().depth(0) == 0);
  CHECK(dbl().record(1) == fmt("ncclBroadcast(sendbuff=%p, recvbuff=%p, count=16, datatype=7, root=0, comm=%p, "
                               "stream=%p)",
                               p, p, s.real, (void*)fakeStream));
  CHECK(dbl().depth(1) == 1);
  // The shim loads it with RTLD_DEEPBIND, so the library's own name binds
  // inside it. Sanitized builds cannot use RTLD_DEEPBIND: there the call goes
  // through the shim's re-entry guard and back, as the records above show.
  CHECK(dbl().bcastBoundInside() == (SHIMTEST_SANITIZED ? 0 : 1));
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("grouped calls are issued in order at the outermost end", "[fallback]") {
  Solo s = makeSolo();
  std::vector<double> a(8, 1.0), b(8, 0.0), c(8, 0.0);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclAllReduce(a.data(), b.data(), 8, ncclFloat64, ncclSum, s.comm, nullptr) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(dbl().count() == 0);  // still inside the outer group: nothing issued yet
  REQUIRE(ncclAllGather(b.data(), c.data(), 8, ncclFloat64, s.comm, nullptr) == ncclSuccess);
  REQUIRE(ncclSend(a.data(), 8, ncclFloat64, 0, s.comm, nullptr) == ncclSuccess);
  REQUIRE(ncclRecv(c.data(), 8, ncclFloat64, 0, s.comm, nullptr) == ncclSuccess);
  CHECK(dbl().count() == 0);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  std::vector<std::string> names;
  for (int i = 0; i < dbl().count(); ++i) {
    std::string r = dbl().record(i);
    if (r.rfind("ncclCommGetAsyncError", 0) == 0) continue;
    names.push_back(r.substr(0, r.find('(')));
  }
  INFO(dbl().dump());
  CHECK(names == std::vector<std::string>{"ncclGroupStart", "ncclAllReduce", "ncclAllGather", "ncclSend", "ncclRecv",
                                          "ncclGroupEnd"});
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("an error in a group fails the call and the end; none issued", "[fallback]") {
  Solo s = makeSolo();
  float a = 1, b = 0;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  CHECK(ncclAllReduce(&a, &b, 1, ncclFloat32, ncclSum, s.comm, nullptr) == ncclSuccess);
  CHECK(ncclAllReduce(&a, &b, 1, static_cast<ncclDataType_t>(40), ncclSum, s.comm, nullptr) == ncclInvalidArgument);
  CHECK(ncclAllReduce(&a, &b, 1, ncclFloat32, ncclSum, s.comm, nullptr) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclInvalidArgument);
  CHECK(lastError() == "AllReduce : invalid type 40");
  CHECK(dbl().count() == 0);
  // The thread is out of the group again.
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  CHECK(ncclAllReduce(&a, &b, 1, ncclFloat32, ncclSum, s.comm, nullptr) == ncclSuccess);
  CHECK(dbl().find("ncclAllReduce") == 0);
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("empty collectives are not issued; empty sends and recvs are", "[fallback]") {
  Solo s = makeSolo();
  float a = 1, b = 0;
  CHECK(ncclAllReduce(&a, &b, 0, ncclFloat32, ncclSum, s.comm, nullptr) == ncclSuccess);
  CHECK(ncclAllGather(nullptr, nullptr, 0, ncclFloat32, s.comm, nullptr) == ncclSuccess);
  CHECK(dbl().count() == 0);
  CHECK(ncclSend(nullptr, 0, ncclFloat32, 0, s.comm, nullptr) == ncclSuccess);
  CHECK(dbl().find("ncclSend(sendbuff=(nil), count=0") >= 0);
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("PreMulSum ops exist in both worlds and are translated", "[fallback]") {
  Solo s = makeSolo();
  float scalar = 0.25f;
  ncclRedOp_t op;
  REQUIRE(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, s.comm) == ncclSuccess);
  CHECK(static_cast<int>(op) >= static_cast<int>(ncclNumOps));
  int created = dbl().find("ncclRedOpCreatePreMulSum(");
  REQUIRE(created >= 0);
  CHECK(dbl().record(created) == fmt("ncclRedOpCreatePreMulSum(datatype=7, residence=1, value=0.25, comm=%p)", s.real));
  float a[4] = {1, 2, 3, 4}, b[4] = {};
  REQUIRE(ncclAllReduce(a, b, 4, ncclFloat32, op, s.comm, nullptr) == ncclSuccess);
  int call = dbl().find("ncclAllReduce(");
  REQUIRE(call >= 0);
  // The double numbers its ops from 1000: the real library got its own handle, not ours.
  CHECK(dbl().record(call).find("op=1000,") != std::string::npos);
  CHECK(static_cast<int>(op) != 1000);
  // The op is bound to its datatype (NCCL's rule).
  CHECK(ncclAllReduce(a, b, 4, ncclFloat64, op, s.comm, nullptr) == ncclInvalidArgument);
  CHECK(lastError().find("AllReduce : reduction operation " + std::to_string(op) +
                         " was created for datatype f32 but the call's datatype is f64") == 0);
  REQUIRE(ncclRedOpDestroy(op, s.comm) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclRedOpDestroy(op=1000, comm=%p)", s.real)) >= 0);
  CHECK(ncclRedOpDestroy(op, s.comm) == ncclInvalidArgument);
  CHECK(lastError() == "ncclRedOpDestroy : operator unknown to this communicator.");
  CHECK(ncclAllReduce(a, b, 4, ncclFloat32, op, s.comm, nullptr) == ncclInvalidArgument);
  // A device-resident scalar is passed by pointer.
  REQUIRE(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarDevice, s.comm) == ncclSuccess);
  CHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, static_cast<ncclScalarResidence_t>(3), s.comm) ==
        ncclInvalidArgument);
  CHECK(lastError() == "ncclRedOpCreatePreMulSum : invalid scalar residence 3");
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("a bad forced-fallback list fails init with a message", "[fallback]") {
  ScopedEnv env("MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION", "allreduce,bogus");
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclInvalidArgument);
  CHECK(comm == nullptr);
  CHECK(lastError().find("MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION='allreduce,bogus' is not valid: unknown collective "
                         "'bogus'") == 0);
}

TEST_CASE("MSCCLPP_DEBUG=INFO logs decisions and a summary at destroy", "[fallback]") {
  std::string path = "/tmp/mscclpp-shim-test-" + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  {
    ScopedEnv level("MSCCLPP_DEBUG", "INFO");
    ScopedEnv subsys("MSCCLPP_DEBUG_SUBSYS", "SHIM");
    ScopedEnv file("MSCCLPP_DEBUG_FILE", path.c_str());
    ncclResetDebugInit();
    ncclComm_t comm = soloComm();
    std::vector<uint16_t> a(3 << 19), b(3 << 19);  // 3 MiB of bf16
    REQUIRE(ncclAllReduce(a.data(), b.data(), a.size(), ncclBfloat16, ncclSum, comm, nullptr) == ncclSuccess);
    REQUIRE(ncclAllReduce(a.data(), a.data(), 8, ncclBfloat16, ncclSum, comm, nullptr) == ncclSuccess);
    REQUIRE(ncclCommDestroy(comm) == ncclSuccess);
  }
  ncclResetDebugInit();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  std::remove(path.c_str());
  INFO(log);
  CHECK(log.find("[0] MSCCLPP INFO SHIM NCCL ran because a one-rank communicator runs no plans") != std::string::npos);
  CHECK(log.find("NCCL fallback ready: real communicator") != std::string::npos);
  CHECK(log.find("rank 0 of 1 destroyed; allreduce: 2 calls, 3.0 MiB, 0 via plans, 2 via NCCL") != std::string::npos);
}

TEST_CASE("a bad NCCL_DEBUG fails init with ncclInvalidArgument", "[fallback]") {
  ScopedEnv level("NCCL_DEBUG", "LOUD");
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id) == ncclInvalidArgument);
  CHECK(lastError() ==
        "invalid environment: NCCL_DEBUG='LOUD' is not valid: expected one of NONE|VERSION|WARN|INFO|ABORT|TRACE "
        "(default NONE)");
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclInvalidArgument);
  CHECK(comm == nullptr);
}

TEST_CASE("NCCL_DEBUG=WARN prints the details error strings point to", "[fallback]") {
  const std::string path = "/tmp/mscclpp-shim-warn-" + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  {
    ScopedEnv level("NCCL_DEBUG", "WARN");
    ScopedEnv file("NCCL_DEBUG_FILE", "/tmp/mscclpp-shim-warn-%p.log");
    ncclResetDebugInit();
    ncclUniqueId id;
    REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
    ncclComm_t comm = nullptr;
    CHECK(ncclCommInitRank(&comm, 1, id, 5) == ncclInvalidArgument);
    CHECK(std::string(ncclGetErrorString(ncclInvalidArgument)).find("run with NCCL_DEBUG=WARN for details") !=
          std::string::npos);
  }
  ncclResetDebugInit();
  const std::string log = takeLog(path);
  INFO(log);
  CHECK(log.find("MSCCLPP WARN SHIM Invalid rank requested : 5/1") != std::string::npos);
}

TEST_CASE("buffer and window registrations go to the real communicator", "[fallback]") {
  Solo s = makeSolo();
  std::vector<char> buf(4096);
  void* handle = nullptr;
  REQUIRE(ncclCommRegister(s.comm, buf.data(), buf.size(), &handle) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclCommRegister(comm=%p, buff=%p, size=4096)", s.real, buf.data())) >= 0);
  REQUIRE(ncclCommDeregister(s.comm, handle) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclCommDeregister(comm=%p, handle=%p)", s.real, handle)) >= 0);
  ncclWindow_t win = nullptr;
  REQUIRE(ncclCommWindowRegister(s.comm, buf.data(), buf.size(), &win, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclCommWindowRegister(comm=%p, buff=%p, size=4096, winFlags=1)", s.real, buf.data())) >= 0);
  REQUIRE(ncclCommWindowDeregister(s.comm, win) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclCommWindowDeregister(comm=%p, win=%p)", s.real, (void*)win)) >= 0);
  CHECK(ncclCommRegister(s.comm, nullptr, 8, &handle) == ncclInvalidArgument);
  CHECK(lastError() == "CommRegister : buff argument is NULL");
  CHECK(ncclCommWindowRegister(s.comm, buf.data(), 8, &win, 7) == ncclInvalidArgument);
  CHECK(lastError() == "CommWindowRegister : invalid winFlags 0x7");
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("device API calls go to the real communicator", "[fallback]") {
  Solo s = makeSolo();
  ncclDevCommRequirements_t reqs{};
  ncclDevComm_t devComm;
  REQUIRE(ncclDevCommCreate(s.comm, &reqs, &devComm) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclDevCommCreate(comm=%p, reqs=%p, out=%p)", s.real, (void*)&reqs, (void*)&devComm)) >= 0);
  REQUIRE(ncclDevCommDestroy(s.comm, &devComm) == ncclSuccess);
  CHECK(dbl().find(fmt("ncclDevCommDestroy(comm=%p", s.real)) >= 0);
  ncclTeam_t world = ncclTeamWorld(s.comm);
  CHECK(dbl().find(fmt("ncclTeamWorld(comm=%p)", s.real)) >= 0);
  CHECK(world.nRanks == 1);
  CHECK(world.rank == 0);
  CHECK(world.stride == 1);
  CHECK(ncclTeamRankToWorld(s.comm, world, 0) == 0);
  CHECK(ncclLLA2ACalcSlots(10, 12) == 20);
  CHECK(dbl().find("ncclLLA2ACalcSlots(maxElts=10, maxEltSize=12)") >= 0);
  CHECK(ncclDevCommCreate(nullptr, &reqs, &devComm) == ncclInvalidArgument);
  CHECK(lastError() == "ncclDevCommCreate : comm argument is NULL");
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("ncclMemAlloc gives host memory on the CPU backend", "[fallback]") {
  void* p = nullptr;
  REQUIRE(ncclMemAlloc(&p, 1000) == ncclSuccess);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p) % 4096 == 0);
  auto* bytes = static_cast<unsigned char*>(p);
  CHECK(bytes[0] == 0);
  CHECK(bytes[999] == 0);
  bytes[999] = 7;  // writable
  CHECK(ncclMemFree(p) == ncclSuccess);
  CHECK(ncclMemFree(nullptr) == ncclSuccess);
  CHECK(ncclMemAlloc(nullptr, 8) == ncclInvalidArgument);
  CHECK(lastError() == "MemAlloc : ptr argument is NULL");
}

TEST_CASE("ncclGroupSimulateEnd asks NCCL when all calls go there", "[fallback]") {
  Solo s = makeSolo();
  float a[4] = {}, b[4] = {};
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclAllReduce(a, b, 4, ncclFloat32, ncclSum, s.comm, nullptr) == ncclSuccess);
  REQUIRE(ncclGroupSimulateEnd(&sim) == ncclSuccess);
  CHECK(sim.estimatedTime == 42.0f);
  CHECK(dbl().find("ncclGroupSimulateEnd()") >= 0);
  ncclSimInfo_t bad = NCCL_SIM_INFO_INITIALIZER;
  bad.magic = 1;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  CHECK(ncclGroupSimulateEnd(&bad) == ncclInvalidArgument);
  CHECK(lastError() == "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER (magic 0x1)");
  REQUIRE(ncclGroupEnd() == ncclSuccess);  // the bad call did not end the group
  CHECK(ncclGroupSimulateEnd(&sim) == ncclInvalidUsage);
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("the real NCCL's async error is reported", "[fallback]") {
  Solo s = makeSolo();
  ncclResult_t async = ncclInternalError;
  REQUIRE(ncclCommGetAsyncError(s.comm, &async) == ncclSuccess);
  CHECK(async == ncclSuccess);
  CHECK(dbl().find(fmt("ncclCommGetAsyncError(comm=%p)", s.real)) >= 0);
  CHECK(ncclCommDestroy(s.comm) == ncclSuccess);
}

TEST_CASE("without a real communicator ours works; fallbacks say why", "[fallback]") {
  REQUIRE(dbl().loaded());
  dbl().failInit(-1, ncclSystemError);
  ncclComm_t comm = soloComm();
  dbl().reset();
  int n = 0;
  CHECK(ncclCommCount(comm, &n) == ncclSuccess);
  float a = 1, b = 0;
  CHECK(ncclAllReduce(&a, &b, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidUsage);
  CHECK(lastError() ==
        "AllReduce : a one-rank communicator runs no plans, and the NCCL fallback is unavailable: rank 0: "
        "ncclCommInitRankConfig: double: ncclCommInitRank failed as the test asked (result 2: double: error)");
  CHECK(dbl().count() == 0);
  // The device API cannot work without the real communicator either, and says so.
  ncclDevComm_t devComm;
  CHECK(ncclDevCommCreate(comm, nullptr, &devComm) == ncclInvalidUsage);
  CHECK(lastError().find("ncclDevCommCreate : the NCCL device API runs on the real NCCL's communicator, which is "
                         "unavailable: rank 0: ") == 0);
  // Registrations and team queries are still answered (ours).
  std::vector<char> buf(64);
  void* handle = nullptr;
  CHECK(ncclCommRegister(comm, buf.data(), buf.size(), &handle) == ncclSuccess);
  CHECK(ncclCommDeregister(comm, handle) == ncclSuccess);
  CHECK(ncclCommDeregister(comm, handle) == ncclInvalidArgument);
  ncclTeam_t t = ncclTeamWorld(comm);
  CHECK(t.nRanks == 1);
  CHECK(t.stride == 1);
  CHECK(dbl().count() == 0);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
