// What one rank of a shim communicator needs from the runtime below it: the bootstrap (rendezvous from the
// unique id, and small host-side exchanges among the ranks: the real NCCL's id, split colors, agreement on the
// fallback) and the executor (running a plan). rank_link.cc implements it over runtime/bootstrap, comm and
// executor; a one-rank communicator needs no network at all (SoloLink).
//
// Every exchange has a deadline (MSCCLPP_TIMEOUT_S) and throws an Error naming the operation and the peers it
// waited for; after abort() every call throws Error(Aborted) at once.
//
// Threads: one thread uses a link at a time (the communicator's rules), except abort() and
// interruptInflight(), which any thread may call at any time.
#ifndef MSCCLPP_NCCL_SHIM_RANK_LINK_HPP_
#define MSCCLPP_NCCL_SHIM_RANK_LINK_HPP_

#include <nccl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "coll_call.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::shim {

// A plan chosen for a call. Copying it copies a reference (no allocation); it keeps the runtime's selection
// alive, so it stays valid even if the plan is unregistered meanwhile. Empty: no plan.
struct PlanChoice {
  const char* name = "";
  std::shared_ptr<const void> selection;  // the runtime's selection object (RankLink implementation's type)
  explicit operator bool() const { return selection != nullptr; }
};

// What running a plan came to, as a value (decisions are values, not exceptions: abseil's StatusOr): the plan ran
// (enqueued on the GPU, completed on the CPU), or it refused the call, with the reason, and the caller runs the call
// on NCCL instead. A plan refuses before any rank exchanged anything, from facts every rank shares (the plan, the
// sizes, dtype and op, the build), so all ranks of a communicator refuse together. A failure while running (a peer
// gone, a timeout, an abort) is an error, thrown, never a refusal.
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

// The reduction the executor applies, with user (PreMulSum) ops resolved to their scalar.
struct ExecReduceOp {
  ncclRedOp_t builtin = ncclSum;  // ncclSum..ncclAvg; for PreMulSum: ncclSum with a pre-multiplier
  bool preMul = false;
  const void* scalarPtr = nullptr;    // device (or, on the CPU backend, host) pointer, read when the plan runs
  unsigned char scalarBytes[8] = {};  // the scalar when it was given as a host immediate
  bool scalarIsPtr = false;
};

class RankLink {
 public:
  virtual ~RankLink() = default;

  virtual int rank() const = 0;
  virtual int nRanks() const = 0;
  virtual int nRanksPerNode() const = 0;

  // allData holds nRanks slots of bytesPerRank; this rank's slot is filled on entry, every slot on return.
  virtual void allGather(void* allData, size_t bytesPerRank) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Point-to-point messages between two ranks of this link, matched in order per (peer, tag).
  virtual void send(int peer, int tag, const void* data, size_t bytes) = 0;
  virtual void recv(int peer, int tag, void* data, size_t bytes) = 0;

  // Collective over this link's ranks (ncclCommSplit): ranks with the same color get a link of their own,
  // ranked by key then by rank here; a negative color returns nullptr (the rank still takes part).
  virtual std::unique_ptr<RankLink> split(int color, int key) = 0;

  // Whether the communicator failed as a whole (a peer died or became unreachable: RemoteError; mismatched
  // calls or a deadlock), with the error; one atomic load when it did not. Any thread.
  virtual bool failed(ErrorCode* code, std::string* message) const = 0;

  // Stops everything promptly, even with peers gone; later calls throw Error(Aborted).
  virtual void abort() = 0;
  // Makes an executing plan return with Error(Aborted) soon (revoke); the bootstrap stays usable.
  virtual void interruptInflight() = 0;

  // This rank's own plan for a request, or an empty choice with the reason in *why (why may be nullptr).
  virtual PlanChoice selectPlan(const CollCall& call, std::string* why) = 0;
  // The plan every rank of the communicator runs for the call (plan_agreement.hpp): cached per call shape, or this
  // rank's choice (none when forcedReason is given: MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION) agreed with every rank
  // (collective: the first call of a shape, and after the plan registry changed). The default, for links whose
  // ranks cannot disagree (one rank), is this rank's choice.
  virtual PlanChoice agreedPlan(const CollCall& call, const char* forcedReason, std::string* why) {
    if (forcedReason) {
      if (why) *why = forcedReason;
      return PlanChoice();
    }
    return selectPlan(call, why);
  }
  // Whether agreedPlan(call) answers without talking to the other ranks (group planning runs the agreements of
  // several communicators driven by one thread concurrently).
  virtual bool planAgreed(const CollCall&) { return true; }
  // Runs the plan for call (enqueued on call.stream on the GPU; completed before returning on the CPU), or returns
  // the plan's refusal of the call (PlanRun). Throws on a failure while running.
  virtual PlanRun runPlan(const PlanChoice& plan, const CollCall& call, const ExecReduceOp& op) = 0;
  // True when runPlan(plan, call, op) returns only after peers took part: always on the CPU backend (it
  // completes the plan), on the CUDA backend when the call first builds its execution context (a collective
  // exchange). One thread driving several ranks must then run them on separate threads.
  virtual bool planRunWaitsForPeers(const PlanChoice& plan, const CollCall& call, const ExecReduceOp& op) const = 0;
  // Waits until every plan this link started has completed (ncclCommFinalize).
  virtual void flush() = 0;
};

// A fresh unique id for our bootstrap (the root's address and a secret), 128 bytes like NCCL's.
ncclUniqueId createLinkUniqueId();

// One rendezvous in progress. connect() blocks until every rank arrived or the deadline passed; abort(), from
// any thread, makes it throw Error(Aborted) at once (ncclCommAbort during a nonblocking init).
class LinkConnector {
 public:
  virtual ~LinkConnector() = default;
  virtual std::unique_ptr<RankLink> connect(const ncclUniqueId& id) = 0;
  virtual void abort() = 0;
};

// A connector for rank of nRanks (a one-rank communicator needs no network: its connector returns a SoloLink).
std::unique_ptr<LinkConnector> makeLinkConnector(int nRanks, int rank);

// makeLinkConnector(nRanks, rank)->connect(id), for callers that never abort.
std::unique_ptr<RankLink> connectLink(const ncclUniqueId& id, int nRanks, int rank);

// The link of a one-rank communicator: exchanges are local copies; no plan (plans need at least two ranks).
std::unique_ptr<RankLink> makeSoloLink();
std::unique_ptr<LinkConnector> makeSoloConnector();

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_RANK_LINK_HPP_
