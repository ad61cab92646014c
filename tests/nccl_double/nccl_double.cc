// A test-double libnccl: exports the NCCL 2.28 API the way libnccl.so.2 does (strong pnccl*, weak nccl*
// aliases), records every call it receives with its exact arguments (nccl_double.h), and never needs a GPU.
// Like the real library it calls one of its own public names through the dynamic linker (ncclBcast ->
// ncclBroadcast) and reports where that call was bound, which is how tests prove RTLD_DEEPBIND keeps it inside.
//
// Built twice: libnccl_double.so (NCCL 2.28.9) and, with NCCL_DOUBLE_OLD, libnccl_double_old.so (claims 2.18.3
// and lacks the functions NCCL added later) for the "symbol missing from an older NCCL" tests.
#include "nccl_double.h"

#include <nccl.h>
#include <nccl_device.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#define DOUBLE_API(ret, name, ...)                                            \
  extern "C" __attribute__((visibility("default"))) ret p##name(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name(__VA_ARGS__)

#define DOUBLE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

#ifdef NCCL_DOUBLE_OLD
constexpr int kVersion = 21803;
#else
constexpr int kVersion = NCCL_VERSION_CODE;
#endif

constexpr uint64_t kNcclMagic = 0x0280028002800280ull;  // what the real NCCL puts first in its comm

struct DoubleComm {
  uint64_t startMagic = kNcclMagic;
  int rank = 0;
  int nRanks = 1;
  int pendingPolls = 0;  // nonblocking init: ncclInProgress for this many ncclCommGetAsyncError calls
  uint64_t endMagic = kNcclMagic;
};

struct Record {
  std::string text;
  void* comm;
  int depth;
};

std::mutex gMutex;
std::vector<Record> gRecords;
std::atomic<bool> gRecording{true};
std::atomic<long long> gCalls{0};
std::atomic<int> gBcastInside{-1};
std::atomic<int> gFailRank{-2};
std::atomic<int> gFailResult{ncclSuccess};
std::atomic<int> gIdCounter{0};
std::atomic<int> gOpCounter{0};
std::string gLastError;
thread_local int tDepth = 0;

// Marks the calling thread as inside the double (depth of nested calls).
struct Enter {
  Enter() { ++tDepth; }
  ~Enter() { --tDepth; }
};

__attribute__((format(printf, 2, 3))) void record(const void* comm, const char* fmt, ...) {
  gCalls.fetch_add(1, std::memory_order_relaxed);
  if (!gRecording.load(std::memory_order_relaxed)) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(gMutex);
  gRecords.push_back({buf, const_cast<void*>(comm), tDepth - 1});
}

void setError(const char* msg) {
  std::lock_guard<std::mutex> lock(gMutex);
  gLastError = msg;
}

size_t typeSize(ncclDataType_t t) {
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
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

DoubleComm* asComm(ncclComm_t c) { return reinterpret_cast<DoubleComm*>(c); }
bool validComm(ncclComm_t c) {
  return c != nullptr && asComm(c)->startMagic == kNcclMagic && asComm(c)->endMagic == kNcclMagic;
}

ncclResult_t checkComm(ncclComm_t c, const char* fn) {
  if (validComm(c)) return ncclSuccess;
  std::string msg = std::string("double: ") + fn + " received a communicator that is not the double's";
  setError(msg.c_str());
  return ncclInvalidArgument;
}

// One-rank semantics: every collective copies its input to its output.
void oneRankCopy(ncclComm_t comm, const void* send, void* recv, size_t count, ncclDataType_t dtype) {
  if (asComm(comm)->nRanks != 1 || send == nullptr || recv == nullptr || send == recv) return;
  std::memmove(recv, send, count * typeSize(dtype));
}

ncclResult_t makeComm(ncclComm_t* out, int nranks, int rank, const ncclConfig_t* config) {
  int fail = gFailRank.load();
  if (fail == rank || fail == -1) {
    setError("double: ncclCommInitRank failed as the test asked");
    *out = nullptr;
    return static_cast<ncclResult_t>(gFailResult.load());
  }
  auto* c = new DoubleComm();
  c->rank = rank;
  c->nRanks = nranks;
  bool blocking = config == nullptr || config->blocking != 0;
  c->pendingPolls = blocking ? 0 : 1;
  *out = reinterpret_cast<ncclComm_t>(c);
  return blocking ? ncclSuccess : ncclInProgress;
}

}  // namespace

// ---- inspection API (nccl_double.h) ----

DOUBLE_EXPORT int ncclDoubleRecordCount(void) {
  std::lock_guard<std::mutex> lock(gMutex);
  return static_cast<int>(gRecords.size());
}

DOUBLE_EXPORT const char* ncclDoubleRecord(int i) {
  std::lock_guard<std::mutex> lock(gMutex);
  return i >= 0 && i < static_cast<int>(gRecords.size()) ? gRecords[i].text.c_str() : "";
}

DOUBLE_EXPORT void* ncclDoubleRecordComm(int i) {
  std::lock_guard<std::mutex> lock(gMutex);
  return i >= 0 && i < static_cast<int>(gRecords.size()) ? gRecords[i].comm : nullptr;
}

DOUBLE_EXPORT int ncclDoubleRecordDepth(int i) {
  std::lock_guard<std::mutex> lock(gMutex);
  return i >= 0 && i < static_cast<int>(gRecords.size()) ? gRecords[i].depth : -1;
}

DOUBLE_EXPORT void ncclDoubleReset(void) {
  std::lock_guard<std::mutex> lock(gMutex);
  gRecords.clear();
  gFailRank = -2;
  gBcastInside = -1;
}

DOUBLE_EXPORT void ncclDoubleSetRecording(int on) { gRecording = on != 0; }
DOUBLE_EXPORT long long ncclDoubleCallCount(void) { return gCalls.load(); }
DOUBLE_EXPORT void ncclDoubleFailInit(int rank, int result) {
  gFailResult = result;
  gFailRank = rank;
}
DOUBLE_EXPORT int ncclDoubleBcastBoundInside(void) { return gBcastInside.load(); }
DOUBLE_EXPORT int ncclDoubleIsComm(const void* comm) {
  return validComm(reinterpret_cast<ncclComm_t>(const_cast<void*>(comm)));
}

// ---- the NCCL API ----

DOUBLE_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t pncclGetVersion(int* version) {
  Enter e;
  record(nullptr, "ncclGetVersion()");
  if (version == nullptr) return ncclInvalidArgument;
  *version = kVersion;
  return ncclSuccess;
}

DOUBLE_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result) {
  Enter e;
  record(nullptr, "ncclGetErrorString(result=%d)", static_cast<int>(result));
  return result == ncclSuccess ? "double: no error" : "double: error";
}

DOUBLE_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclGetLastError(comm=%p)", static_cast<void*>(comm));
  thread_local std::string copy;
  std::lock_guard<std::mutex> lock(gMutex);
  copy = gLastError;
  return copy.c_str();
}

DOUBLE_API(void, ncclResetDebugInit);
void pncclResetDebugInit() {
  Enter e;
  record(nullptr, "ncclResetDebugInit()");
}

DOUBLE_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  Enter e;
  record(nullptr, "ncclGetUniqueId()");
  if (uniqueId == nullptr) return ncclInvalidArgument;
  std::memset(uniqueId, 0, sizeof(*uniqueId));
  std::snprintf(uniqueId->internal, sizeof(uniqueId->internal), "nccl-double-id-%d", gIdCounter.fetch_add(1));
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
           ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  Enter e;
  record(nullptr, "ncclCommInitRankConfig(nranks=%d, commId=%.40s, rank=%d, blocking=%d)", nranks, commId.internal,
         rank, config ? config->blocking : -1);
  if (comm == nullptr) return ncclInvalidArgument;
  return makeComm(comm, nranks, rank, config);
}

DOUBLE_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  Enter e;
  record(nullptr, "ncclCommInitRank(nranks=%d, commId=%.40s, rank=%d)", nranks, commId.internal, rank);
  if (comm == nullptr) return ncclInvalidArgument;
  return makeComm(comm, nranks, rank, nullptr);
}

DOUBLE_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  Enter e;
  record(nullptr, "ncclCommInitAll(ndev=%d, devlist=%p)", ndev, static_cast<const void*>(devlist));
  for (int i = 0; i < ndev; ++i) makeComm(&comms[i], ndev, i, nullptr);
  return ncclSuccess;
}

#ifndef NCCL_DOUBLE_OLD
DOUBLE_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
           ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config) {
  Enter e;
  record(nullptr, "ncclCommInitRankScalable(nranks=%d, myrank=%d, nId=%d)", nranks, myrank, nId);
  (void)commIds;
  return makeComm(newcomm, nranks, myrank, config);
}
#endif

DOUBLE_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclCommFinalize(comm=%p)", static_cast<void*>(comm));
  return checkComm(comm, "ncclCommFinalize");
}

DOUBLE_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclCommDestroy(comm=%p)", static_cast<void*>(comm));
  if (comm == nullptr) return ncclSuccess;
  ncclResult_t r = checkComm(comm, "ncclCommDestroy");
  if (r != ncclSuccess) return r;
  asComm(comm)->startMagic = asComm(comm)->endMagic = 0;
  delete asComm(comm);
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclCommAbort(comm=%p)", static_cast<void*>(comm));
  if (comm == nullptr) return ncclSuccess;
  ncclResult_t r = checkComm(comm, "ncclCommAbort");
  if (r != ncclSuccess) return r;
  asComm(comm)->startMagic = asComm(comm)->endMagic = 0;
  delete asComm(comm);
  return ncclSuccess;
}

#ifndef NCCL_DOUBLE_OLD
DOUBLE_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  Enter e;
  record(comm, "ncclCommRevoke(comm=%p, revokeFlags=%d)", static_cast<void*>(comm), revokeFlags);
  return checkComm(comm, "ncclCommRevoke");
}
#endif

DOUBLE_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  Enter e;
  record(comm, "ncclCommSplit(comm=%p, color=%d, key=%d, blocking=%d)", static_cast<void*>(comm), color, key,
         config ? config->blocking : -1);
  ncclResult_t r = checkComm(comm, "ncclCommSplit");
  if (r != ncclSuccess) return r;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  auto* c = new DoubleComm();
  c->rank = -1;  // the double cannot know the new rank without talking to the other ranks
  c->nRanks = -1;
  *newcomm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}

#ifndef NCCL_DOUBLE_OLD
DOUBLE_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
           ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags) {
  Enter e;
  record(comm, "ncclCommShrink(comm=%p, exclude[0]=%d, count=%d, flags=%d, blocking=%d)", static_cast<void*>(comm),
         excludeRanksCount > 0 ? excludeRanksList[0] : -1, excludeRanksCount, shrinkFlags,
         config ? config->blocking : -1);
  ncclResult_t r = checkComm(comm, "ncclCommShrink");
  if (r != ncclSuccess) return r;
  auto* c = new DoubleComm();
  c->rank = -1;
  c->nRanks = -1;
  *newcomm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}
#endif

DOUBLE_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  Enter e;
  record(comm, "ncclCommGetAsyncError(comm=%p)", static_cast<void*>(comm));
  ncclResult_t r = checkComm(comm, "ncclCommGetAsyncError");
  if (r != ncclSuccess) return r;
  DoubleComm* c = asComm(comm);
  if (c->pendingPolls > 0) {
    --c->pendingPolls;
    *asyncError = ncclInProgress;
  } else {
    *asyncError = ncclSuccess;
  }
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  Enter e;
  record(comm, "ncclCommCount(comm=%p)", static_cast<void*>(comm));
  ncclResult_t r = checkComm(comm, "ncclCommCount");
  if (r == ncclSuccess) *count = asComm(comm)->nRanks;
  return r;
}

DOUBLE_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  Enter e;
  record(comm, "ncclCommCuDevice(comm=%p)", static_cast<void*>(comm));
  ncclResult_t r = checkComm(comm, "ncclCommCuDevice");
  if (r == ncclSuccess) *device = 0;
  return r;
}

DOUBLE_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  Enter e;
  record(comm, "ncclCommUserRank(comm=%p)", static_cast<void*>(comm));
  ncclResult_t r = checkComm(comm, "ncclCommUserRank");
  if (r == ncclSuccess) *rank = asComm(comm)->rank;
  return r;
}

DOUBLE_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  Enter e;
  record(comm, "ncclCommRegister(comm=%p, buff=%p, size=%zu)", static_cast<void*>(comm), buff, size);
  ncclResult_t r = checkComm(comm, "ncclCommRegister");
  if (r == ncclSuccess) *handle = new int(1);
  return r;
}

DOUBLE_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  Enter e;
  record(comm, "ncclCommDeregister(comm=%p, handle=%p)", static_cast<void*>(comm), handle);
  ncclResult_t r = checkComm(comm, "ncclCommDeregister");
  if (r == ncclSuccess) delete static_cast<int*>(handle);
  return r;
}

DOUBLE_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
           int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  Enter e;
  record(comm, "ncclCommWindowRegister(comm=%p, buff=%p, size=%zu, winFlags=%d)", static_cast<void*>(comm), buff, size,
         winFlags);
  ncclResult_t r = checkComm(comm, "ncclCommWindowRegister");
  if (r == ncclSuccess) *win = reinterpret_cast<ncclWindow_t>(new int(2));
  return r;
}

DOUBLE_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  Enter e;
  record(comm, "ncclCommWindowDeregister(comm=%p, win=%p)", static_cast<void*>(comm), static_cast<void*>(win));
  ncclResult_t r = checkComm(comm, "ncclCommWindowDeregister");
  if (r == ncclSuccess) delete reinterpret_cast<int*>(win);
  return r;
}

DOUBLE_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  Enter e;
  record(nullptr, "ncclMemAlloc(size=%zu)", size);
  *ptr = std::malloc(size == 0 ? 1 : size);
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t pncclMemFree(void* ptr) {
  Enter e;
  record(nullptr, "ncclMemFree(ptr=%p)", ptr);
  std::free(ptr);
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
           ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  Enter e;
  double value = 0;
  if (residence == ncclScalarHostImmediate && datatype == ncclFloat32) value = *static_cast<float*>(scalar);
  if (residence == ncclScalarHostImmediate && datatype == ncclFloat64) value = *static_cast<double*>(scalar);
  record(comm, "ncclRedOpCreatePreMulSum(datatype=%d, residence=%d, value=%g, comm=%p)", static_cast<int>(datatype),
         static_cast<int>(residence), value, static_cast<void*>(comm));
  ncclResult_t r = checkComm(comm, "ncclRedOpCreatePreMulSum");
  if (r == ncclSuccess) *op = static_cast<ncclRedOp_t>(1000 + gOpCounter.fetch_add(1));
  return r;
}

DOUBLE_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  Enter e;
  record(comm, "ncclRedOpDestroy(op=%d, comm=%p)", static_cast<int>(op), static_cast<void*>(comm));
  return checkComm(comm, "ncclRedOpDestroy");
}

DOUBLE_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclReduce(sendbuff=%p, recvbuff=%p, count=%zu, datatype=%d, op=%d, root=%d, comm=%p, stream=%p)",
         sendbuff, recvbuff, count, static_cast<int>(datatype), static_cast<int>(op), root, static_cast<void*>(comm),
         static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclReduce");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, count, datatype);
  return r;
}

DOUBLE_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclBroadcast(sendbuff=%p, recvbuff=%p, count=%zu, datatype=%d, root=%d, comm=%p, stream=%p)", sendbuff,
         recvbuff, count, static_cast<int>(datatype), root, static_cast<void*>(comm), static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclBroadcast");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, count, datatype);
  return r;
}

// Our own ncclBroadcast, referenced without the dynamic linker (hidden): what a call bound inside would reach.
extern "C" __attribute__((visibility("hidden"), alias("pncclBroadcast"))) ncclResult_t doubleBroadcastLocal(
    const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
    cudaStream_t stream);

DOUBLE_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
           cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  Enter e;
  record(comm, "ncclBcast(buff=%p, count=%zu, datatype=%d, root=%d, comm=%p, stream=%p)", buff, count,
         static_cast<int>(datatype), root, static_cast<void*>(comm), static_cast<void*>(stream));
  // As the real NCCL does: call our own public ncclBroadcast through the
  // dynamic linker. Its address (read through the GOT, like the call) tells
  // where the linker bound it.
  ncclResult_t (*volatile bound)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) =
      &ncclBroadcast;
  gBcastInside = reinterpret_cast<void*>(bound) == reinterpret_cast<void*>(&doubleBroadcastLocal) ? 1 : 0;
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

DOUBLE_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclAllReduce(sendbuff=%p, recvbuff=%p, count=%zu, datatype=%d, op=%d, comm=%p, stream=%p)", sendbuff,
         recvbuff, count, static_cast<int>(datatype), static_cast<int>(op), static_cast<void*>(comm),
         static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclAllReduce");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, count, datatype);
  return r;
}

DOUBLE_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclReduceScatter(sendbuff=%p, recvbuff=%p, recvcount=%zu, datatype=%d, op=%d, comm=%p, stream=%p)",
         sendbuff, recvbuff, recvcount, static_cast<int>(datatype), static_cast<int>(op), static_cast<void*>(comm),
         static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclReduceScatter");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, recvcount, datatype);
  return r;
}

DOUBLE_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclAllGather(sendbuff=%p, recvbuff=%p, sendcount=%zu, datatype=%d, comm=%p, stream=%p)", sendbuff,
         recvbuff, sendcount, static_cast<int>(datatype), static_cast<void*>(comm), static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclAllGather");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, sendcount, datatype);
  return r;
}

#ifndef NCCL_DOUBLE_OLD
DOUBLE_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) {
  Enter e;
  record(comm, "ncclAlltoAll(sendbuff=%p, recvbuff=%p, count=%zu, datatype=%d, comm=%p, stream=%p)", sendbuff, recvbuff,
         count, static_cast<int>(datatype), static_cast<void*>(comm), static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclAlltoAll");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, count, datatype);
  return r;
}

DOUBLE_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclGather(sendbuff=%p, recvbuff=%p, count=%zu, datatype=%d, root=%d, comm=%p, stream=%p)", sendbuff,
         recvbuff, count, static_cast<int>(datatype), root, static_cast<void*>(comm), static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclGather");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, count, datatype);
  return r;
}

DOUBLE_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
           int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  Enter e;
  record(comm, "ncclScatter(sendbuff=%p, recvbuff=%p, count=%zu, datatype=%d, root=%d, comm=%p, stream=%p)", sendbuff,
         recvbuff, count, static_cast<int>(datatype), root, static_cast<void*>(comm), static_cast<void*>(stream));
  ncclResult_t r = checkComm(comm, "ncclScatter");
  if (r == ncclSuccess) oneRankCopy(comm, sendbuff, recvbuff, count, datatype);
  return r;
}
#endif

DOUBLE_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  Enter e;
  record(comm, "ncclSend(sendbuff=%p, count=%zu, datatype=%d, peer=%d, comm=%p, stream=%p)", sendbuff, count,
         static_cast<int>(datatype), peer, static_cast<void*>(comm), static_cast<void*>(stream));
  return checkComm(comm, "ncclSend");
}

DOUBLE_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
           cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  Enter e;
  record(comm, "ncclRecv(recvbuff=%p, count=%zu, datatype=%d, peer=%d, comm=%p, stream=%p)", recvbuff, count,
         static_cast<int>(datatype), peer, static_cast<void*>(comm), static_cast<void*>(stream));
  return checkComm(comm, "ncclRecv");
}

DOUBLE_API(ncclResult_t, ncclGroupStart);
ncclResult_t pncclGroupStart() {
  Enter e;
  record(nullptr, "ncclGroupStart()");
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclGroupEnd);
ncclResult_t pncclGroupEnd() {
  Enter e;
  record(nullptr, "ncclGroupEnd()");
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  Enter e;
  record(nullptr, "ncclGroupSimulateEnd()");
  if (simInfo) simInfo->estimatedTime = 42.0f;
  return ncclSuccess;
}

#ifndef NCCL_DOUBLE_OLD
// ---- device API host functions ----

DOUBLE_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
           ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm) {
  Enter e;
  record(comm, "ncclDevCommCreate(comm=%p, reqs=%p, out=%p)", static_cast<void*>(comm), static_cast<const void*>(reqs),
         static_cast<void*>(outDevComm));
  return checkComm(comm, "ncclDevCommCreate");
}

DOUBLE_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, ncclDevComm_t const* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm) {
  Enter e;
  record(comm, "ncclDevCommDestroy(comm=%p, devComm=%p)", static_cast<void*>(comm), static_cast<const void*>(devComm));
  return checkComm(comm, "ncclDevCommDestroy");
}

namespace {
ncclTeam_t makeTeam(int n, int r, int s) {
  ncclTeam_t t;
  t.nRanks = n;
  t.rank = r;
  t.stride = s;
  return t;
}
}  // namespace

DOUBLE_API(ncclTeam_t, ncclTeamWorld, ncclComm_t comm);
ncclTeam_t pncclTeamWorld(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclTeamWorld(comm=%p)", static_cast<void*>(comm));
  return validComm(comm) ? makeTeam(asComm(comm)->nRanks, asComm(comm)->rank, 1) : makeTeam(0, 0, 0);
}

DOUBLE_API(ncclTeam_t, ncclTeamLsa, ncclComm_t comm);
ncclTeam_t pncclTeamLsa(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclTeamLsa(comm=%p)", static_cast<void*>(comm));
  return validComm(comm) ? makeTeam(asComm(comm)->nRanks, asComm(comm)->rank, 1) : makeTeam(0, 0, 0);
}

DOUBLE_API(ncclTeam_t, ncclTeamRail, ncclComm_t comm);
ncclTeam_t pncclTeamRail(ncclComm_t comm) {
  Enter e;
  record(comm, "ncclTeamRail(comm=%p)", static_cast<void*>(comm));
  return makeTeam(1, 0, validComm(comm) ? asComm(comm)->nRanks : 0);
}

DOUBLE_API(int, ncclTeamRankToWorld, ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  Enter e;
  record(comm, "ncclTeamRankToWorld(comm=%p, team={%d,%d,%d}, rank=%d)", static_cast<void*>(comm), team.nRanks,
         team.rank, team.stride, rank);
  return validComm(comm) ? asComm(comm)->rank + (rank - team.rank) * team.stride : -1;
}

DOUBLE_API(int, ncclTeamRankToLsa, ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  Enter e;
  record(comm, "ncclTeamRankToLsa(comm=%p, team={%d,%d,%d}, rank=%d)", static_cast<void*>(comm), team.nRanks, team.rank,
         team.stride, rank);
  return validComm(comm) ? asComm(comm)->rank + (rank - team.rank) * team.stride : -1;
}

DOUBLE_API(ncclResult_t, ncclLsaBarrierCreateRequirement, ncclTeam_t team, int nBarriers,
           ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq) {
  Enter e;
  record(nullptr, "ncclLsaBarrierCreateRequirement(team={%d,%d,%d}, nBarriers=%d, outHandle=%p, outReq=%p)",
         team.nRanks, team.rank, team.stride, nBarriers, static_cast<void*>(outHandle), static_cast<void*>(outReq));
  return ncclSuccess;
}

DOUBLE_API(ncclResult_t, ncclGinBarrierCreateRequirement, ncclComm_t comm, ncclTeam_t team, int nBarriers,
           ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq) {
  Enter e;
  record(comm, "ncclGinBarrierCreateRequirement(comm=%p, team={%d,%d,%d}, nBarriers=%d)", static_cast<void*>(comm),
         team.nRanks, team.rank, team.stride, nBarriers);
  (void)outHandle;
  (void)outReq;
  return checkComm(comm, "ncclGinBarrierCreateRequirement");
}

DOUBLE_API(int, ncclLLA2ACalcSlots, int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize) {
  Enter e;
  record(nullptr, "ncclLLA2ACalcSlots(maxElts=%d, maxEltSize=%d)", maxElts, maxEltSize);
  return maxElts * ((maxEltSize + 7) / 8);
}

DOUBLE_API(ncclResult_t, ncclLLA2ACreateRequirement, int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
           ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq) {
  Enter e;
  record(nullptr, "ncclLLA2ACreateRequirement(nBlocks=%d, nSlots=%d)", nBlocks, nSlots);
  (void)outHandle;
  (void)outReq;
  return ncclSuccess;
}
#endif
