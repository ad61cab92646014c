// What one rank of a shim communicator needs from the
// runtime: the bootstrap, for the rendezvous and small
// exchanges among the ranks, and the executor, which runs
// plans. A one-rank communicator needs no network (SoloLink).
//
// Every exchange has a deadline, MSCCLPP_TIMEOUT_S.
// After abort() every call throws Error(Aborted).
//
// Threads: one thread uses a link at a time, but any thread
// may call abort() and interruptInflight() at any time.
#ifndef MSCCLPP_NCCL_SHIM_RANK_LINK_HPP_
#define MSCCLPP_NCCL_SHIM_RANK_LINK_HPP_

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coll_call.hpp"
#include "core/format.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::shim {

// An algorithm chosen for a call (a DSL plan or a native algorithm), or
// none when empty. A copy shares the runtime's selection without
// allocating, and keeps it alive: the choice stays valid even if the
// algorithm is unregistered meanwhile.
struct PlanChoice {
  const char* name = "";
  const char* kind = "plan";              // "plan" or "native algorithm", as the log says it
  bool native = false;                    // a native algorithm, not a DSL plan
  std::shared_ptr<const void> selection;  // of the RankLink implementation's type
  explicit operator bool() const { return selection != nullptr; }
};

// What running a plan came to, as a value: it ran, or
// it refused the call with a reason, and the caller
// runs the call on NCCL instead. Decisions are
// values, not exceptions, as with abseil's StatusOr.
// A plan refuses before any exchange, from facts
// every rank shares, so all ranks refuse together. A
// failure while running is thrown, never a refusal.
class [[nodiscard]] PlanRun {
 public:
  static PlanRun ran() { return PlanRun(false, std::string()); }
  static PlanRun refused(std::string reason) { return PlanRun(true, std::move(reason)); }

  bool wasRefused() const { return refused_; }
  const std::string& refusal() const { return refusal_; }  // "" when the plan ran

 private:
  PlanRun(bool refused, std::string refusal) : refused_(refused), refusal_(std::move(refusal)) {}
  bool refused_;
  std::string refusal_;
};

// The reduction the executor applies;
// a user op is resolved to its scalar.
struct ExecReduceOp {
  ncclRedOp_t builtin = ncclSum;  // ncclSum..ncclAvg; ncclSum for PreMulSum
  bool preMul = false;
  const void* scalarPtr = nullptr;    // read when the plan runs
  unsigned char scalarBytes[8] = {};  // a scalar given as a host immediate
  bool scalarIsPtr = false;
};

class RankLink {
 public:
  virtual ~RankLink() = default;

  virtual int rank() const = 0;
  virtual int nRanks() const = 0;
  virtual int nRanksPerNode() const = 0;

  // allData holds nRanks slots of bytesPerRank. This
  // rank's slot is filled on entry, every slot on return.
  virtual void allGather(void* allData, size_t bytesPerRank) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Messages between two ranks, matched in order per peer and tag.
  virtual void send(int peer, int tag, const void* data, size_t bytes) = 0;
  virtual void recv(int peer, int tag, void* data, size_t bytes) = 0;

  // Collective over this link's ranks: ranks of one color
  // get a link of their own, ranked by key then by rank
  // here. A negative color takes part and returns nullptr.
  virtual std::unique_ptr<RankLink> split(int color, int key) = 0;

  // Whether the communicator failed as a whole, with the
  // error: a dead peer, a departed one a call needed,
  // mismatched calls, a deadlock. One atomic load; any thread.
  virtual bool failed(ErrorCode* code, std::string* message) const = 0;

  // Stops everything promptly, even with peers gone.
  virtual void abort() = 0;
  // Says goodbye to the peers and closes this rank's bootstrap,
  // which it must own alone, so that their calls fail saying it
  // left; later calls on this link fail. For ncclCommFinalize.
  virtual void leave() {}
  // Makes a running plan return Error(Aborted)
  // soon, for revoke. The bootstrap stays usable.
  virtual void interruptInflight() = 0;

  // This rank's own plan for call, or none with the reason in *why.
  virtual PlanChoice selectPlan(const CollCall& call, std::string* why) = 0;
  // The plan every rank runs for call
  // (plan_agreement.hpp): cached per shape, or agreed with
  // every rank, which is collective. A forcedReason means
  // no plan. The default serves a link with one rank.
  virtual PlanChoice agreedPlan(const CollCall& call, const char* forcedReason, std::string* why) {
    if (forcedReason) {
      if (why) *why = forcedReason;
      return PlanChoice();
    }
    return selectPlan(call, why);
  }
  // Whether agreedPlan(call) answers without talking to other ranks.
  virtual bool planAgreed(const CollCall&) { return true; }
  // Runs the plan for call, or returns its refusal.
  // A GPU run is enqueued on call.stream; a CPU run
  // completes. Throws on a failure while running.
  virtual PlanRun runPlan(const PlanChoice& plan, const CollCall& call, const ExecReduceOp& op) = 0;
  // True when runPlan returns only after peers took
  // part: always on the CPU backend, and on CUDA when
  // the call builds its execution context. One thread
  // driving several ranks must then give each a thread.
  virtual bool planRunWaitsForPeers(const PlanChoice& plan, const CollCall& call, const ExecReduceOp& op) const = 0;
  // Waits until every plan this link started completed, for finalize.
  virtual void flush() = 0;

  // All-to-all-v from grouped sends and receives (alltoallv_group.hpp).
  // This rank's alltoallv plan for counts (n x n elements, row = sender), by its largest segment.
  virtual PlanChoice selectAllToAllVPlan(const std::vector<uint64_t>& counts, int dtype, std::string* why) {
    (void)counts;
    (void)dtype;
    if (why) *why = "this communicator runs no plans";
    return PlanChoice();
  }
  // Runs it with the segments at send and recv, or returns its refusal.
  virtual PlanRun runAllToAllVPlan(const PlanChoice& plan, const void* send, void* recv,
                                   const std::vector<uint64_t>& counts, int dtype, cudaStream_t stream) {
    (void)send;
    (void)recv;
    (void)counts;
    (void)dtype;
    (void)stream;
    return PlanRun::refused(strFormat("plan %s: this communicator runs no plans", plan.name));
  }
};

// A fresh id for our bootstrap: the root's
// address and a secret, in 128 bytes like NCCL's.
ncclUniqueId createLinkUniqueId();

// One rendezvous in progress. connect() blocks until
// every rank arrived or the deadline passed. abort(),
// from any thread, makes it throw Error(Aborted) at
// once: ncclCommAbort during a nonblocking init.
class LinkConnector {
 public:
  virtual ~LinkConnector() = default;
  virtual std::unique_ptr<RankLink> connect(const ncclUniqueId& id) = 0;
  virtual void abort() = 0;
};

// A connector for rank of nRanks; a SoloLink's when nRanks is one.
std::unique_ptr<LinkConnector> makeLinkConnector(int nRanks, int rank);

// makeLinkConnector(nRanks, rank)->connect(id),
// for callers that never abort.
std::unique_ptr<RankLink> connectLink(const ncclUniqueId& id, int nRanks, int rank);

// The link of a one-rank communicator. Exchanges are local,
// and it runs no plan: plans need at least two ranks.
std::unique_ptr<RankLink> makeSoloLink();
std::unique_ptr<LinkConnector> makeSoloConnector();

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_RANK_LINK_HPP_
