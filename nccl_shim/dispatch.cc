#include "dispatch.hpp"

#include <algorithm>
#include <functional>
#include <memory>

#include "alltoallv_group.hpp"
#include "comm.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "group.hpp"
#include "guard.hpp"
#include "real_nccl.hpp"

namespace mscclpp::shim {

namespace {

constexpr const char* kForcedReason = "forced by MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION";

// The plan every rank runs for call, or none, with the reason in
// *why. Every rank agrees on the first call of each shape
// (plan_agreement.hpp); later calls hit the cache.
PlanChoice choosePlan(const CollCall& call, std::string* why) {
  Comm& comm = *call.comm;
  if (isP2p(call.kind)) {
    if (why)
      *why = strFormat("%s to/from rank %d is not part of a pattern plans serve", collPlanName(call.kind), call.root);
    return PlanChoice();
  }
  return comm.link().agreedPlan(call, comm.routes().forced(call.kind) ? kForcedReason : nullptr, why);
}

ExecReduceOp execOpFor(const Comm& comm, const CollCall& call) {
  if (call.op < static_cast<int>(ncclNumOps)) {
    ExecReduceOp e;
    e.builtin = toEnum<ncclRedOp_t>(call.op);
    return e;
  }
  const UserRedOp* user = comm.redOps().find(call.op);
  MSCCLPP_ENFORCE(user != nullptr, ErrorCode::InvalidArgument,
                  "%s : reduction operation %d unknown to this communicator", collApiName(call.kind), call.op);
  return user->exec;
}

ncclRedOp_t realOpFor(const Comm& comm, const CollCall& call) {
  if (!isReduction(call.kind) || call.op < static_cast<int>(ncclNumOps)) return toEnum<ncclRedOp_t>(call.op);
  const UserRedOp* user = comm.redOps().find(call.op);
  MSCCLPP_ENFORCE(user != nullptr && user->hasRealOp, ErrorCode::NotSupported,
                  "%s : reduction operation %d has no counterpart in the real NCCL (created while the fallback was "
                  "unavailable: %s)",
                  collApiName(call.kind), call.op, comm.fallback().unavailableReason().c_str());
  return user->realOp;
}

// Runs call on plan and counts it. On a refusal nothing ran or counted.
PlanRun runOnPlan(const PlanChoice& plan, const CollCall& call) {
  // A plan may log, and fail, from its own threads: name the rank.
  ScopedLogRank logRank(call.comm->rank());
  Comm& comm = *call.comm;
  PlanRun run = comm.link().runPlan(plan, call, execOpFor(comm, call));
  if (run.wasRefused()) return run;
  uint64_t bytes = planMessageBytes(call, comm.nRanks());
  const CommStats::Via via = plan.native ? CommStats::Via::Native : CommStats::Via::Plan;
  if (call.kind == CollKind::SendRecv) {
    comm.stats().record(CollKind::Send, bytes, via);
    comm.stats().record(CollKind::Recv, bytes, via);
  } else {
    comm.stats().record(call.kind, bytes, via);
  }
  MSCCLPP_INFO(LogShim, "%s %s ran: %s", plan.kind, plan.name, describeCall(call, comm.nRanks(), comm.rank()).c_str());
  return run;
}

// Why call goes to NCCL, for the log line and for the
// error when there is no fallback. Built only when needed.
std::string fallbackReason(const CollCall& call) {
  std::string why;
  (void)choosePlan(call, &why);
  return why;
}

// why: a reason that is not the call's own, such as a plan's refusal.
void runOnNccl(const CollCall& call, const std::string* why = nullptr) {
  Comm& comm = *call.comm;
  if (!comm.fallback().available()) {
    comm.fallback().throwUnavailable(collApiName(call.kind), why ? *why : fallbackReason(call));
  }
  if (call.kind == CollKind::SendRecv) {
    // An exchange whose plan refused it: its two calls, in one real group.
    CollCall send = call, recv = call;
    send.kind = CollKind::Send;
    send.recvbuff = nullptr;
    recv.kind = CollKind::Recv;
    recv.sendbuff = nullptr;
    FallbackComm::issueGroup({{&send, comm.fallback().real(), ncclSum}, {&recv, comm.fallback().real(), ncclSum}});
    comm.stats().record(CollKind::Send, planMessageBytes(call, comm.nRanks()), CommStats::Via::Nccl);
    comm.stats().record(CollKind::Recv, planMessageBytes(call, comm.nRanks()), CommStats::Via::Nccl);
  } else {
    comm.fallback().issue(call, realOpFor(comm, call));
    comm.stats().record(call.kind, planMessageBytes(call, comm.nRanks()), CommStats::Via::Nccl);
  }
  if (logEnabled(LogLevel::Info, LogShim)) {
    ScopedLogRank logRank(comm.rank());
    MSCCLPP_INFO(LogShim, "NCCL ran because %s", why ? why->c_str() : fallbackReason(call).c_str());
  }
}

// The plan, or NCCL when the plan refuses the call.
// A refusal comes from facts every rank shares,
// before any exchange: all ranks turn together.
void runOnPlanOrNccl(const PlanChoice& plan, const CollCall& call) {
  const PlanRun run = runOnPlan(plan, call);
  if (!run.wasRefused()) return;
  const std::string why = strFormat("%s %s cannot serve this call: %s", plan.kind, plan.name, run.refusal().c_str());
  runOnNccl(call, &why);
}

void runSingle(const CollCall& call) {
  // NCCL drops empty collectives. Empty sends and receives still match.
  if (call.count == 0 && !isP2p(call.kind)) {
    MSCCLPP_TRACE(LogShim, "%s of 0 elements: nothing to do", collApiName(call.kind));
    return;
  }
  PlanChoice plan = choosePlan(call, nullptr);
  if (plan) {
    runOnPlanOrNccl(plan, call);
  } else {
    runOnNccl(call);
  }
}

// ---- groups ----

// A communicator's grouped sends and receives that run on an alltoallv plan.
struct GroupedAllToAllV {
  std::vector<CollCall> calls;  // as issued, for NCCL if the plan refuses
  AllToAllVGroup group;
  std::vector<uint64_t> counts;
};

struct GroupItem {
  CollCall call;
  PlanChoice plan;                                    // empty: the real NCCL
  std::string why;                                    // a reason not the call's own; set only for INFO
  std::shared_ptr<const GroupedAllToAllV> allToAllV;  // set: plan runs these grouped calls
};

// The two-rank exchange a communicator's grouped calls form, if any.
bool exchangeOf(const std::vector<CollCall>& ops, Comm* comm, CollCall* exchange) {
  std::vector<const CollCall*> p2p;
  for (const CollCall& c : ops) {
    if (c.comm == comm && isP2p(c.kind)) p2p.push_back(&c);
  }
  return !p2p.empty() && matchTwoRankExchange(p2p, comm->rank(), comm->nRanks(), exchange);
}

// Whether a communicator's group calls include a shape not agreed yet.
bool needsAgreement(const std::vector<CollCall>& ops, Comm* comm) {
  for (const CollCall& c : ops) {
    if (c.comm == comm && !isP2p(c.kind) && c.count != 0 && !comm->link().planAgreed(c)) return true;
  }
  CollCall exchange;
  return exchangeOf(ops, comm, &exchange) && !comm->link().planAgreed(exchange);
}

// One thread may drive several ranks, as ncclCommInitAll does.
// One rank's agreement waits for the others, so each communicator
// agrees on its calls on a thread of its own, in the order of its
// calls. The plan pass then finds every decision cached.
void agreeConcurrently(std::vector<CollCall>& ops) {
  std::vector<Comm*> comms;
  bool needed = false;
  for (const CollCall& c : ops) {
    bool seen = false;
    for (Comm* d : comms) seen = seen || d == c.comm;
    if (!seen) {
      comms.push_back(c.comm);
      needed = needed || needsAgreement(ops, c.comm);
    }
  }
  if (comms.size() < 2 || !needed) return;
  std::vector<std::function<void()>> jobs;
  for (Comm* comm : comms) {
    jobs.push_back([&ops, comm] {
      ScopedLogRank logRank(comm->rank());
      for (const CollCall& c : ops) {
        if (c.comm == comm && !isP2p(c.kind) && c.count != 0) (void)choosePlan(c, nullptr);
      }
      CollCall exchange;
      if (exchangeOf(ops, comm, &exchange)) {
        (void)comm->link().agreedPlan(exchange, comm->routes().forced(CollKind::SendRecv) ? kForcedReason : nullptr,
                                      nullptr);
      }
    });
  }
  runConcurrently(jobs);
}

// A communicator's grouped sends and receives, as an all-to-all(v) decision.
struct AllToAllVTurn {
  Comm* comm = nullptr;
  std::vector<const CollCall*> calls;
  AllToAllVDecision decision;
  bool decided = false;
};

// Every communicator's grouped sends and receives that could be an all-to-all(v)
// (alltoallv_group.hpp) are decided with its peers, each communicator on a
// thread of its own when one thread drives several ranks. Throws a mismatch.
std::vector<AllToAllVTurn> decideAllToAllVs(const std::vector<CollCall>& ops) {
  std::vector<AllToAllVTurn> turns;
  for (const CollCall& c : ops) {
    if (!isP2p(c.kind)) continue;
    auto it = std::find_if(turns.begin(), turns.end(), [&](const AllToAllVTurn& t) { return t.comm == c.comm; });
    if (it == turns.end()) {
      turns.push_back(AllToAllVTurn());
      turns.back().comm = c.comm;
      it = turns.end() - 1;
    }
    it->calls.push_back(&c);
  }
  std::vector<std::function<void()>> jobs;
  for (AllToAllVTurn& t : turns) {
    Comm& comm = *t.comm;
    CollCall exchange;
    if (comm.nRanks() < 2 || comm.routes().forced(CollKind::Send) || comm.routes().forced(CollKind::Recv) ||
        matchTwoRankExchange(t.calls, comm.rank(), comm.nRanks(), &exchange) ||
        !allToAllVPlansRegistered(comm.nRanks()))
      continue;
    jobs.push_back([&t] {
      ScopedLogRank logRank(t.comm->rank());
      const AllToAllVGroup group = readAllToAllVGroup(t.calls, t.comm->rank(), t.comm->nRanks());
      t.decision = decideAllToAllV(t.comm->link(), group);
      t.decided = true;
    });
  }
  runConcurrently(jobs);
  return turns;
}

// Decides every queued call: collectives one by one,
// and each communicator's sends and receives together.
void planGroup(std::vector<CollCall>& ops, std::vector<GroupItem>* items) {
  agreeConcurrently(ops);
  const std::vector<AllToAllVTurn> allToAllVs = decideAllToAllVs(ops);
  items->clear();
  // Scratch reused by this thread's later groups: a steady stream of
  // groups allocates nothing. p2pDone: communicators already decided.
  thread_local std::vector<Comm*> p2pDone;
  thread_local std::vector<const CollCall*> mine;
  p2pDone.clear();
  for (size_t i = 0; i < ops.size(); ++i) {
    const CollCall& c = ops[i];
    if (!isP2p(c.kind)) {
      if (c.count == 0) continue;
      items->push_back({c, choosePlan(c, nullptr), std::string()});
      continue;
    }
    bool done = false;
    for (Comm* d : p2pDone) done = done || d == c.comm;
    if (done) continue;
    p2pDone.push_back(c.comm);
    mine.clear();
    for (size_t j = i; j < ops.size(); ++j) {
      if (isP2p(ops[j].kind) && ops[j].comm == c.comm) mine.push_back(&ops[j]);
    }
    CollCall exchange;
    PlanChoice plan;
    std::string why;
    std::string* whyPtr = logEnabled(LogLevel::Info, LogShim) ? &why : nullptr;
    for (const AllToAllVTurn& t : allToAllVs) {
      if (t.comm != c.comm || !t.decided) continue;
      if (t.decision.onPlan) {
        auto a2av = std::make_shared<GroupedAllToAllV>();
        for (const CollCall* p : mine) a2av->calls.push_back(*p);
        a2av->group = readAllToAllVGroup(mine, c.comm->rank(), c.comm->nRanks());
        a2av->counts = t.decision.counts;
        items->push_back({c, t.decision.plan, std::string(), std::move(a2av)});
      } else {
        why = "grouped sends and receives: " + t.decision.why;
      }
    }
    if (!items->empty() && items->back().allToAllV && items->back().call.comm == c.comm) continue;
    bool exchangeFound = matchTwoRankExchange(mine, c.comm->rank(), c.comm->nRanks(), &exchange);
    if (exchangeFound) {
      // Agreed like a collective: the peer found the same exchange.
      const bool forced = c.comm->routes().forced(CollKind::SendRecv);
      plan = c.comm->link().agreedPlan(exchange, forced ? kForcedReason : nullptr, whyPtr);
      if (whyPtr && !plan) why = "a two-rank exchange: " + why;
    }
    if (plan) {
      items->push_back({exchange, plan, std::string()});
    } else {
      for (const CollCall* p : mine) items->push_back({*p, PlanChoice(), why});
    }
  }
}

// Grouped sends and receives on their alltoallv plan; on NCCL in one real group if it refuses.
void runAllToAllV(const GroupItem& item) {
  const GroupedAllToAllV& a = *item.allToAllV;
  Comm& comm = *item.call.comm;
  ScopedLogRank logRank(comm.rank());
  const PlanRun run = comm.link().runAllToAllVPlan(item.plan, a.group.sendBase, a.group.recvBase, a.counts,
                                                   a.group.dtype, a.group.stream);
  if (run.wasRefused()) {
    const std::string why =
        strFormat("plan %s cannot serve these grouped sends and receives: %s", item.plan.name, run.refusal().c_str());
    if (!comm.fallback().available()) comm.fallback().throwUnavailable("AlltoAllv", why);
    std::vector<FallbackComm::RealIssue> issues;
    for (const CollCall& c : a.calls) issues.push_back({&c, comm.fallback().real(), ncclSum});
    FallbackComm::issueGroup(issues);
    for (const CollCall& c : a.calls)
      comm.stats().record(c.kind, planMessageBytes(c, comm.nRanks()), CommStats::Via::Nccl);
    MSCCLPP_INFO(LogShim, "NCCL ran because %s", why.c_str());
    return;
  }
  for (const CollCall& c : a.calls)
    comm.stats().record(c.kind, planMessageBytes(c, comm.nRanks()), CommStats::Via::Plan);
  MSCCLPP_INFO(LogShim, "plan %s ran: alltoallv of %zu grouped sends and receives, %d ranks, %s", item.plan.name,
               a.calls.size(), comm.nRanks(), dtypeName(a.group.dtype));
}

void runItem(const GroupItem& item) {
  if (item.allToAllV) {
    runAllToAllV(item);
  } else {
    runOnPlanOrNccl(item.plan, item.call);
  }
}

void runPlanSegment(std::vector<GroupItem>& items, size_t begin, size_t end) {
  std::vector<Comm*> comms;
  bool waits = false;
  for (size_t i = begin; i < end; ++i) {
    Comm* c = items[i].call.comm;
    bool seen = false;
    for (Comm* d : comms) seen = seen || d == c;
    if (!seen) comms.push_back(c);
    // An all-to-all-v may build its context, a collective step.
    waits = waits || items[i].allToAllV ||
            c->link().planRunWaitsForPeers(items[i].plan, items[i].call, execOpFor(*c, items[i].call));
  }
  if (comms.size() == 1 || !waits) {
    // Every call only enqueues, as on CUDA with contexts
    // built. Run them in order, on this thread.
    for (size_t i = begin; i < end; ++i) runItem(items[i]);
    return;
  }
  // One thread drives several ranks whose calls only
  // return together. CPU plans do, and so does a CUDA
  // call that builds its context with the other ranks.
  // Each rank's calls run on a thread of their own.
  std::vector<std::function<void()>> jobs;
  for (Comm* c : comms) {
    jobs.push_back([&items, begin, end, c] {
      ScopedLogRank logRank(c->rank());
      for (size_t i = begin; i < end; ++i) {
        if (items[i].call.comm == c) runItem(items[i]);
      }
    });
  }
  runConcurrently(jobs);
}

const std::vector<FallbackComm::RealIssue>& realIssues(std::vector<GroupItem>& items, size_t begin, size_t end) {
  thread_local std::vector<FallbackComm::RealIssue> issues;
  issues.clear();
  for (size_t i = begin; i < end; ++i) {
    const CollCall& c = items[i].call;
    if (!c.comm->fallback().available()) c.comm->fallback().throwUnavailable(collApiName(c.kind), fallbackReason(c));
    issues.push_back({&c, c.comm->fallback().real(), realOpFor(*c.comm, c)});
  }
  return issues;
}

void runNcclSegment(std::vector<GroupItem>& items, size_t begin, size_t end) {
  FallbackComm::issueGroup(realIssues(items, begin, end));
  for (size_t i = begin; i < end; ++i) {
    const CollCall& c = items[i].call;
    c.comm->stats().record(c.kind, planMessageBytes(c, c.comm->nRanks()), CommStats::Via::Nccl);
    if (logEnabled(LogLevel::Info, LogShim)) {
      ScopedLogRank logRank(c.comm->rank());
      MSCCLPP_INFO(LogShim, "NCCL ran because %s",
                   items[i].why.empty() ? fallbackReason(c).c_str() : items[i].why.c_str());
    }
  }
}

}  // namespace

bool matchTwoRankExchange(const std::vector<const CollCall*>& p2p, int rank, int nRanks, CollCall* exchange) {
  if (nRanks != 2 || p2p.size() != 2) return false;
  const CollCall* send = nullptr;
  const CollCall* recv = nullptr;
  for (const CollCall* c : p2p) {
    if (c->kind == CollKind::Send && send == nullptr) send = c;
    if (c->kind == CollKind::Recv && recv == nullptr) recv = c;
  }
  if (send == nullptr || recv == nullptr) return false;
  const int peer = 1 - rank;
  // Only facts the peer sees mirrored enter the choice, never
  // local ones such as streams: both ranks then decide alike.
  if (send->root != peer || recv->root != peer || send->count != recv->count || send->dtype != recv->dtype ||
      send->count == 0) {
    return false;
  }
  *exchange = *send;
  exchange->kind = CollKind::SendRecv;
  exchange->sendbuff = send->sendbuff;
  exchange->recvbuff = recv->recvbuff;
  exchange->root = peer;
  // The plan runs on the send's stream. The caller
  // orders a recv on another stream after it.
  exchange->stream = send->stream;
  return true;
}

std::string describeCall(const CollCall& c, int nRanks, int rank) {
  std::string s = strFormat("%s, %d ranks, %s, %s", collPlanName(c.kind), nRanks,
                            formatBytes(planMessageBytes(c, nRanks)).c_str(), dtypeName(c.dtype));
  if (isReduction(c.kind)) s += strFormat(", %s", redOpName(c.op));
  if (hasRoot(c.kind)) s += strFormat(", root %d", c.root);
  if (isP2p(c.kind) || c.kind == CollKind::SendRecv) s += strFormat(", peer %d", c.root);
  if (!isP2p(c.kind) && isInPlace(c, rank)) s += ", in-place";
  return s;
}

ncclResult_t submitCall(CollCall call, ncclComm_t handle) noexcept {
  GroupState& group = threadGroup();
  Comm* comm = nullptr;
  try {
    if (isRealNcclComm(handle)) {
      // A communicator of the real NCCL: serve it unchanged.
      FallbackComm::issueOnRealHandle(call, handle);
      return ncclSuccess;
    }
    comm = checkComm(handle, collApiName(call.kind));
    comm->ensureReady(collApiName(call.kind));
    call.comm = comm;
    checkCallArgs(call, *comm);
    if (group.active()) {
      group.addOp(call);
      return ncclSuccess;
    }
    InflightScope inflight(comm);
    runSingle(call);
    return ncclSuccess;
  } catch (...) {
    // The warning names the rank, as error and INFO lines do.
    int logRankValue = comm != nullptr && comm->hasValidMagic() ? comm->rank() : -1;
    ScopedLogRank logRank(logRankValue);
    ncclResult_t r = detail::handleCurrentException();
    if (comm != nullptr && comm->hasValidMagic()) comm->stats().recordFailure(call.kind);
    if (group.active()) group.latch(r);
    // As in NCCL, a failed call poisons a nonblocking
    // communicator. The caller polls for the error.
    if (comm != nullptr && comm->hasValidMagic() && !comm->config().blocking()) comm->recordCallFailure(r);
    return r;
  }
}

void runGroupOps(std::vector<CollCall>& ops) {
  thread_local std::vector<GroupItem> items;
  planGroup(ops, &items);
  // The group's communicators are busy until it is issued: abort waits.
  thread_local std::vector<Comm*> busyComms;
  busyComms.clear();
  struct Busy {
    std::vector<Comm*>& comms;
    ~Busy() {
      for (Comm* c : comms) c->leaveCall();
      comms.clear();
    }
  } busy{busyComms};
  for (const GroupItem& it : items) {
    bool seen = false;
    for (Comm* c : busy.comms) seen = seen || c == it.call.comm;
    if (!seen) {
      it.call.comm->enterCall();
      busy.comms.push_back(it.call.comm);
    }
  }
  size_t i = 0;
  try {
    while (i < items.size()) {
      size_t j = i;
      bool plan = static_cast<bool>(items[i].plan);
      while (j < items.size() && static_cast<bool>(items[j].plan) == plan) ++j;
      if (plan) {
        runPlanSegment(items, i, j);
      } else {
        runNcclSegment(items, i, j);
      }
      i = j;
    }
  } catch (...) {
    // The group end returns the error. The failing
    // segment's calls and all later ones count as failed.
    for (size_t k = i; k < items.size(); ++k) items[k].call.comm->stats().recordFailure(items[k].call.kind);
    items.clear();
    throw;
  }
  items.clear();
}

void simulateGroupOps(std::vector<CollCall>& ops, ncclSimInfo_t* simInfo) {
  std::vector<GroupItem> items;
  planGroup(ops, &items);
  size_t onPlans = 0;
  const char* first = nullptr;
  for (const GroupItem& it : items) {
    if (it.plan) {
      ++onPlans;
      if (first == nullptr) first = it.plan.name;
    }
  }
  MSCCLPP_ENFORCE(onPlans == 0, ErrorCode::InvalidUsage,
                  "ncclGroupSimulateEnd : %zu of the group's %zu operations would run on MSCCL++ plans (the first on "
                  "plan %s), whose time NCCL cannot estimate; nothing was launched",
                  onPlans, items.size(), first ? first : "");
  if (items.empty()) {
    simInfo->estimatedTime = 0.0f;
    return;
  }
  FallbackComm::simulateGroup(realIssues(items, 0, items.size()), simInfo);
}

}  // namespace mscclpp::shim
