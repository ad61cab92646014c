// The real NCCL's communicator behind one shim communicator: created when ours is (all ranks together, over our
// bootstrap: rank 0 makes the real unique id and broadcasts it, every rank joins), used for every call no plan
// serves, and ended with ours. When the real NCCL cannot build it (no library, no GPU, several ranks on one
// GPU: "Duplicate GPU detected", ...), our communicator still works and a call that needs the fallback fails
// with the recorded reason.
//
// The real communicator is created nonblocking so that its creation, and every later call, can be bounded by
// our deadline (MSCCLPP_TIMEOUT_S) and aborted; a call that returns ncclInProgress is waited for here, so the
// caller always sees NCCL's blocking behaviour.
//
// Threads: like the communicator (one driving thread); asyncError() may be called from any thread.
#ifndef MSCCLPP_NCCL_SHIM_FALLBACK_COMM_HPP_
#define MSCCLPP_NCCL_SHIM_FALLBACK_COMM_HPP_

#include <nccl.h>

#include <atomic>
#include <string>
#include <vector>

#include "coll_call.hpp"
#include "comm_config.hpp"
#include "rank_link.hpp"

namespace mscclpp::shim {

class FallbackComm {
 public:
  FallbackComm() = default;
  ~FallbackComm();
  FallbackComm(const FallbackComm&) = delete;
  FallbackComm& operator=(const FallbackComm&) = delete;

  // Collective over link (every rank calls it right after the rendezvous). Never throws for a failure of the
  // real NCCL (it is recorded); throws only when our own exchange fails.
  void createWithLink(RankLink& link, const CommConfig& config);
  // Collective over the parent's link (every parent rank calls it, NCCL_SPLIT_NOCOLOR ones too).
  void createBySplit(RankLink& parentLink, FallbackComm& parent, int color, int key, const CommConfig& config);
  // Called by the ranks that stay (excluded ranks do not call it); agreement runs over the child's link.
  void createByShrink(FallbackComm& parent, int* excludeRanks, int excludeCount, RankLink& childLink,
                      const CommConfig& config, int shrinkFlags);

  bool available() const { return real_ != nullptr; }
  ncclComm_t real() const { return real_; }
  const std::string& unavailableReason() const { return reason_; }

  // Throws Error(NotSupported) naming why the fallback cannot serve what (e.g. "no plan for allreduce, ...").
  [[noreturn]] void throwUnavailable(const char* opName, const std::string& whyNoPlan) const;

  // Issues one call on the real communicator (op already translated), waiting out ncclInProgress.
  void issue(const CollCall& call, ncclRedOp_t realOp);
  // Issues several calls (of several communicators) inside one real group.
  struct RealIssue {
    const CollCall* call;
    ncclComm_t real;
    ncclRedOp_t op;
  };
  static void issueGroup(const std::vector<RealIssue>& issues);
  // ncclGroupSimulateEnd over issues: the real NCCL estimates, nothing is launched.
  static void simulateGroup(const std::vector<RealIssue>& issues, ncclSimInfo_t* simInfo);
  // Issues call on a communicator of the real NCCL that reached a shim entry point (op untranslated).
  static void issueOnRealHandle(const CollCall& call, ncclComm_t real);

  // The real communicator's asynchronous error (ncclSuccess when there is none). Any thread.
  ncclResult_t asyncError() const;

  ncclRedOp_t createPreMulSum(void* scalar, ncclDataType_t dtype, ncclScalarResidence_t residence);
  void destroyRedOp(ncclRedOp_t realOp);

  // Teardown; each returns the real NCCL's result (errors are recorded, not thrown).
  ncclResult_t finalize();
  ncclResult_t destroy();
  ncclResult_t abort();
  ncclResult_t revoke();

 private:
  // Agreement: every rank learns whether all ranks have a working real communicator; if one does not, the
  // others drop theirs (a partial real communicator would hang the first collective).
  void agree(RankLink& link, bool localOk, const std::string& localReason);
  void waitUntilReady(const char* what);

  ncclComm_t real_ = nullptr;
  std::string reason_ = "the real NCCL communicator was not created";
};

// Waits until the real communicator has finished its current operation (ncclInProgress gone) within the
// deadline; returns its final state.
ncclResult_t waitRealComm(ncclComm_t real, const char* what);

// The real NCCL's result as an exception carrying its last error text.
[[noreturn]] void throwRealFailure(ncclResult_t rc, const char* what);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_FALLBACK_COMM_HPP_
