#include "fallback_comm.hpp"

#include <cstring>

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "guard.hpp"
#include "real_nccl.hpp"
#include "real_root.hpp"

namespace mscclpp::shim {

namespace {

// One rank's status in an agreement; fixed size for one all-gather.
struct StatusMsg {
  int32_t ok = 0;
  char reason[252] = {};
};
static_assert(sizeof(StatusMsg) == 256, "StatusMsg is exchanged as raw bytes");

struct RealIdMsg {
  int32_t ok = 0;
  ncclUniqueId id{};
  char reason[252] = {};
};

void setReason(char* dst, size_t len, const std::string& reason) {
  std::memset(dst, 0, len);
  std::strncpy(dst, reason.c_str(), len - 1);
}

std::string realLastError() {
  const char* (*f)(ncclComm_t) = RealNccl::instance().fnOrNull<NcclFn::ncclGetLastError>();
  if (f == nullptr) return "";
  RealCallScope scope;
  const char* s = f(nullptr);
  return s ? s : "";
}

std::string describeRealFailure(ncclResult_t rc) {
  std::string last = realLastError();
  const char* (*str)(ncclResult_t) = RealNccl::instance().fnOrNull<NcclFn::ncclGetErrorString>();
  std::string text;
  if (str) {
    RealCallScope scope;
    text = str(rc);
  }
  return strFormat("%s (result %d%s%s)", last.empty() ? text.c_str() : last.c_str(), static_cast<int>(rc),
                   last.empty() ? "" : ": ", last.empty() ? "" : text.c_str());
}

ncclResult_t finishRealCall(ncclResult_t rc, ncclComm_t real, const char* what) {
  if (rc == ncclInProgress) rc = waitRealComm(real, what);
  return rc;
}

// The real child of parent: create makes it, a real split or
// shrink on a nonblocking config, and it is waited for. *child is
// what create stored, even on failure. False, with the reason in
// *why, on failure.
template <class Create>
bool createRealChild(const FallbackComm& parent, const CommConfig& config, const char* what, ncclComm_t* child,
                     std::string* why, Create create) {
  if (!parent.available()) {
    *why = "its parent communicator had no real NCCL communicator: " + parent.unavailableReason();
    return false;
  }
  ncclConfig_t cfg = config.toNccl();
  cfg.blocking = 0;
  try {
    ncclResult_t rc = finishRealCall(create(&cfg), parent.real(), what);
    if (rc == ncclSuccess && *child != nullptr) rc = waitRealComm(*child, what);
    if (rc != ncclSuccess) {
      *why = std::string(what) + ": " + describeRealFailure(rc);
      return false;
    }
  } catch (const Error& e) {
    *why = e.what();
    return false;
  }
  return true;
}

ncclResult_t issueOne(const CollCall& c, ncclComm_t real, ncclRedOp_t op) {
  switch (c.kind) {
    case CollKind::AllReduce:
      return callReal<NcclFn::ncclAllReduce>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), op, real,
                                             c.stream);
    case CollKind::AllGather:
      return callReal<NcclFn::ncclAllGather>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), real,
                                             c.stream);
    case CollKind::ReduceScatter:
      return callReal<NcclFn::ncclReduceScatter>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), op,
                                                 real, c.stream);
    case CollKind::Broadcast:
      if (c.viaBcast)
        return callReal<NcclFn::ncclBcast>(c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), c.root, real,
                                           c.stream);
      return callReal<NcclFn::ncclBroadcast>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), c.root,
                                             real, c.stream);
    case CollKind::Reduce:
      return callReal<NcclFn::ncclReduce>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), op, c.root,
                                          real, c.stream);
    case CollKind::AllToAll:
      return callReal<NcclFn::ncclAlltoAll>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), real,
                                            c.stream);
    case CollKind::Gather:
      return callReal<NcclFn::ncclGather>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), c.root,
                                          real, c.stream);
    case CollKind::Scatter:
      return callReal<NcclFn::ncclScatter>(c.sendbuff, c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), c.root,
                                           real, c.stream);
    case CollKind::Send:
      return callReal<NcclFn::ncclSend>(c.sendbuff, c.count, toEnum<ncclDataType_t>(c.dtype), c.root, real, c.stream);
    case CollKind::Recv:
      return callReal<NcclFn::ncclRecv>(c.recvbuff, c.count, toEnum<ncclDataType_t>(c.dtype), c.root, real, c.stream);
    case CollKind::SendRecv:
      break;
  }
  MSCCLPP_THROW(ErrorCode::InternalError, "%s cannot be issued to the real NCCL as one call", collApiName(c.kind));
}

}  // namespace

ncclResult_t waitRealComm(ncclComm_t real, const char* what) {
  Deadline deadline = Deadline::fromTimeoutParam();
  ncclResult_t state = ncclInProgress;
  for (unsigned i = 0;; ++i) {
    ncclResult_t rc = callReal<NcclFn::ncclCommGetAsyncError>(real, &state);
    if (rc != ncclSuccess) return rc;
    if (state != ncclInProgress) return state;
    if ((i & 63) == 0 && deadline.expired()) throwTimeout(deadline, strFormat("the real NCCL's %s", what));
    backoffPause(i);
  }
}

void throwRealFailure(ncclResult_t rc, const char* what) {
  throw NcclResultError(rc, strFormat("%s failed in the real NCCL: %s", what, describeRealFailure(rc).c_str()));
}

FallbackComm::~FallbackComm() {
  if (real_ != nullptr) abort();
}

void FallbackComm::agree(RankLink& link, bool localOk, const std::string& localReason, bool announce) {
  std::vector<StatusMsg> all(link.nRanks());
  StatusMsg& mine = all[link.rank()];
  mine.ok = localOk ? 1 : 0;
  setReason(mine.reason, sizeof(mine.reason), localReason);
  link.allGather(all.data(), sizeof(StatusMsg));
  for (int r = 0; r < link.nRanks(); ++r) {
    if (all[r].ok) continue;
    std::string why(all[r].reason, strnlen(all[r].reason, sizeof(all[r].reason)));
    reason_ = strFormat("rank %d: %s", r, why.c_str());
    if (real_ != nullptr) {
      // A twin some ranks lack would hang its first call: drop it everywhere.
      ncclComm_t real = real_;
      real_ = nullptr;
      (void)callReal<NcclFn::ncclCommAbort>(real);
    }
    MSCCLPP_INFO(LogShim, "NCCL fallback unavailable for this communicator: %s", reason_.c_str());
    return;
  }
  reason_.clear();
  if (!announce) return;
  MSCCLPP_INFO(LogShim, "NCCL fallback ready: real communicator %p (%s, NCCL %d)", static_cast<void*>(real_),
               RealNccl::instance().path().c_str(), RealNccl::instance().versionCode());
}

void FallbackComm::createWithLink(RankLink& link, const CommConfig& config) {
  RealNccl& lib = RealNccl::instance();
  bool loaded = lib.ensureLoaded();
  // All ranks learn whether all can load the
  // library before rank 0 asks it for an id.
  {
    std::vector<StatusMsg> all(link.nRanks());
    all[link.rank()].ok = loaded ? 1 : 0;
    if (!loaded) setReason(all[link.rank()].reason, sizeof(all[0].reason), lib.unavailableReason());
    link.allGather(all.data(), sizeof(StatusMsg));
    for (int r = 0; r < link.nRanks(); ++r) {
      if (!all[r].ok) {
        reason_ = strFormat("rank %d cannot load the real NCCL: %s", r,
                            std::string(all[r].reason, strnlen(all[r].reason, sizeof(all[r].reason))).c_str());
        MSCCLPP_INFO(LogShim, "NCCL fallback unavailable for this communicator: %s", reason_.c_str());
        return;
      }
    }
  }

  RealIdMsg idMsg;
  RealRoot root;  // rank 0's: ended below unless every rank reached it
  if (link.rank() == 0) {
    ncclResult_t rc = realGetUniqueId(&idMsg.id, &root);
    idMsg.ok = rc == ncclSuccess ? 1 : 0;
    if (rc != ncclSuccess) {
      setReason(idMsg.reason, sizeof(idMsg.reason), "ncclGetUniqueId: " + describeRealFailure(rc));
    }
  }
  link.broadcast(&idMsg, sizeof(idMsg), 0);
  if (!idMsg.ok) {
    reason_ = strFormat("rank 0 could not create the real NCCL's unique id: %s",
                        std::string(idMsg.reason, strnlen(idMsg.reason, sizeof(idMsg.reason))).c_str());
    MSCCLPP_INFO(LogShim, "NCCL fallback unavailable for this communicator: %s", reason_.c_str());
    return;
  }

  ncclConfig_t cfg = config.toNccl();
  cfg.blocking = 0;  // so our deadline bounds it
  ncclComm_t real = nullptr;
  ncclResult_t rc;
  std::string why;
  try {
    rc = callReal<NcclFn::ncclCommInitRankConfig>(&real, link.nRanks(), idMsg.id, link.rank(), &cfg);
  } catch (const Error& e) {
    rc = ncclSystemError;
    why = e.what();
  }
  if (rc != ncclSuccess && rc != ncclInProgress && why.empty())
    why = "ncclCommInitRankConfig: " + describeRealFailure(rc);
  // A rank whose init failed at once, as without a GPU, never reaches
  // the real root: the others would wait for it. Every rank learns it
  // first, and then no rank waits.
  if (rc != ncclSuccess && rc != ncclInProgress) {
    if (real != nullptr) (void)callReal<NcclFn::ncclCommAbort>(real);
    real = nullptr;
  }
  real_ = real;
  agree(link, rc == ncclSuccess || rc == ncclInProgress, why, /*announce=*/false);
  if (real_ != nullptr) {
    try {
      rc = waitRealComm(real_, "ncclCommInitRankConfig");
      if (rc != ncclSuccess) why = "ncclCommInitRankConfig: " + describeRealFailure(rc);
    } catch (const Error& e) {
      rc = ncclRemoteError;
      why = e.what();
    }
    if (rc != ncclSuccess) {
      (void)callReal<NcclFn::ncclCommAbort>(real_);
      real_ = nullptr;
    }
    agree(link, rc == ncclSuccess, why);
  }
  if (real_ == nullptr) releaseRealRoot(&root);
}

void FallbackComm::createBySplit(RankLink& parentLink, FallbackComm& parent, int color, int key,
                                 const CommConfig& config) {
  ncclComm_t child = nullptr;
  std::string why;
  const bool ok = createRealChild(parent, config, "ncclCommSplit", &child, &why, [&](ncclConfig_t* cfg) {
    return callReal<NcclFn::ncclCommSplit>(parent.real_, color, key, &child, cfg);
  });
  // All parent ranks agree, NOCOLOR ones too, so
  // a child never keeps a twin its peers lack.
  std::vector<StatusMsg> all(parentLink.nRanks());
  all[parentLink.rank()].ok = ok ? 1 : 0;
  setReason(all[parentLink.rank()].reason, sizeof(all[0].reason), why);
  parentLink.allGather(all.data(), sizeof(StatusMsg));
  for (int r = 0; r < parentLink.nRanks(); ++r) {
    if (all[r].ok) continue;
    if (child != nullptr) (void)callReal<NcclFn::ncclCommAbort>(child);
    reason_ = strFormat("parent rank %d: %s", r,
                        std::string(all[r].reason, strnlen(all[r].reason, sizeof(all[r].reason))).c_str());
    return;
  }
  real_ = child;
  reason_.clear();
}

void FallbackComm::createByShrink(FallbackComm& parent, int* excludeRanks, int excludeCount, RankLink& childLink,
                                  const CommConfig& config, int shrinkFlags) {
  ncclComm_t child = nullptr;
  std::string why;
  const bool ok = createRealChild(parent, config, "ncclCommShrink", &child, &why, [&](ncclConfig_t* cfg) {
    return callReal<NcclFn::ncclCommShrink>(parent.real_, excludeRanks, excludeCount, &child, cfg, shrinkFlags);
  });
  real_ = child;
  agree(childLink, ok, why);
}

void FallbackComm::throwUnavailable(const char* opName, const std::string& whyNoPlan) const {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s : %s, and the NCCL fallback is unavailable: %s", opName, whyNoPlan.c_str(),
                reason_.c_str());
}

void FallbackComm::issue(const CollCall& call, ncclRedOp_t realOp) {
  ncclResult_t rc = finishRealCall(issueOne(call, real_, realOp), real_, collApiName(call.kind));
  if (rc != ncclSuccess) throwRealFailure(rc, strFormat("nccl%s", collApiName(call.kind)).c_str());
}

void FallbackComm::issueGroup(const std::vector<RealIssue>& issues) {
  ncclResult_t rc = callReal<NcclFn::ncclGroupStart>();
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclGroupStart");
  ncclResult_t first = ncclSuccess;
  const char* firstApi = "";
  for (const RealIssue& i : issues) {
    ncclResult_t r = issueOne(*i.call, i.real, i.op);
    if (r != ncclSuccess && r != ncclInProgress && first == ncclSuccess) {
      first = r;
      firstApi = collApiName(i.call->kind);
    }
  }
  // Close the group even after a failed call, or the
  // real library's thread state stays inside it.
  rc = callReal<NcclFn::ncclGroupEnd>();
  if (first != ncclSuccess) throwRealFailure(first, strFormat("nccl%s", firstApi).c_str());
  if (rc != ncclSuccess && rc != ncclInProgress) throwRealFailure(rc, "ncclGroupEnd");
  // Nonblocking twins finish the group later: wait for each one once.
  for (size_t k = 0; k < issues.size(); ++k) {
    bool seen = false;
    for (size_t j = 0; j < k; ++j) seen = seen || issues[j].real == issues[k].real;
    if (seen) continue;
    ncclResult_t state = waitRealComm(issues[k].real, "group");
    if (state != ncclSuccess) throwRealFailure(state, "ncclGroupEnd");
  }
}

void FallbackComm::simulateGroup(const std::vector<RealIssue>& issues, ncclSimInfo_t* simInfo) {
  ncclResult_t rc = callReal<NcclFn::ncclGroupStart>();
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclGroupStart");
  ncclResult_t first = ncclSuccess;
  for (const RealIssue& i : issues) {
    ncclResult_t r = issueOne(*i.call, i.real, i.op);
    if (r != ncclSuccess && r != ncclInProgress && first == ncclSuccess) first = r;
  }
  rc = callReal<NcclFn::ncclGroupSimulateEnd>(simInfo);
  if (first != ncclSuccess) throwRealFailure(first, "ncclGroupSimulateEnd");
  if (rc != ncclSuccess && rc != ncclInProgress) throwRealFailure(rc, "ncclGroupSimulateEnd");
}

void FallbackComm::issueOnRealHandle(const CollCall& call, ncclComm_t real) {
  ncclResult_t rc = issueOne(call, real, toEnum<ncclRedOp_t>(call.op));
  if (rc != ncclSuccess && rc != ncclInProgress)
    throwRealFailure(rc, strFormat("nccl%s", collApiName(call.kind)).c_str());
}

ncclResult_t FallbackComm::asyncError() const {
  if (real_ == nullptr) return ncclSuccess;
  ncclResult_t state = ncclSuccess;
  ncclResult_t rc = callReal<NcclFn::ncclCommGetAsyncError>(real_, &state);
  return rc != ncclSuccess ? rc : state;
}

ncclRedOp_t FallbackComm::createPreMulSum(void* scalar, ncclDataType_t dtype, ncclScalarResidence_t residence) {
  ncclRedOp_t op = ncclSum;
  ncclResult_t rc = callReal<NcclFn::ncclRedOpCreatePreMulSum>(&op, scalar, dtype, residence, real_);
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclRedOpCreatePreMulSum");
  return op;
}

void FallbackComm::destroyRedOp(ncclRedOp_t realOp) {
  ncclResult_t rc = callReal<NcclFn::ncclRedOpDestroy>(realOp, real_);
  if (rc != ncclSuccess) throwRealFailure(rc, "ncclRedOpDestroy");
}

ncclResult_t FallbackComm::finalize() {
  if (real_ == nullptr) return ncclSuccess;
  ncclResult_t rc = callReal<NcclFn::ncclCommFinalize>(real_);
  return finishRealCall(rc, real_, "ncclCommFinalize");
}

ncclResult_t FallbackComm::destroy() {
  if (real_ == nullptr) return ncclSuccess;
  ncclComm_t real = real_;
  real_ = nullptr;
  return callReal<NcclFn::ncclCommDestroy>(real);
}

ncclResult_t FallbackComm::abort() {
  if (real_ == nullptr) return ncclSuccess;
  ncclComm_t real = real_;
  real_ = nullptr;
  try {
    return callReal<NcclFn::ncclCommAbort>(real);
  } catch (...) {
    return ncclInternalError;
  }
}

ncclResult_t FallbackComm::revoke() {
  if (real_ == nullptr) return ncclSuccess;
  ncclResult_t rc = callReal<NcclFn::ncclCommRevoke>(real_, NCCL_REVOKE_DEFAULT);
  return finishRealCall(rc, real_, "ncclCommRevoke");
}

}  // namespace mscclpp::shim
