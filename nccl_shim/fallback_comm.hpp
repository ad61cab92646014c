// The real NCCL's communicator behind one of ours,
// the twin. It is created with ours, serves every
// call no plan serves, and ends with ours. If the
// real NCCL cannot build it, ours still works.
//
// The twin is nonblocking, so our deadline bounds its
// creation and every call. Calls returning ncclInProgress
// are waited for: callers see NCCL's blocking behaviour.
//
// Threads: one driving thread; asyncError() may be called from any.
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

  // Collective over link, right after the rendezvous.
  // A failure of the real NCCL is recorded; only a
  // failure of our own exchange throws.
  void createWithLink(RankLink& link, const CommConfig& config);
  // Collective over the parent's link:
  // every parent rank, NOCOLOR ones too.
  void createBySplit(RankLink& parentLink, FallbackComm& parent, int color, int key, const CommConfig& config);
  // Called by the ranks that stay; they agree over the child's link.
  void createByShrink(FallbackComm& parent, int* excludeRanks, int excludeCount, RankLink& childLink,
                      const CommConfig& config, int shrinkFlags);

  bool available() const { return real_ != nullptr; }
  ncclComm_t real() const { return real_; }
  const std::string& unavailableReason() const { return reason_; }

  // Throws Error(NotSupported) saying why neither
  // a plan nor the twin can serve the call.
  [[noreturn]] void throwUnavailable(const char* opName, const std::string& whyNoPlan) const;

  // Issues one call on the twin, op already translated, and waits it out.
  void issue(const CollCall& call, ncclRedOp_t realOp);
  // Issues calls of several communicators inside one real group.
  struct RealIssue {
    const CollCall* call;
    ncclComm_t real;
    ncclRedOp_t op;
  };
  static void issueGroup(const std::vector<RealIssue>& issues);
  // ncclGroupSimulateEnd over issues: the
  // real NCCL estimates, nothing runs.
  static void simulateGroup(const std::vector<RealIssue>& issues, ncclSimInfo_t* simInfo);
  // Issues call, op untranslated, on a real communicator that reached us.
  static void issueOnRealHandle(const CollCall& call, ncclComm_t real);

  // The twin's asynchronous error, or ncclSuccess. Any thread.
  ncclResult_t asyncError() const;

  ncclRedOp_t createPreMulSum(void* scalar, ncclDataType_t dtype, ncclScalarResidence_t residence);
  void destroyRedOp(ncclRedOp_t realOp);

  // Teardown. Each returns the real NCCL's result and throws nothing.
  ncclResult_t finalize();
  ncclResult_t destroy();
  ncclResult_t abort();
  ncclResult_t revoke();

 private:
  // Every rank learns whether all ranks have a working twin. If one
  // has none, the others drop theirs: a partial twin would hang.
  // announce: an agreement that ends the creation logs the twin ready.
  void agree(RankLink& link, bool localOk, const std::string& localReason, bool announce = true);
  void waitUntilReady(const char* what);

  ncclComm_t real_ = nullptr;
  std::string reason_ = "the real NCCL communicator was not created";
};

// Waits, within the deadline, until a real communicator
// is no longer ncclInProgress; returns its final state.
ncclResult_t waitRealComm(ncclComm_t real, const char* what);

// Throws the real NCCL's result with its last error text.
[[noreturn]] void throwRealFailure(ncclResult_t rc, const char* what);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_FALLBACK_COMM_HPP_
