// One rank of a multi-process job that uses only the NCCL API, as an
// unmodified NCCL program does. It links against the shim's replace-mode
// libnccl.so.2 and may also run under LD_PRELOAD=libmscclpp_nccl.so; the
// fallback library is the test double (MSCCLPP_NCCL_LIB_PATH).
// Usage: shim_mp_worker <scenario> <rank> <nranks>. Rank 0 prints "ID <hex>"
// after ncclGetUniqueId; shim_mp_launch passes that line to the others' stdin.
// Each scenario* function says what it checks. Prints "RESULT OK" and exits 0
// when every check passed; otherwise prints each failed check and exits 1.
#include <dlfcn.h>
#include <nccl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mscclpp/plan_api.h"
#include "nccl_double.h"

namespace {

int gFailures = 0;
int gRank = -1;

void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stdout, "rank %d FAILED: ", gRank);
  std::vfprintf(stdout, fmt, ap);
  std::fprintf(stdout, "\n");
  std::fflush(stdout);
  va_end(ap);
  ++gFailures;
}

#define EXPECT(cond, ...)           \
  do {                              \
    if (!(cond)) fail(__VA_ARGS__); \
  } while (0)

#define NCCL_OK(call)                                                                                         \
  do {                                                                                                        \
    ncclResult_t r_ = (call);                                                                                 \
    if (r_ != ncclSuccess) {                                                                                  \
      fail("%s returned %d: %s (line %d)", #call, static_cast<int>(r_), ncclGetLastError(nullptr), __LINE__); \
      finish();                                                                                               \
    }                                                                                                         \
  } while (0)

[[noreturn]] void finish() {
  std::fprintf(stdout, gFailures == 0 ? "RESULT OK\n" : "RESULT FAIL (%d checks)\n", gFailures);
  std::fflush(stdout);
  std::exit(gFailures == 0 ? 0 : 1);
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

// ---- the test double as loaded in this process ----
struct Double {
  void* h = dlopen(NCCL_DOUBLE_PATH, RTLD_LAZY | RTLD_NOLOAD);
  template <class F>
  F fn(const char* name) const {
    return reinterpret_cast<F>(dlsym(h, name));
  }
  int count() const { return fn<ncclDoubleRecordCountFn>("ncclDoubleRecordCount")(); }
  std::string record(int i) const { return fn<ncclDoubleRecordFn>("ncclDoubleRecord")(i); }
  void* comm(int i) const { return fn<ncclDoubleRecordCommFn>("ncclDoubleRecordComm")(i); }
  void reset() const { fn<ncclDoubleResetFn>("ncclDoubleReset")(); }
  int find(const std::string& prefix, int from = 0) const {
    for (int i = from; i < count(); ++i) {
      if (record(i).compare(0, prefix.size(), prefix) == 0) return i;
    }
    return -1;
  }
  int rankOf(void* realComm) const {
    int r = -2;
    fn<ncclResult_t (*)(ncclComm_t, int*)>("ncclCommUserRank")(reinterpret_cast<ncclComm_t>(realComm), &r);
    return r;
  }
  std::string dump() const {
    std::string s;
    for (int i = 0; i < count(); ++i) s += "    " + record(i) + "\n";
    return s;
  }
};

ncclUniqueId exchangeId(int rank) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    std::string hex;
    for (unsigned char c : id.internal) hex += fmt("%02x", c);
    std::fprintf(stdout, "ID %s\n", hex.c_str());
    std::fflush(stdout);
    return id;
  }
  std::string line;
  if (!std::getline(std::cin, line) || line.size() != 3 + 2 * sizeof(id.internal) || line.compare(0, 3, "ID ") != 0) {
    fail("no unique id on stdin (got '%s')", line.c_str());
    finish();
  }
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(std::stoi(line.substr(3 + 2 * i, 2), nullptr, 16));
  }
  return id;
}

ncclComm_t init(const ncclUniqueId& id, int rank, int nRanks) {
  ncclComm_t comm = nullptr;
  if (rank % 2 == 0) {
    NCCL_OK(ncclCommInitRank(&comm, nRanks, id, rank));
  } else {
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.commName = "shim-mp";
    NCCL_OK(ncclCommInitRankConfig(&comm, nRanks, id, rank, &cfg));
  }
  int n = -1, r = -1;
  NCCL_OK(ncclCommCount(comm, &n));
  NCCL_OK(ncclCommUserRank(comm, &r));
  EXPECT(n == nRanks && r == rank, "CommCount/UserRank gave %d/%d, expected %d/%d", n, r, nRanks, rank);
  return comm;
}

// The record of the first call named fn after index from, checked for its text and its real communicator.
void expectRecord(const Double& d, const std::string& want, int wantRealRank) {
  int i = d.find(want);
  if (i < 0) {
    fail("the real NCCL never received %s; it got:\n%s", want.c_str(), d.dump().c_str());
    return;
  }
  int realRank = d.rankOf(d.comm(i));
  EXPECT(realRank == wantRealRank, "%s went to a real communicator of rank %d, expected rank %d", want.c_str(),
         realRank, wantRealRank);
}

// fallback: every collective and grouped send/recv reaches the real NCCL's
// twin with the exact arguments.
void scenarioFallback(int rank, int nRanks) {
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  if (d.h == nullptr) {
    fail("the test double is not loaded (MSCCLPP_NCCL_LIB_PATH=%s)", std::getenv("MSCCLPP_NCCL_LIB_PATH"));
    finish();
  }
  d.reset();
  std::vector<float> a(1024 * nRanks, 1.0f), b(1024 * nRanks, 0.0f);
  const void* pa = a.data();
  void* pb = b.data();
  NCCL_OK(ncclAllReduce(pa, pb, 1024, ncclFloat32, ncclAvg, comm, nullptr));
  NCCL_OK(ncclAllGather(pa, pb, 1024, ncclFloat32, comm, nullptr));
  NCCL_OK(ncclReduceScatter(pa, pb, 1024, ncclFloat32, ncclMax, comm, nullptr));
  NCCL_OK(ncclBroadcast(pa, pb, 1024, ncclFloat32, nRanks - 1, comm, nullptr));
  NCCL_OK(ncclReduce(pa, pb, 1024, ncclFloat32, ncclSum, 0, comm, nullptr));
  NCCL_OK(ncclAlltoAll(pa, pb, 1024, ncclFloat32, comm, nullptr));
  expectRecord(d, fmt("ncclAllReduce(sendbuff=%p, recvbuff=%p, count=1024, datatype=7, op=4, comm=", pa, pb), rank);
  expectRecord(d, fmt("ncclAllGather(sendbuff=%p, recvbuff=%p, sendcount=1024, datatype=7, comm=", pa, pb), rank);
  expectRecord(d, fmt("ncclReduceScatter(sendbuff=%p, recvbuff=%p, recvcount=1024, datatype=7, op=2, comm=", pa, pb),
               rank);
  expectRecord(
      d, fmt("ncclBroadcast(sendbuff=%p, recvbuff=%p, count=1024, datatype=7, root=%d, comm=", pa, pb, nRanks - 1),
      rank);
  expectRecord(d, fmt("ncclReduce(sendbuff=%p, recvbuff=%p, count=1024, datatype=7, op=0, root=0, comm=", pa, pb),
               rank);
  expectRecord(d, fmt("ncclAlltoAll(sendbuff=%p, recvbuff=%p, count=1024, datatype=7, comm=", pa, pb), rank);

  // A ring exchange in one group: each call reaches the real NCCL inside one real group.
  d.reset();
  int next = (rank + 1) % nRanks, prev = (rank + nRanks - 1) % nRanks;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(pa, 64, ncclFloat32, next, comm, nullptr));
  NCCL_OK(ncclRecv(pb, 64, ncclFloat32, prev, comm, nullptr));
  NCCL_OK(ncclGroupEnd());
  EXPECT(d.find("ncclGroupStart()") == 0, "the ring was not opened with the real ncclGroupStart:\n%s",
         d.dump().c_str());
  expectRecord(d, fmt("ncclSend(sendbuff=%p, count=64, datatype=7, peer=%d, comm=", pa, next), rank);
  expectRecord(d, fmt("ncclRecv(recvbuff=%p, count=64, datatype=7, peer=%d, comm=", pb, prev), rank);
  EXPECT(d.find("ncclGroupEnd()") > 0, "the ring was not closed with the real ncclGroupEnd:\n%s", d.dump().c_str());

  d.reset();
  NCCL_OK(ncclCommDestroy(comm));
  EXPECT(d.find("ncclCommDestroy(comm=") >= 0, "the real communicator was not destroyed:\n%s", d.dump().c_str());
}

// split: ncclCommSplit by color and key, NOCOLOR too; collectives on the
// children.
void scenarioSplit(int rank, int nRanks) {
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  // Two colors by parity, reversed order inside each (key = -rank); rank 0 stays out when there are 4+ ranks.
  bool out = nRanks >= 4 && rank == 0;
  int color = out ? NCCL_SPLIT_NOCOLOR : rank % 2;
  ncclComm_t child = reinterpret_cast<ncclComm_t>(0x1);
  NCCL_OK(ncclCommSplit(comm, color, -rank, &child, nullptr));
  if (out) {
    EXPECT(child == nullptr, "NCCL_SPLIT_NOCOLOR gave a communicator");
  } else {
    std::vector<int> members;
    for (int r = nRanks - 1; r >= 0; --r) {
      if (r % 2 == color && !(nRanks >= 4 && r == 0)) members.push_back(r);
    }
    int wantRank = 0;
    while (members[wantRank] != rank) ++wantRank;
    int n = -1, r = -1;
    NCCL_OK(ncclCommCount(child, &n));
    NCCL_OK(ncclCommUserRank(child, &r));
    EXPECT(n == static_cast<int>(members.size()) && r == wantRank, "child is rank %d of %d, expected %d of %zu", r, n,
           wantRank, members.size());
    d.reset();
    std::vector<double> x(16, rank);
    NCCL_OK(ncclAllReduce(x.data(), x.data(), 16, ncclFloat64, ncclSum, child, nullptr));
    int i = d.find("ncclAllReduce(");
    EXPECT(i >= 0, "the child's allreduce did not reach the real NCCL");
    NCCL_OK(ncclCommDestroy(child));
  }
  NCCL_OK(ncclCommDestroy(comm));
}

// abort: the last rank vanishes after init; the others' ncclCommAbort returns
// promptly.
void scenarioAbort(int rank, int nRanks) {
  const ncclUniqueId id = exchangeId(rank);
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, nRanks, id, rank);
  // The last rank vanishes, and the others abort, as soon as their own
  // initialization returned: a rank still finishing its own then fails, naming
  // the one that left without a goodbye (a dead peer fails the whole
  // communicator, its initialization included). Either way abort must be
  // prompt.
  EXPECT(r == ncclSuccess || (r == ncclRemoteError && std::string(ncclGetLastError(nullptr))
                                                              .find("closed its bootstrap connection without "
                                                                    "leaving") != std::string::npos),
         "ncclCommInitRank returned %d: %s", static_cast<int>(r), ncclGetLastError(nullptr));
  if (rank == nRanks - 1) {
    // Vanish without a goodbye: no destroy, sockets closed by the kernel.
    std::fprintf(stdout, "RESULT OK\n");
    std::fflush(stdout);
    _exit(0);
  }
  auto start = std::chrono::steady_clock::now();
  NCCL_OK(ncclCommAbort(comm));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT(s < 5.0, "ncclCommAbort took %.1f s", s);
}

// ---- plans ----

// Element access in any NCCL datatype, for values that are small integers (exact in every type, f8 aside).
double loadElem(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8:
      return static_cast<const int8_t*>(p)[i];
    case ncclUint8:
      return static_cast<const uint8_t*>(p)[i];
    case ncclInt32:
      return static_cast<const int32_t*>(p)[i];
    case ncclUint32:
      return static_cast<const uint32_t*>(p)[i];
    case ncclInt64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case ncclUint64:
      return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case ncclFloat32:
      return static_cast<const float*>(p)[i];
    case ncclFloat64:
      return static_cast<const double*>(p)[i];
    case ncclBfloat16: {
      uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case ncclFloat16: {
      uint16_t h = static_cast<const uint16_t*>(p)[i];
      int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
      double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
      return (h & 0x8000) ? -v : v;
    }
    default:
      return NAN;
  }
}

void storeElem(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      break;
    case ncclUint8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      break;
    case ncclInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case ncclUint32:
      static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      break;
    case ncclInt64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case ncclUint64:
      static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      break;
    case ncclFloat32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case ncclFloat64:
      static_cast<double*>(p)[i] = v;
      break;
    case ncclBfloat16: {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(bits >> 16);  // exact for small integers
      break;
    }
    case ncclFloat16: {
      // Small non-negative integers only (exact in half precision).
      uint16_t h = 0;
      if (v != 0) {
        int e;
        double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
        h = static_cast<uint16_t>(((e + 14) << 10) | (static_cast<int>(m * 2048) & 0x3ff));
      }
      static_cast<uint16_t*>(p)[i] = h;
      break;
    }
    default:
      break;
  }
}

size_t elemSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

bool isFloat(ncclDataType_t t) { return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16; }

// Rank r's input element i for a reduction op: small integers whose reduction
// over up to 8 ranks stays exact in every datatype tested (prod: 1s and 2s, at
// most 2^8; only used with 16-bit-or-wider types).
double inputValue(ncclRedOp_t op, int r, size_t i) {
  switch (op) {
    case ncclProd:
      return static_cast<double>(((r + i) % 2) + 1);
    case ncclMax:
    case ncclMin:
      return static_cast<double>((r * 7 + i) % 11);
    default:
      return static_cast<double>((r + i) % 4);
  }
}

double reduceRef(ncclRedOp_t op, ncclDataType_t t, int nRanks, size_t i, size_t offsetOf) {
  double acc = inputValue(op, 0, offsetOf + i);
  for (int r = 1; r < nRanks; ++r) {
    double v = inputValue(op, r, offsetOf + i);
    switch (op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (op == ncclAvg) acc = isFloat(t) ? acc / nRanks : std::trunc(acc / nRanks);
  return acc;
}

struct PlanCase {
  Double* dbl;
  ncclComm_t comm;
  int rank, nRanks;
};

// Checks that the call just made ran on a plan (or, when wantNccl, went to the
// real NCCL) and that out holds ref(i) for i < count.
template <class Ref>
void checkResult(const PlanCase& pc, const char* what, const void* out, size_t count, ncclDataType_t t, bool wantNccl,
                 Ref ref) {
  int i = -1;
  for (const char* name : {"ncclAllReduce(", "ncclAllGather(", "ncclReduceScatter(", "ncclBroadcast(", "ncclReduce(",
                           "ncclAlltoAll(", "ncclGather(", "ncclScatter(", "ncclSend(", "ncclRecv("}) {
    int k = pc.dbl->find(name);
    if (k >= 0) i = k;
  }
  if (wantNccl) {
    EXPECT(i >= 0, "%s: expected the real NCCL to get this call (no plan serves it); it did not", what);
    return;
  }
  EXPECT(i < 0, "%s: expected a plan to run it, but the real NCCL got %s", what,
         i >= 0 ? pc.dbl->record(i).c_str() : "");
  if (out == nullptr) return;
  for (size_t e = 0; e < count; ++e) {
    double got = loadElem(t, out, e), want = ref(e);
    if (got != want) {
      fail("%s: element %zu is %g, expected %g", what, e, got, want);
      return;
    }
  }
}

// native: no plans, native algorithms serve the call; reduce, gather and
// scatter, which none covers, go to the real NCCL.
void planCollectives(PlanCase& pc, ncclDataType_t t, ncclRedOp_t op, size_t count, bool inPlace, bool native = false) {
  const int r = pc.rank, n = pc.nRanks;
  const size_t es = elemSize(t);
  std::string tag = fmt("%s dtype %d op %d count %zu", inPlace ? "in-place" : "out-of-place", t, op, count);
  std::vector<char> a(count * n * es), b(count * n * es);
  auto fill = [&](void* p, size_t elems, size_t offset, int rank) {
    for (size_t e = 0; e < elems; ++e) storeElem(t, p, e, inputValue(op, rank, offset + e));
  };

  // allreduce
  pc.dbl->reset();
  fill(a.data(), count, 0, r);
  void* out = inPlace ? a.data() : b.data();
  NCCL_OK(ncclAllReduce(a.data(), out, count, t, op, pc.comm, nullptr));
  checkResult(pc, ("allreduce " + tag).c_str(), out, count, t, false,
              [&](size_t e) { return reduceRef(op, t, n, e, 0); });

  // reducescatter: rank r's result is block r of the reduced N*count input
  pc.dbl->reset();
  fill(a.data(), count * n, 0, r);
  out = inPlace ? a.data() + r * count * es : b.data();
  NCCL_OK(ncclReduceScatter(a.data(), out, count, t, op, pc.comm, nullptr));
  checkResult(pc, ("reducescatter " + tag).c_str(), out, count, t, false,
              [&](size_t e) { return reduceRef(op, t, n, e, r * count); });

  if (op != ncclSum) return;  // the data-movement collectives below do not reduce: run them once

  // allgather
  pc.dbl->reset();
  void* send = inPlace ? b.data() + r * count * es : a.data();
  fill(send, count, 0, r);
  NCCL_OK(ncclAllGather(send, b.data(), count, t, pc.comm, nullptr));
  checkResult(pc, ("allgather " + tag).c_str(), b.data(), count * n, t, false,
              [&](size_t e) { return inputValue(op, static_cast<int>(e / count), e % count); });

  // alltoall: block j of my output is block r of rank j's input
  pc.dbl->reset();
  fill(a.data(), count * n, 0, r);
  out = inPlace ? a.data() : b.data();
  NCCL_OK(ncclAlltoAll(a.data(), out, count, t, pc.comm, nullptr));
  checkResult(pc, ("alltoall " + tag).c_str(), out, count * n, t, false,
              [&](size_t e) { return inputValue(op, static_cast<int>(e / count), r * count + e % count); });

  // broadcast from every root
  for (int root = 0; root < n; ++root) {
    pc.dbl->reset();
    fill(a.data(), count, 0, r);
    out = inPlace ? a.data() : b.data();
    NCCL_OK(ncclBroadcast(a.data(), out, count, t, root, pc.comm, nullptr));
    checkResult(pc, fmt("broadcast root %d %s", root, tag.c_str()).c_str(), out, count, t, false,
                [&](size_t e) { return inputValue(op, root, e); });
  }

  // reduce to the first and the last rank
  for (int root : {0, n - 1}) {
    pc.dbl->reset();
    fill(a.data(), count, 0, r);
    out = inPlace ? a.data() : b.data();
    NCCL_OK(ncclReduce(a.data(), out, count, t, op, root, pc.comm, nullptr));
    checkResult(pc, fmt("reduce root %d %s", root, tag.c_str()).c_str(), r == root ? out : nullptr, count, t, native,
                [&](size_t e) { return reduceRef(op, t, n, e, 0); });
  }

  // gather to the first and the last rank: part j of the root's output is rank
  // j's input; the other ranks pass recvbuff = NULL (NCCL's in-place form
  // exists on the root only)
  for (int root : {0, n - 1}) {
    pc.dbl->reset();
    void* send = inPlace && r == root ? b.data() + r * count * es : a.data();
    fill(send, count, 0, r);
    NCCL_OK(ncclGather(send, r == root ? b.data() : nullptr, count, t, root, pc.comm, nullptr));
    checkResult(pc, fmt("gather root %d %s", root, tag.c_str()).c_str(), r == root ? b.data() : nullptr, count * n, t,
                native, [&](size_t e) { return inputValue(op, static_cast<int>(e / count), e % count); });
  }

  // scatter from the first and the last rank: my output is part r of the root's
  // input; the other ranks pass sendbuff = NULL
  for (int root : {0, n - 1}) {
    pc.dbl->reset();
    fill(a.data(), count * n, 0, root);
    out = inPlace && r == root ? a.data() + r * count * es : b.data();
    NCCL_OK(ncclScatter(r == root ? a.data() : nullptr, out, count, t, root, pc.comm, nullptr));
    checkResult(pc, fmt("scatter root %d %s", root, tag.c_str()).c_str(), out, count, t, native,
                [&](size_t e) { return inputValue(op, root, r * count + e); });
  }
}

// plans: every collective through plans, from MSCCLPP_PLAN_DIR (the default
// plans and tests/data/shim/plans). In and out of place, several datatypes
// and reduce ops, checked against a reference. Sizes that run padded: 3 floats,
// 13 int8. A user-defined op no plan serves goes to the real NCCL instead.
void scenarioPlans(int rank, int nRanks) {
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  if (d.h == nullptr) {
    fail("the test double is not loaded");
    finish();
  }
  PlanCase pc{&d, comm, rank, nRanks};
  // Sizes the default plans serve: LL plans below 1 MiB, the all-pairs plan from 1 MiB.
  planCollectives(pc, ncclFloat32, ncclSum, 1024, false);
  planCollectives(pc, ncclFloat32, ncclSum, 1024, true);
  for (ncclRedOp_t op : {ncclProd, ncclMax, ncclMin, ncclAvg}) planCollectives(pc, ncclFloat32, op, 256, false);
  planCollectives(pc, ncclInt32, ncclMax, 512, true);
  planCollectives(pc, ncclInt32, ncclAvg, 512, false);
  planCollectives(pc, ncclUint8, ncclSum, 2048, false);
  planCollectives(pc, ncclFloat16, ncclSum, 512, true);
  planCollectives(pc, ncclBfloat16, ncclMax, 512, false);
  planCollectives(pc, ncclFloat64, ncclSum, 256, false);
  planCollectives(pc, ncclInt64, ncclMin, 256, true);
  {
    // 1 MiB of float32: the all-pairs plan.
    size_t count = (1 << 20) / 4;
    std::vector<float> a(count), b(count);
    for (size_t e = 0; e < count; ++e) a[e] = static_cast<float>(inputValue(ncclSum, rank, e));
    d.reset();
    NCCL_OK(ncclAllReduce(a.data(), b.data(), count, ncclFloat32, ncclSum, comm, nullptr));
    checkResult(pc, "allreduce 1 MiB f32", b.data(), count, ncclFloat32, false,
                [&](size_t e) { return reduceRef(ncclSum, ncclFloat32, nRanks, e, 0); });
  }
  {
    // 3 floats (12 bytes: no whole number of the plans' 16-byte chunks): the
    // plan runs on its padded geometry (each rank stages its parts,
    // docs/plan-core.md "Any count"); then every collective at 13 int8 and 5
    // float16.
    float a[3] = {1, 2, 3}, b[3] = {0, 0, 0};
    d.reset();
    NCCL_OK(ncclAllReduce(a, b, 3, ncclFloat32, ncclSum, comm, nullptr));
    checkResult(pc, "allreduce of 12 bytes", b, 3, ncclFloat32, false,
                [&](size_t e) { return static_cast<double>((e + 1) * nRanks); });
    planCollectives(pc, ncclInt8, ncclSum, 13, true);
    planCollectives(pc, ncclFloat16, ncclSum, 5, false);
  }
  {
    // A PreMulSum op runs on the sum plans: each input scaled, then summed
    // (allreduce, and reduce-scatter as FSDP's gradient reduction calls it).
    float a[3] = {1, 2, 3}, b[3] = {0, 0, 0}, scalar = 2;
    ncclRedOp_t op;
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
    d.reset();
    NCCL_OK(ncclAllReduce(a, b, 3, ncclFloat32, op, comm, nullptr));
    checkResult(pc, "allreduce with a PreMulSum op", b, 3, ncclFloat32, false,
                [&](size_t e) { return 2.0 * static_cast<double>((e + 1) * nRanks); });
    NCCL_OK(ncclRedOpDestroy(op, comm));
    const float half = 0.5f;
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, const_cast<float*>(&half), ncclFloat32, ncclScalarHostImmediate, comm));
    const size_t part = 256;
    std::vector<float> in(part * static_cast<size_t>(nRanks)), out(part, -1);
    for (size_t e = 0; e < in.size(); ++e) in[e] = static_cast<float>(e % 7 + 1);
    d.reset();
    NCCL_OK(ncclReduceScatter(in.data(), out.data(), part, ncclFloat32, op, comm, nullptr));
    checkResult(pc, "reduce-scatter with a PreMulSum op", out.data(), part, ncclFloat32, false, [&](size_t e) {
      return 0.5 * nRanks * static_cast<double>((static_cast<size_t>(rank) * part + e) % 7 + 1);
    });
    NCCL_OK(ncclRedOpDestroy(op, comm));
  }
  {
    // Several collectives in one group: each on its plan, in order.
    std::vector<float> a(512), b(512), c(512 * nRanks);
    for (size_t e = 0; e < a.size(); ++e) a[e] = static_cast<float>(inputValue(ncclSum, rank, e));
    d.reset();
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
    NCCL_OK(ncclAllGather(b.data(), c.data(), b.size(), ncclFloat32, comm, nullptr));
    NCCL_OK(ncclGroupEnd());
    checkResult(pc, "grouped allreduce then allgather", c.data(), c.size(), ncclFloat32, false,
                [&](size_t e) { return reduceRef(ncclSum, ncclFloat32, nRanks, e % 512, 0); });
  }
  if (nRanks == 2) {
    // A grouped send + recv with the peer: the sendrecv plan.
    std::vector<int32_t> a(1024), b(1024, -1);
    for (size_t e = 0; e < a.size(); ++e) a[e] = static_cast<int32_t>(rank * 1000 + e);
    d.reset();
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(a.data(), a.size(), ncclInt32, 1 - rank, comm, nullptr));
    NCCL_OK(ncclRecv(b.data(), b.size(), ncclInt32, 1 - rank, comm, nullptr));
    NCCL_OK(ncclGroupEnd());
    checkResult(pc, "two-rank exchange", b.data(), b.size(), ncclInt32, false,
                [&](size_t e) { return static_cast<double>((1 - rank) * 1000 + e); });
  }
  NCCL_OK(ncclCommDestroy(comm));
}

// native: every collective on native algorithms (MSCCLPP_NATIVE_ENABLE=1, no
// plans), ranks as processes sharing host memory. In and out of place,
// several datatypes and reduce ops, odd counts, a large allreduce.
void scenarioNative(int rank, int nRanks) {
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  if (d.h == nullptr) {
    fail("the test double is not loaded");
    finish();
  }
  PlanCase pc{&d, comm, rank, nRanks};
  planCollectives(pc, ncclFloat32, ncclSum, 1001, false, true);
  planCollectives(pc, ncclFloat32, ncclSum, 1024, true, true);
  for (ncclRedOp_t op : {ncclProd, ncclMax, ncclMin, ncclAvg}) planCollectives(pc, ncclInt32, op, 333, false, true);
  planCollectives(pc, ncclBfloat16, ncclMax, 512, true, true);
  planCollectives(pc, ncclInt8, ncclSum, 13, false, true);
  {
    // 4 MiB: the read-reduce allreduce.
    size_t count = (4 << 20) / 4;
    std::vector<float> a(count), b(count);
    for (size_t e = 0; e < count; ++e) a[e] = static_cast<float>(inputValue(ncclSum, rank, e));
    d.reset();
    NCCL_OK(ncclAllReduce(a.data(), b.data(), count, ncclFloat32, ncclSum, comm, nullptr));
    checkResult(pc, "allreduce 4 MiB f32", b.data(), count, ncclFloat32, false,
                [&](size_t e) { return reduceRef(ncclSum, ncclFloat32, nRanks, e, 0); });
  }
  NCCL_OK(ncclCommDestroy(comm));
}

// ---- agree ----

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// agree: 2 ranks whose plan sets differ, as rank 1's copy of a plan is broken.
// Every rank runs the call on the real NCCL and WARNs naming the plan, rank 1
// and the JSON path. Then a mismatched call, with different counts, fails on
// both ranks within seconds with ncclInvalidUsage naming both calls.
void scenarioAgree(int rank, int nRanks) {
  if (nRanks != 2) {
    fail("agree runs on 2 ranks");
    finish();
  }
  // Rank 1's plan directory holds a copy of allreduce_ll_n2_oop broken in rank
  // 0's part; rank 0's holds the good one (the first directory of
  // MSCCLPP_PLAN_DIR). Rank 1 skips the plan (every rank's part is checked);
  // without the agreement rank 0 would run it alone and the call would hang.
  const char* dirs = std::getenv("MSCCLPP_PLAN_DIR");
  const std::string planDir = dirs ? std::string(dirs).substr(0, std::string(dirs).find(':')) : "";
  const std::string tmp = fmt("/tmp/mscclpp-agree-%d-%d", static_cast<int>(getppid()), rank);
  const std::string logPath = tmp + ".log";
  std::remove(logPath.c_str());
  std::string good = readFile(planDir + "/allreduce_ll_n2_oop.json");
  const std::string op0 = R"("name":"ppkt","src_buff":[{"type":"i","index":1,"size":1}])";
  if (good.find(op0) == std::string::npos) {
    fail("%s/allreduce_ll_n2_oop.json does not start with the op this test breaks", planDir.c_str());
    finish();
  }
  if (rank == 1) {
    std::string bad = good;
    bad.replace(bad.find(op0), op0.size(), R"("name":"ppkt","src_buff":[{"type":"i","index":40,"size":1}])");
    std::string mk = "mkdir -p " + tmp;
    if (std::system(mk.c_str()) != 0) fail("%s failed", mk.c_str());
    std::ofstream(tmp + "/allreduce_ll_n2_oop.json") << bad;
    setenv("MSCCLPP_PLAN_DIR", tmp.c_str(), 1);
  } else {
    setenv("MSCCLPP_PLAN_DIR", planDir.c_str(), 1);
  }
  setenv("MSCCLPP_DEBUG_FILE", logPath.c_str(), 1);
  setenv("MSCCLPP_DEBUG", "WARN", 1);
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  PlanCase pc{&d, comm, rank, nRanks};
  std::vector<float> a(1024, 1.0f), b(1024, 0.0f);
  for (int round = 0; round < 2; ++round) {  // the second call finds the decision cached: no second WARN
    d.reset();
    NCCL_OK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
    checkResult(pc, "allreduce whose plan rank 1 skipped", nullptr, 0, ncclFloat32, true, [](size_t) { return 0.0; });
  }
  // Mismatched calls: rank 0 reduces 256 floats, rank 1 512. Both must fail at once, naming both calls.
  auto start = std::chrono::steady_clock::now();
  ncclResult_t r = ncclAllReduce(a.data(), b.data(), rank == 0 ? 256 : 512, ncclFloat32, ncclSum, comm, nullptr);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string err = ncclGetLastError(comm);
  EXPECT(r == ncclInvalidUsage, "mismatched allreduce returned %d: %s", static_cast<int>(r), err.c_str());
  EXPECT(err.find("mismatched calls") != std::string::npos && err.find("allreduce of 256 x f32") != std::string::npos &&
             err.find("allreduce of 512 x f32") != std::string::npos,
         "the mismatch error does not name both calls: %s", err.c_str());
  EXPECT(took < 5, "the mismatch took %.1f s to fail", took);
  NCCL_OK(ncclCommDestroy(comm));
  const std::string log = readFile(logPath);
  std::remove(logPath.c_str());
  if (rank == 1) {
    std::remove((tmp + "/allreduce_ll_n2_oop.json").c_str());
    rmdir(tmp.c_str());
  }
  const std::string warn = "the ranks chose differently for allreduce of 1024 x f32, sum";
  EXPECT(countOf(log, warn) == 1, "expected one WARN '%s' on rank %d; the log:\n%s", warn.c_str(), rank, log.c_str());
  for (const std::string& want : {std::string("rank 0: plan allreduce_ll_n2_oop"), std::string("rank 1: no plan ("),
                                  std::string("skipped plan 'allreduce_ll_n2_oop'"),
                                  std::string("gpus[0].threadblocks[0].ops[0].src_buff[0].index=40")}) {
    EXPECT(log.find(want) != std::string::npos, "rank %d's WARN does not say '%s'; the log:\n%s", rank, want.c_str(),
           log.c_str());
  }
}

// ---- failures: kill, leave, slow, reregister ----

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds this process used so far (user and system, every thread).
double cpuSeconds() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

// A 1024-float allreduce on a plan, checked; returns the call's result (values checked only on success).
ncclResult_t planAllReduce(PlanCase& pc, const char* what) {
  std::vector<float> a(1024), b(1024, -1.0f);
  for (size_t e = 0; e < a.size(); ++e) a[e] = static_cast<float>(inputValue(ncclSum, pc.rank, e));
  pc.dbl->reset();
  const ncclResult_t r = ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, pc.comm, nullptr);
  if (r == ncclSuccess) {
    checkResult(pc, what, b.data(), b.size(), ncclFloat32, false,
                [&](size_t e) { return reduceRef(ncclSum, ncclFloat32, pc.nRanks, e, 0); });
  }
  return r;
}

// Survivors meet here before they abort: one that aborts while another has not
// yet heard of the death would look dead to it (an abort closes connections
// without a goodbye) and rightly be blamed instead of the victim.
void waitForSurvivors(int rank, int nSurvivors) {
  const char* dir = std::getenv("MSCCLPP_TEST_MARK_DIR");
  if (dir == nullptr) return;
  std::fclose(std::fopen(fmt("%s/survivor.%d", dir, rank).c_str(), "w"));
  for (auto t0 = std::chrono::steady_clock::now(); secondsSince(t0) < 10;) {
    int n = 0;
    for (int r = 0; r <= nSurvivors; ++r) n += access(fmt("%s/survivor.%d", dir, r).c_str(), F_OK) == 0;
    if (n >= nSurvivors) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// kill: ranks allreduce on plans in a loop with default settings, no
// deadline, and the last rank is SIGKILLed as a collective starts. Every
// survivor's call fails within 10 s with ncclRemoteError naming the dead rank
// and its host; ncclCommGetAsyncError returns it, the next call fails at once
// and ncclCommAbort returns promptly. Survivors meet in $MSCCLPP_TEST_MARK_DIR.
void scenarioKill(int rank, int nRanks) {
  const int victim = nRanks - 1, killAt = 6, iterations = 12;
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  PlanCase pc{&d, comm, rank, nRanks};
  for (int it = 0; it < iterations; ++it) {
    if (rank == victim && it == killAt) {
      std::fprintf(stdout, "rank %d: killing myself (SIGKILL) as collective %d starts\nRESULT OK\n", rank, it);
      std::fflush(stdout);
      kill(getpid(), SIGKILL);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = cpuSeconds();
    const ncclResult_t r = planAllReduce(pc, "allreduce before the kill");
    const double took = secondsSince(t0), cpu = cpuSeconds() - cpu0;
    if (r == ncclSuccess) {
      // Collective killAt - 1 may fail: a peer can still be completing it when the victim, done with it, dies.
      EXPECT(it < killAt, "collective %d succeeded although rank %d died as it started", it, victim);
      continue;
    }
    const std::string err = ncclGetLastError(comm);
    EXPECT(it >= killAt - 1, "collective %d failed before rank %d died: %s", it, victim, err.c_str());
    EXPECT(r == ncclRemoteError, "the collective returned %d, not ncclRemoteError: %s", static_cast<int>(r),
           err.c_str());
    EXPECT(err.find(fmt("rank %d (host ", victim)) != std::string::npos,
           "the error does not name rank %d and its host: %s", victim, err.c_str());
    EXPECT(took < 10, "the collective failed only after %.1f s", took);
    ncclResult_t async = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError(comm, &async));
    EXPECT(async == ncclRemoteError, "ncclCommGetAsyncError gave %d, not ncclRemoteError", static_cast<int>(async));
    auto t1 = std::chrono::steady_clock::now();
    const ncclResult_t next = planAllReduce(pc, "allreduce after the kill");
    const double nextTook = secondsSince(t1);
    EXPECT(next == ncclRemoteError && nextTook < 1, "the next call returned %d after %.2f s: %s",
           static_cast<int>(next), nextTook, ncclGetLastError(comm));
    waitForSurvivors(rank, nRanks - 1);
    t1 = std::chrono::steady_clock::now();
    NCCL_OK(ncclCommAbort(comm));
    const double abortTook = secondsSince(t1);
    EXPECT(abortTook < 2, "ncclCommAbort took %.2f s", abortTook);
    std::fprintf(stdout,
                 "rank %d: collective %d failed after %.3f s (%.3f CPU s); next call %.3f s; abort %.3f s: %s\n", rank,
                 it, took, cpu, nextTook, abortTook, err.substr(0, 300).c_str());
    finish();
  }
  fail("no collective failed although rank %d died", victim);
  finish();
}

double wallSeconds() {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

// leave: after three collectives on plans the last rank leaves, as
// $MSCCLPP_TEST_LEAVE says: "destroy" (ncclCommDestroy, then it exits),
// "finalize" (ncclCommFinalize; it stays until the others are done) or "exit"
// (exit(0) with the communicator alive). It leaves 0.5 s after the others
// called one more allreduce of the same shape: that pending call must fail
// within a second of the leave with ncclRemoteError saying the rank left and
// how, ncclCommGetAsyncError must return it, a call of a new shape must fail
// at once, and destroy must succeed. Default settings, no deadline.
void scenarioLeave(int rank, int nRanks) {
  const char* howEnv = std::getenv("MSCCLPP_TEST_LEAVE");
  const std::string how = howEnv ? howEnv : "destroy";
  const char* dir = std::getenv("MSCCLPP_TEST_MARK_DIR");
  if (dir == nullptr) fail("leave: MSCCLPP_TEST_MARK_DIR is not set");
  const int victim = nRanks - 1;
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  PlanCase pc{&d, comm, rank, nRanks};
  for (int it = 0; it < 3; ++it) NCCL_OK(planAllReduce(pc, "allreduce before the leave"));
  const std::string leftFile = fmt("%s/left", dir);
  if (rank == victim) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::ofstream(leftFile + ".tmp") << fmt("%.6f", wallSeconds());
    std::rename((leftFile + ".tmp").c_str(), leftFile.c_str());
    if (how == "exit") finish();  // exit(0): its exit handler says goodbye
    if (how == "destroy") {
      NCCL_OK(ncclCommDestroy(comm));
      finish();
    }
    NCCL_OK(ncclCommFinalize(comm));
    for (auto t0 = std::chrono::steady_clock::now(); secondsSince(t0) < 20;) {  // alive until the others are done
      int n = 0;
      for (int r = 0; r < victim; ++r) n += access(fmt("%s/survivor.%d", dir, r).c_str(), F_OK) == 0;
      if (n == victim) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    NCCL_OK(ncclCommDestroy(comm));
    finish();
  }
  const ncclResult_t r = planAllReduce(pc, "allreduce pending when a rank left");
  const double failedAt = wallSeconds();
  const std::string err = ncclGetLastError(comm);
  double leftAt = 0;
  std::ifstream(leftFile) >> leftAt;
  const double detect = failedAt - leftAt;
  const std::string said = how == "exit" ? "its process exited without destroying its communicator"
                                         : "it destroyed or finalized its communicator";
  EXPECT(r == ncclRemoteError, "the pending call returned %d, not ncclRemoteError: %s", static_cast<int>(r),
         err.c_str());
  EXPECT(err.find(fmt("rank %d (host ", victim)) != std::string::npos && err.find(") left: ") != std::string::npos &&
             err.find(said) != std::string::npos,
         "the error does not say rank %d left (%s): %s", victim, said.c_str(), err.c_str());
  // The target is a second (0.5 s measured at 16 ranks, printed below); 2 s
  // keeps a loaded CI machine from failing a run that is not a hang.
  EXPECT(leftAt > 0 && detect < 2.0, "the pending call failed %.3f s after rank %d left", detect, victim);
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async == ncclRemoteError, "ncclCommGetAsyncError gave %d, not ncclRemoteError", static_cast<int>(async));
  std::vector<float> a(2048, 1.0f), b(2048, 0.0f);  // a shape not run before
  const auto t1 = std::chrono::steady_clock::now();
  const ncclResult_t next = ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr);
  const double nextTook = secondsSince(t1);
  EXPECT(next == ncclRemoteError && nextTook < 1, "the call of a new shape returned %d after %.2f s: %s",
         static_cast<int>(next), nextTook, ncclGetLastError(comm));
  waitForSurvivors(rank, nRanks - 1);  // a survivor leaving now would be a second departure
  NCCL_OK(ncclCommDestroy(comm));
  std::fprintf(stdout, "rank %d: pending call failed %.3f s after rank %d left (%s); next call %.3f s: %s\n", rank,
               detect, victim, how.c_str(), nextTook, err.substr(0, 300).c_str());
}

// slow: the last rank is seconds late for a collective, default settings. The
// others wait with little CPU, WARN once per MSCCLPP_WAIT_WARN_S naming what
// they wait on, and get the right values.
void scenarioSlow(int rank, int nRanks) {
  const int late = nRanks - 1;
  const double lateSeconds = 4.5;
  const char* dir = std::getenv("MSCCLPP_TEST_MARK_DIR");
  const std::string logPath = fmt("%s/warn.%d.log", dir ? dir : "/tmp", rank);
  setenv("MSCCLPP_DEBUG_FILE", logPath.c_str(), 1);
  setenv("MSCCLPP_DEBUG", "WARN", 1);
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  PlanCase pc{&d, comm, rank, nRanks};
  NCCL_OK(planAllReduce(pc, "allreduce before the late one"));  // builds the context: the late call is steady state
  if (rank == late) std::this_thread::sleep_for(std::chrono::duration<double>(lateSeconds));
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = cpuSeconds();
  NCCL_OK(planAllReduce(pc, "allreduce waiting for a late rank"));
  const double took = secondsSince(t0), cpu = cpuSeconds() - cpu0;
  NCCL_OK(ncclCommDestroy(comm));
  if (rank == late) return;
  std::fprintf(stdout, "rank %d: waited %.2f s for rank %d, %.3f CPU s\n", rank, took, late, cpu);
  EXPECT(took > lateSeconds - 1, "the call returned after %.2f s although rank %d was %.1f s late", took, late,
         lateSeconds);
  // Backing off: a few percent of one core at most (a busy wait would use the whole wait, per waiting thread).
  EXPECT(cpu < 0.1 * took, "waiting %.2f s used %.3f s of CPU", took, cpu);
  const std::string log = readFile(logPath);
  EXPECT(countOf(log, "has waited") >= 2, "expected a WARN per second of waiting; the log:\n%s", log.c_str());
  for (const std::string& want : {fmt("rank %d threadblock", rank), std::string("MSCCLPP_WAIT_WARN_S=1"),
                                  fmt("rank %d is not in a call", late)}) {
    EXPECT(log.find(want) != std::string::npos, "the WARN does not say '%s'; the log:\n%s", want.c_str(), log.c_str());
  }
}

int keepOrder(const mscclppPlanInfo*, int, const mscclppPlanRequest*, void*) { return -2; }

// nativeagree: the last rank turns native algorithms off, so the ranks choose
// differently for the same allreduce: every rank runs it on the real NCCL
// and WARNs, naming each rank's choice.
void scenarioNativeAgree(int rank, int nRanks) {
  if (rank == nRanks - 1) setenv("MSCCLPP_NATIVE_ENABLE", "0", 1);
  const char* dir = std::getenv("MSCCLPP_TEST_MARK_DIR");
  const std::string logPath = fmt("%s/agree.%d.log", dir ? dir : "/tmp", rank);
  setenv("MSCCLPP_DEBUG_FILE", logPath.c_str(), 1);
  setenv("MSCCLPP_DEBUG", "WARN", 1);
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  std::vector<float> a(64, 1.0f), b(64, 0.0f);
  d.reset();
  NCCL_OK(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, comm, nullptr));
  EXPECT(d.find("ncclAllReduce(") >= 0, "the ranks chose differently, yet the real NCCL did not get the call");
  NCCL_OK(ncclCommDestroy(comm));
  const std::string log = readFile(logPath);
  for (const std::string& want :
       {std::string("the ranks chose differently for allreduce of 64 x f32, sum, so every rank runs it on NCCL"),
        std::string("rank 0: native algorithm allreduce_packets"), fmt("rank %d: no plan (", nRanks - 1),
        std::string("the native algorithms are off (MSCCLPP_NATIVE_ENABLE=0)")}) {
    EXPECT(log.find(want) != std::string::npos, "the WARN does not say '%s'; the log:\n%s", want.c_str(), log.c_str());
  }
}

// reregister: rank 1 alone changes its plan registry, with a selector,
// between two calls of the same shape, which the rules forbid. Both ranks fail
// within seconds with ncclInvalidUsage saying the registries changed at
// different points, instead of waiting for each other forever.
void scenarioReregister(int rank, int nRanks) {
  ncclComm_t comm = init(exchangeId(rank), rank, nRanks);
  Double d;
  PlanCase pc{&d, comm, rank, nRanks};
  NCCL_OK(planAllReduce(pc, "allreduce agreed by both ranks"));
  if (rank == 1) {
    // A selector that keeps the registry's choice: the plan stays the same, but
    // the registry changed, so this rank agrees on the next call's plan again
    // while rank 0 runs its cached decision.
    EXPECT(mscclppPlanSetSelector(&keepOrder, nullptr) == 0, "mscclppPlanSetSelector failed: %s",
           mscclppGetLastError());
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ncclResult_t r = planAllReduce(pc, "allreduce after rank 1 changed its registry");
  const double took = secondsSince(t0);
  const std::string err = ncclGetLastError(comm);
  EXPECT(r == ncclInvalidUsage, "the call returned %d, not ncclInvalidUsage: %s", static_cast<int>(r), err.c_str());
  EXPECT(err.find("changed at different points") != std::string::npos,
         "the error does not say the registries changed at different points: %s", err.c_str());
  EXPECT(took < 15, "the call failed only after %.1f s", took);
  std::fprintf(stdout, "rank %d: failed after %.2f s: %s\n", rank, took, err.substr(0, 300).c_str());
  // Both ranks failed: an abort before the peer heard of the mismatch would look like a death to it.
  waitForSurvivors(rank, nRanks);
  NCCL_OK(ncclCommAbort(comm));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr,
                 "usage: %s fallback|split|abort|plans|agree|kill|leave|slow|reregister|native|nativeagree <rank> "
                 "<nranks>\n",
                 argv[0]);
    return 2;
  }
  std::string scenario = argv[1];
  gRank = std::atoi(argv[2]);
  int nRanks = std::atoi(argv[3]);
  if (scenario == "fallback") {
    scenarioFallback(gRank, nRanks);
  } else if (scenario == "split") {
    scenarioSplit(gRank, nRanks);
  } else if (scenario == "abort") {
    scenarioAbort(gRank, nRanks);
  } else if (scenario == "plans") {
    scenarioPlans(gRank, nRanks);
  } else if (scenario == "agree") {
    scenarioAgree(gRank, nRanks);
  } else if (scenario == "kill") {
    scenarioKill(gRank, nRanks);
  } else if (scenario == "leave") {
    scenarioLeave(gRank, nRanks);
  } else if (scenario == "slow") {
    scenarioSlow(gRank, nRanks);
  } else if (scenario == "reregister") {
    scenarioReregister(gRank, nRanks);
  } else if (scenario == "native") {
    scenarioNative(gRank, nRanks);
  } else if (scenario == "nativeagree") {
    scenarioNativeAgree(gRank, nRanks);
  } else {
    fail("unknown scenario %s", scenario.c_str());
  }
  finish();
}
