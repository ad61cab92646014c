// The object behind every ncclComm_t the shim
// hands out: one rank of one communicator. It owns
// its link to the runtime, its real NCCL twin, its
// user reduce ops, its rules and its counters.
//
// Init, split or shrink creates it InProgress. It becomes ready
// once the rendezvous and the twin are set up, or keeps the error.
//
// Threads: one thread drives a communicator at a time, as in
// NCCL. Any thread may call asyncResult() and asyncError().
#ifndef MSCCLPP_NCCL_SHIM_COMM_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_HPP_

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm_config.hpp"
#include "comm_stats.hpp"
#include "fallback_comm.hpp"
#include "rank_link.hpp"
#include "user_red_ops.hpp"

namespace mscclpp::shim {

// Buffers registered, or made windows, on a communicator
// without a twin. Plans need no registration: the
// executor registers buffers itself. A record only makes
// the matching deregistration valid. With a twin, the
// real NCCL's handles are returned instead.
struct LocalRegistration {
  void* buff = nullptr;
  size_t size = 0;
  bool window = false;
  int winFlags = 0;
};

class LocalRegistrations {
 public:
  LocalRegistration* add(void* buff, size_t size, bool window, int winFlags);
  // Removes handle if it is one of ours of this kind; false otherwise.
  bool remove(const void* handle, bool window);
  bool contains(const void* handle) const;

 private:
  std::vector<std::unique_ptr<LocalRegistration>> records_;
};

class Comm {
 public:
  // Differs from NCCL's comm magic, so a real NCCL comm is recognised.
  static constexpr uint64_t kMagic = 0x4d534343504c5348ull;

  Comm(int nRanks, int rank, int cudaDev, CommConfig config);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  bool hasValidMagic() const { return startMagic_ == kMagic && endMagic_ == kMagic; }

  int rank() const { return rank_; }
  int nRanks() const { return nRanks_; }
  int nRanksPerNode() const { return link_ ? link_->nRanksPerNode() : 1; }
  int cudaDev() const { return cudaDev_; }
  const CommConfig& config() const { return config_; }

  // ---- state ----
  ncclResult_t asyncResult() const { return asyncResult_.load(std::memory_order_acquire); }
  void setAsyncResult(ncclResult_t r) { asyncResult_.store(r, std::memory_order_release); }
  // A failed call on a ready nonblocking communicator
  // becomes its async error, as in NCCL. It never
  // overwrites an init in progress: a call made too
  // early must not race the init's own result.
  void recordCallFailure(ncclResult_t r) {
    ncclResult_t ready = ncclSuccess;
    asyncResult_.compare_exchange_strong(ready, r, std::memory_order_acq_rel);
  }
  // NCCL's ncclCommEnsureReady: throws while the
  // communicator initializes, with NCCL's words, and once
  // it failed, was aborted or was revoked. allowRevoked:
  // split and shrink may use a revoked communicator.
  void ensureReady(const char* opName, bool allowRevoked = false) const;
  // ncclCommGetAsyncError: ours, then the real communicator's.
  ncclResult_t asyncError() const;

  // Joins the rendezvous and builds the fallback, all ranks together.
  // Sets the async result either way; throws on failure too.
  void initialize(const ncclUniqueId& id);
  // A split or shrink child adopts the link it was created with.
  void adoptLink(std::unique_ptr<RankLink> link);
  void markReady();
  void markFailed(ncclResult_t result);

  // Wakes everything blocked on this communicator's
  // network, such as a running rendezvous or a
  // collective waiting for peers. They fail with
  // Error(Aborted). Any thread may call it at any time.
  void abortNetwork();

  // A nonblocking init on a background thread; destroy and abort join it.
  void startBackgroundInit(const ncclUniqueId& id);
  void joinBackgroundInit();

  // True from an init deferred to ncclGroupEnd until that group end.
  bool initDeferred() const { return initDeferred_.load(std::memory_order_acquire); }
  void setInitDeferred(bool v) { initDeferred_.store(v, std::memory_order_release); }

  bool finalized() const { return finalized_; }
  void setFinalized() { finalized_ = true; }
  bool revoked() const { return revoked_.load(std::memory_order_acquire); }
  void setRevoked() { revoked_.store(true, std::memory_order_release); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  void setAborted() { aborted_.store(true, std::memory_order_release); }
  bool destroyStarted() const { return destroyStarted_; }
  void setDestroyStarted() { destroyStarted_ = true; }
  // Marks the object dead: the magic check catches a stale handle.
  void killMagic() { startMagic_ = endMagic_ = 0; }

  // ---- parts ----
  RankLink& link() { return *link_; }
  bool hasLink() const { return link_ != nullptr; }
  FallbackComm& fallback() { return fallback_; }
  const FallbackComm& fallback() const { return fallback_; }
  UserRedOps& redOps() { return redOps_; }
  const UserRedOps& redOps() const { return redOps_; }
  CommStats& stats() { return stats_; }
  LocalRegistrations& registrations() { return registrations_; }
  RouteTable& routes() { return routes_; }

  // Calls running on this communicator now.
  // Abort waits for them before freeing it.
  void enterCall() { inflight_.fetch_add(1, std::memory_order_acq_rel); }
  void leaveCall() { inflight_.fetch_sub(1, std::memory_order_acq_rel); }
  int inflightCalls() const { return inflight_.load(std::memory_order_acquire); }

  // Children created by split or shrink so far. The
  // count tells children apart in the shim's exchanges.
  int nextChildIndex() { return ++childCount_; }
  // A split child and its parent share one bootstrap:
  // finalizing either must not close it for the other.
  bool sharesBootstrap() const { return sharesBootstrap_; }
  void setSharesBootstrap() { sharesBootstrap_ = true; }

 private:
  uint64_t startMagic_ = kMagic;
  int nRanks_;
  int rank_;
  int cudaDev_;
  CommConfig config_;
  std::atomic<ncclResult_t> asyncResult_{ncclInProgress};
  std::atomic<bool> revoked_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<int> inflight_{0};
  std::atomic<bool> initDeferred_{false};
  bool finalized_ = false;
  bool destroyStarted_ = false;
  int childCount_ = 0;
  bool sharesBootstrap_ = false;
  // Guards connector_ and the assignment of
  // link_: abortNetwork races initialize.
  std::mutex connectorMutex_;
  std::unique_ptr<LinkConnector> connector_;
  std::unique_ptr<RankLink> link_;
  FallbackComm fallback_;
  UserRedOps redOps_;
  CommStats stats_;
  RouteTable routes_;
  LocalRegistrations registrations_;
  std::thread initThread_;
  uint64_t endMagic_ = kMagic;
};

inline ncclComm_t toHandle(Comm* c) { return reinterpret_cast<ncclComm_t>(c); }

class InflightScope {
 public:
  explicit InflightScope(Comm* c) : comm_(c) { comm_->enterCall(); }
  ~InflightScope() { comm_->leaveCall(); }
  InflightScope(const InflightScope&) = delete;
  InflightScope& operator=(const InflightScope&) = delete;

 private:
  Comm* comm_;
};

// NCCL's magic at the start of its own communicators.
constexpr uint64_t kRealNcclCommMagic = 0x0280028002800280ull;
// True when handle is a communicator of the real
// NCCL: the real library called us, or the
// application mixes handles. Such calls pass through.
bool isRealNcclComm(ncclComm_t handle);

// NCCL's CommCheck, with NCCL's messages for a NULL handle and
// for a dead or foreign object. Both throw InvalidArgument.
Comm* checkComm(ncclComm_t handle, const char* opName, const char* argName = "comm");

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_COMM_HPP_
