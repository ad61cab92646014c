#include "comm_lifecycle.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "comm.hpp"
#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "cuda_glue.hpp"
#include "group.hpp"
#include "guard.hpp"
#include "rank_link.hpp"

namespace mscclpp::shim {

namespace {

// The bootstrap tag of the message that sends a shrink child's id.
constexpr int kShrinkIdTag = 0x5348 << 8;

std::unique_ptr<RankLink> linkForChild(const ncclUniqueId& id, int nRanks, int rank) {
  return nRanks == 1 ? makeSoloLink() : connectLink(id, nRanks, rank);
}

void doSplit(Comm* parent, int color, int key, ncclComm_t* newcomm, const CommConfig& config) {
  ScopedLogRank logRank(parent->rank());
  InflightScope inflight(parent);
  parent->nextChildIndex();
  // Collective over the parent's ranks, ordered by
  // key then parent rank. NCCL orders the real split
  // alike, so both worlds agree on every rank.
  std::unique_ptr<RankLink> childLink = parent->link().split(color < 0 ? -1 : color, key);
  std::unique_ptr<Comm> child;
  if (childLink) {
    child = std::make_unique<Comm>(childLink->nRanks(), childLink->rank(), parent->cudaDev(), config);
    child->adoptLink(std::move(childLink));
    child->setSharesBootstrap();
    parent->setSharesBootstrap();
  }
  // Every parent rank takes part in the real split, NOCOLOR ones too.
  FallbackComm noColorFallback;
  FallbackComm& childFallback = child ? child->fallback() : noColorFallback;
  childFallback.createBySplit(parent->link(), parent->fallback(), color, key, config);
  if (child) {
    child->markReady();
    MSCCLPP_INFO(LogShim, "CommSplit: parent rank %d of %d, color %d, key %d -> rank %d of %d", parent->rank(),
                 parent->nRanks(), color, key, child->rank(), child->nRanks());
    *newcomm = toHandle(child.release());
  } else {
    MSCCLPP_INFO(LogShim, "CommSplit: parent rank %d has color NCCL_SPLIT_NOCOLOR, not creating a new communicator",
                 parent->rank());
  }
}

void waitForInflightCalls(Comm* comm, const char* what) {
  Deadline deadline = Deadline::fromTimeoutParam();
  for (unsigned i = 0; comm->inflightCalls() > 0; ++i) {
    if ((i & 63) == 0 && deadline.expired()) {
      throwTimeout(deadline, strFormat("%s: %d call(s) still running on communicator rank %d of %d", what,
                                       comm->inflightCalls(), comm->rank(), comm->nRanks()));
    }
    backoffPause(i);
  }
}

void logSummary(Comm* comm, const char* how) {
  if (!logEnabled(LogLevel::Info, LogShim)) return;
  std::string summary = comm->stats().summary();
  MSCCLPP_INFO(LogShim, "comm %p rank %d of %d %s; %s", static_cast<void*>(comm), comm->rank(), comm->nRanks(), how,
               summary.empty() ? "no collective was called" : summary.c_str());
}

}  // namespace

void getUniqueId(ncclUniqueId* out) {
  checkEnvironment();
  MSCCLPP_ENFORCE(out != nullptr, ErrorCode::InvalidArgument, "GetUniqueId : out argument is NULL");
  *out = createLinkUniqueId();
}

ncclResult_t initRank(ncclComm_t* newcomm, int nRanks, const ncclUniqueId* ids, int nIds, int rank,
                      const ncclConfig_t* config, const char* opName) {
  checkEnvironment();  // a bad value fails init, never a later call
  MSCCLPP_ENFORCE(newcomm != nullptr, ErrorCode::InvalidArgument, "%s : newcomm argument is NULL", opName);
  *newcomm = nullptr;
  MSCCLPP_ENFORCE(ids != nullptr, ErrorCode::InvalidArgument, "%s : commId argument is NULL", opName);
  MSCCLPP_ENFORCE(nIds > 0 && nIds <= nRanks, ErrorCode::InvalidArgument,
                  "improper usage of ncclCommInitRank: nId = %d, nranks=%d", nIds, nRanks);
  CommConfig cfg = CommConfig::parse(config);
  MSCCLPP_ENFORCE(nRanks >= 1 && rank >= 0 && rank < nRanks, ErrorCode::InvalidArgument,
                  "Invalid rank requested : %d/%d", rank, nRanks);

  // NCCL binds a rank to the device current at this call,
  // even when the init is deferred to the group end.
  auto comm = std::make_unique<Comm>(nRanks, rank, currentCudaDevice(), std::move(cfg));
  const ncclUniqueId id = ids[0];
  GroupState& group = threadGroup();
  if (group.active()) {
    Comm* c = comm.release();
    *newcomm = toHandle(c);
    c->setInitDeferred(true);
    group.addJob([c, id] {
      c->setInitDeferred(false);
      c->initialize(id);
    });
    return ncclSuccess;
  }
  if (!comm->config().blocking()) {
    Comm* c = comm.release();
    *newcomm = toHandle(c);
    c->startBackgroundInit(id);
    return ncclInProgress;
  }
  comm->initialize(id);  // on failure it is freed and *newcomm stays NULL
  *newcomm = toHandle(comm.release());
  return ncclSuccess;
}

void initAll(ncclComm_t* comms, int ndev, const int* devlist) {
  MSCCLPP_ENFORCE(comms != nullptr, ErrorCode::InvalidArgument, "CommInitAll : comms argument is NULL");
  MSCCLPP_ENFORCE(ndev >= 0, ErrorCode::InvalidArgument, "Invalid device count requested : %d", ndev);
  if (devlist != nullptr) {
    for (int i = 0; i < ndev; ++i) {
      // Ranks may share a device: plans serve them where NCCL refuses.
      MSCCLPP_ENFORCE(devlist[i] >= 0, ErrorCode::InvalidArgument, "Invalid device %d (devlist[%d])", devlist[i], i);
    }
  }
  for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
  if (ndev == 0) return;
  ncclUniqueId id = createLinkUniqueId();
  const int oldDev = currentCudaDevice();
  GroupState& group = threadGroup();
  group.start();
  try {
    for (int i = 0; i < ndev; ++i) {
      int dev = devlist ? devlist[i] : (oldDev >= 0 ? i : -1);
      setCudaDevice(dev);
      initRank(&comms[i], ndev, &id, 1, i, nullptr, "CommInitAll");
    }
  } catch (...) {
    group.reset();
    setCudaDevice(oldDev);
    throw;
  }
  setCudaDevice(oldDev);
  // The outermost group end runs the deferred inits together.
  // That is this one, or the caller's enclosing group's.
  if (group.end()) {
    std::vector<std::function<void()>> jobs = group.takeJobs();
    ncclResult_t latched = group.takeLatched();
    MSCCLPP_ENFORCE(latched == ncclSuccess, ErrorCode::InternalError, "CommInitAll : an earlier call failed (%d)",
                    static_cast<int>(latched));
    try {
      runConcurrently(jobs);
    } catch (...) {
      // All or nothing, as in NCCL: a clique with a failed rank is unusable.
      for (int i = 0; i < ndev; ++i) {
        delete reinterpret_cast<Comm*>(comms[i]);
        comms[i] = nullptr;
      }
      throw;
    }
  }
}

void splitComm(Comm* parent, int color, int key, ncclComm_t* newcomm, const ncclConfig_t* config) {
  MSCCLPP_ENFORCE(newcomm != nullptr, ErrorCode::InvalidArgument, "CommSplit : newcomm argument is NULL");
  *newcomm = nullptr;
  parent->ensureReady("CommSplit", /*allowRevoked=*/true);
  MSCCLPP_ENFORCE(color >= 0 || color == NCCL_SPLIT_NOCOLOR, ErrorCode::InvalidArgument,
                  "CommSplit : invalid color %d (a color is >= 0, or NCCL_SPLIT_NOCOLOR)", color);
  CommConfig cfg = config ? CommConfig::parse(config) : parent->config();
  GroupState& group = threadGroup();
  if (group.active()) {
    group.addJob([parent, color, key, newcomm, cfg] { doSplit(parent, color, key, newcomm, cfg); });
    return;
  }
  doSplit(parent, color, key, newcomm, cfg);
}

void shrinkComm(Comm* parent, const int* excludeRanks, int excludeCount, ncclComm_t* newcomm,
                const ncclConfig_t* config, int shrinkFlags) {
  MSCCLPP_ENFORCE(newcomm != nullptr, ErrorCode::InvalidArgument, "CommShrink : newcomm argument is NULL");
  *newcomm = nullptr;
  MSCCLPP_ENFORCE(excludeRanks != nullptr, ErrorCode::InvalidArgument,
                  "CommShrink : excludeRanksList argument is NULL");
  MSCCLPP_ENFORCE(excludeCount > 0, ErrorCode::InvalidArgument,
                  "CommShrink : excludeRanksCount %d (at least one rank must be excluded)", excludeCount);
  MSCCLPP_ENFORCE(shrinkFlags == NCCL_SHRINK_DEFAULT || shrinkFlags == NCCL_SHRINK_ABORT, ErrorCode::InvalidArgument,
                  "CommShrink : invalid shrinkFlags %d (NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT)", shrinkFlags);
  const int n = parent->nRanks();
  const int me = parent->rank();
  std::vector<bool> excluded(n, false);
  for (int i = 0; i < excludeCount; ++i) {
    int r = excludeRanks[i];
    MSCCLPP_ENFORCE(r >= 0 && r < n, ErrorCode::InvalidArgument,
                    "CommShrink : excludeRanksList[%d] = %d is not a rank of the communicator (0..%d)", i, r, n - 1);
    excluded[r] = true;
  }
  MSCCLPP_ENFORCE(!excluded[me], ErrorCode::InvalidArgument,
                  "CommShrink : rank %d is in excludeRanksList; excluded ranks must not call ncclCommShrink", me);
  parent->ensureReady("CommShrink", /*allowRevoked=*/true);
  CommConfig cfg = config ? CommConfig::parse(config) : parent->config();

  ScopedLogRank logRank(me);
  InflightScope inflight(parent);
  if (shrinkFlags & NCCL_SHRINK_ABORT) parent->link().interruptInflight();
  std::vector<int> survivors;
  for (int r = 0; r < n; ++r) {
    if (!excluded[r]) survivors.push_back(r);
  }
  const int newN = static_cast<int>(survivors.size());
  const int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), me) - survivors.begin());
  const int tag = kShrinkIdTag + parent->nextChildIndex();

  // The excluded ranks may be gone, so only survivors talk,
  // point to point. The first survivor hands out the id.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (newN > 1) {
    if (newRank == 0) {
      id = createLinkUniqueId();
      for (int i = 1; i < newN; ++i) parent->link().send(survivors[i], tag, &id, sizeof(id));
    } else {
      parent->link().recv(survivors[0], tag, &id, sizeof(id));
    }
  }
  auto child = std::make_unique<Comm>(newN, newRank, parent->cudaDev(), cfg);
  child->adoptLink(linkForChild(id, newN, newRank));
  // The real NCCL sorts the list in place.
  std::vector<int> realExclude(excludeRanks, excludeRanks + excludeCount);
  child->fallback().createByShrink(parent->fallback(), realExclude.data(), excludeCount, child->link(), cfg,
                                   shrinkFlags);
  child->markReady();
  MSCCLPP_INFO(LogShim, "CommShrink: parent rank %d of %d -> rank %d of %d (%d excluded)", me, n, newRank, newN,
               excludeCount);
  *newcomm = toHandle(child.release());
}

void finalizeComm(Comm* comm) {
  comm->joinBackgroundInit();
  comm->ensureReady("CommFinalize", /*allowRevoked=*/true);
  comm->link().flush();
  ncclResult_t rc = comm->fallback().finalize();
  comm->setFinalized();
  // It takes part in no more calls: its peers' later calls fail at once
  // saying it left, rather than waiting for it until it is destroyed.
  if (!comm->sharesBootstrap()) comm->link().leave();
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommFinalize");
}

void revokeComm(Comm* comm, int revokeFlags) {
  MSCCLPP_ENFORCE(revokeFlags == NCCL_REVOKE_DEFAULT, ErrorCode::InvalidArgument,
                  "CommRevoke : revokeFlags %d must be NCCL_REVOKE_DEFAULT (0)", revokeFlags);
  MSCCLPP_ENFORCE(!comm->finalized() && !comm->destroyStarted(), ErrorCode::InvalidArgument,
                  "CommRevoke : communicator rank %d of %d is being finalized or destroyed", comm->rank(),
                  comm->nRanks());
  MSCCLPP_ENFORCE(!comm->revoked(), ErrorCode::InvalidArgument,
                  "CommRevoke : communicator rank %d of %d was already revoked", comm->rank(), comm->nRanks());
  comm->joinBackgroundInit();
  comm->setRevoked();
  if (comm->hasLink()) comm->link().interruptInflight();
  ncclResult_t rc = comm->fallback().revoke();
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommRevoke");
}

namespace {
void checkNotPendingInGroup(Comm* comm, const char* opName) {
  MSCCLPP_ENFORCE(!comm->initDeferred(), ErrorCode::InvalidUsage,
                  "%s : the initialization of rank %d of %d is deferred to the enclosing ncclGroupEnd; call it first",
                  opName, comm->rank(), comm->nRanks());
}
}  // namespace

void destroyComm(Comm* comm) {
  checkNotPendingInGroup(comm, "CommDestroy");
  MSCCLPP_ENFORCE(!threadGroup().hasOpsOf(comm), ErrorCode::InvalidUsage,
                  "CommDestroy : rank %d of %d has calls queued in the current group; call ncclGroupEnd first",
                  comm->rank(), comm->nRanks());
  comm->setDestroyStarted();
  comm->joinBackgroundInit();
  logSummary(comm, "destroyed");
  ncclResult_t rc = comm->fallback().destroy();
  comm->killMagic();
  delete comm;
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommDestroy");
}

void abortComm(Comm* comm) {
  checkNotPendingInGroup(comm, "CommAbort");
  threadGroup().dropOpsOf(comm);  // they would run on a freed communicator
  comm->setAborted();
  // Wake whatever waits on our network, such as a nonblocking
  // init's rendezvous or another thread's collective. Let
  // those calls leave, then end the real twin and free.
  comm->abortNetwork();
  comm->joinBackgroundInit();
  logSummary(comm, "aborted");
  bool drained = true;
  try {
    waitForInflightCalls(comm, "ncclCommAbort");
  } catch (const Error& e) {
    drained = false;
    MSCCLPP_WARN(LogShim, "%s; the communicator is left allocated", e.what());
  }
  (void)comm->fallback().abort();
  if (!drained) return;  // freeing it would crash the running call
  comm->killMagic();
  delete comm;
}

}  // namespace mscclpp::shim
