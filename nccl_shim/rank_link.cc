// The two RankLinks. RuntimeLink is a TcpBootstrap from
// our unique id, a Communicator on it, the process's
// algorithm registry to choose a DSL plan or a native
// algorithm, and an Executor to run them. SoloLink
// serves a one-rank communicator.
//
// The shim's own messages travel on a bootstrap view
// of their own (withNamespace): they never mix with
// the executor's or the communicator's messages.
#include "rank_link.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "algorithm/algorithm_registry.hpp"
#include "core/enforce.hpp"
#include "core/hash.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/call_descriptor.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/registry.hpp"
#include "plan/variable_sizes.hpp"
#include "plan_agreement.hpp"
#include "real_nccl.hpp"

namespace mscclpp::shim {

namespace {

constexpr const char* kShimNamespace = "nccl-shim";

bool planCollectiveOf(CollKind kind, plan::Collective* out) {
  switch (kind) {
    case CollKind::AllReduce:
      *out = plan::Collective::AllReduce;
      return true;
    case CollKind::AllGather:
      *out = plan::Collective::AllGather;
      return true;
    case CollKind::ReduceScatter:
      *out = plan::Collective::ReduceScatter;
      return true;
    case CollKind::Broadcast:
      *out = plan::Collective::Broadcast;
      return true;
    case CollKind::Reduce:
      *out = plan::Collective::Reduce;
      return true;
    case CollKind::AllToAll:
      *out = plan::Collective::AllToAll;
      return true;
    case CollKind::SendRecv:
      *out = plan::Collective::SendRecv;
      return true;
    case CollKind::Gather:
      *out = plan::Collective::Gather;
      return true;
    case CollKind::Scatter:
      *out = plan::Collective::Scatter;
      return true;
    default:
      return false;  // a lone send or recv has no plan collective
  }
}

ReduceOp executorOp(const ExecReduceOp& op) {
  return op.preMul ? ReduceOp::PreMulSum : static_cast<ReduceOp>(rawEnum(op.builtin));
}

class RuntimeLink final : public RankLink {
 public:
  explicit RuntimeLink(std::shared_ptr<Communicator> comm)
      : comm_(comm),
        control_(comm_->bootstrap()->withNamespace(kShimNamespace)),
        executor_(comm),
        agreement_(control_, comm_->rank(), comm_->size()) {
    std::vector<std::string> hostIds;
    for (int r = 0; r < comm_->size(); ++r) hostIds.push_back(comm_->hostIdOf(r));
    hostOf_ = algo::hostIndexes(hostIds);
    // Our exchange waiting for a live peer has no
    // deadline: a failed communicator ends it.
    std::weak_ptr<Bootstrap> view = control_;
    failureHook_ = comm_->onFailure([view]() {
      if (auto b = view.lock()) b->abort();
    });
  }

  int rank() const override { return comm_->rank(); }
  int nRanks() const override { return comm_->size(); }
  int nRanksPerNode() const override { return comm_->nRanksPerNode(); }

  void allGather(void* allData, size_t bytesPerRank) override { control_->allGather(allData, bytesPerRank); }
  void broadcast(void* data, size_t bytes, int root) override { control_->broadcast(data, bytes, root); }
  void barrier() override { control_->barrier(); }
  void send(int peer, int tag, const void* data, size_t bytes) override { control_->send(data, bytes, peer, tag); }
  void recv(int peer, int tag, void* data, size_t bytes) override { control_->recv(data, bytes, peer, tag); }

  std::unique_ptr<RankLink> split(int color, int key) override {
    std::shared_ptr<Communicator> child = comm_->split(color, key);
    if (!child) return nullptr;
    return std::make_unique<RuntimeLink>(std::move(child));
  }

  bool failed(ErrorCode* code, std::string* message) const override { return comm_->failed(code, message); }
  void leave() override {
    if (auto tcp = std::dynamic_pointer_cast<TcpBootstrap>(comm_->bootstrap())) tcp->leave();
  }

  void abort() override {
    comm_->abort();
    executor_.abort();
  }
  // A plan launch in flight stops at once with
  // Error(Aborted), not at its peers' failure or deadline.
  void interruptInflight() override { executor_.abort(); }

  // The first step that fits: a DSL plan, a native algorithm, else none.
  PlanChoice selectPlan(const CollCall& call, std::string* why) override {
    algo::Request req;
    if (!planCollectiveOf(call.kind, &req.call.collective)) {
      if (why)
        *why =
            strFormat("no plan for %s: plans have no %s collective", collPlanName(call.kind), collPlanName(call.kind));
      return PlanChoice();
    }
    req.call.worldSize = comm_->size();
    req.call.nRanksPerNode = comm_->nRanksPerNode();
    req.call.messageBytes = planMessageBytes(call, comm_->size());
    req.call.inPlace = inPlaceForSelection(call);
    req.call.dtype = call.dtype;
    req.call.redOp = isReduction(call.kind) ? execOpNumber(call) : -1;
    req.call.root = hasRoot(call.kind) ? call.root : -1;
    req.call.rank = comm_->rank();
    req.call.sendBuffer = call.sendbuff;
    req.call.recvBuffer = call.recvbuff;
    req.hostOf = &hostOf_;
    req.backend = executor_.backend();
    req.device = comm_->device();
    if (req.call.collective == plan::Collective::AllToAll && params::plansEnable()) {
      // An all-to-all is an all-to-all-v with equal counts: such a plan is
      // a plan of the first step, ahead of native algorithms.
      plan::SelectionPtr sel = plan::Registry::instance().select(req.call);
      if (!sel->plan) {
        plan::SelectRequest v = req.call;
        v.collective = plan::Collective::AllToAllV;
        v.messageBytes = elementBytes(call);
        v.inPlace = false;
        plan::SelectionPtr variable = plan::Registry::instance().select(v);
        if (variable->plan) return planChoiceOf(variable, why);
      }
    }
    algo::ChoicePtr chosen = algo::AlgorithmRegistry::instance().select(req, plan::Registry::instance());
    if (!*chosen) {
      if (why) *why = chosen->reason;
      return PlanChoice();
    }
    if (why) *why = chosen->reason;
    PlanChoice choice;
    choice.name = chosen->name.c_str();  // lives as long as the choice it holds
    choice.kind = chosen->kindName();
    choice.native = chosen->kind == algo::Choice::Kind::Native;
    choice.selection = chosen;
    return choice;
  }

  PlanChoice agreedPlan(const CollCall& call, const char* forcedReason, std::string* why) override {
    const CallShape shape = shapeOf(call, inPlaceForSelection(call));
    PlanChoice choice;
    if (agreement_.cached(shape, algo::selectionGeneration(), &choice, why)) return choice;
    LocalChoice mine;
    if (forcedReason) {
      mine.why = forcedReason;
    } else {
      mine.plan = selectPlan(call, &mine.why);
      if (mine.plan) {
        const algo::Choice& c = choiceOf(mine.plan);
        // A native algorithm runs in place or not as the call does: ranks that differ disagree.
        mine.fingerprint =
            c.kind == algo::Choice::Kind::Plan ? c.fingerprint : mix64(c.fingerprint, nativeInPlace(c, call) ? 1 : 0);
      }
    }
    // The call monitor counts the agreement as the call's
    // start. A peer already running the call while this
    // rank agrees is then told apart from a late peer:
    // their registries changed at different points.
    plan::Collective collective;
    const bool announced = planCollectiveOf(call.kind, &collective);
    if (announced) {
      executor_.beginAgreement(static_cast<int>(collective), sendBytes(call, comm_->size()),
                               recvBytes(call, comm_->size()), static_cast<DataType>(call.dtype),
                               isReduction(call.kind) ? execOpNumber(call) : -1, hasRoot(call.kind) ? call.root : -1);
    }
    try {
      choice = agreement_.agree(shape, algo::selectionGeneration(), mine, why);
    } catch (const Error& e) {
      if (announced) executor_.endAgreement();
      // A failed communicator aborts the agreement's exchange:
      // report the failure, not the abort it caused.
      comm_->throwIfFailedAfter(e);
      throw;
    } catch (...) {
      if (announced) executor_.endAgreement();
      throw;
    }
    // The real NCCL runs the call: no plan call follows.
    if (announced && !choice) executor_.endAgreement();
    return choice;
  }
  bool planAgreed(const CollCall& call) override {
    PlanChoice ignored;
    return agreement_.cached(shapeOf(call, inPlaceForSelection(call)), algo::selectionGeneration(), &ignored, nullptr);
  }

  PlanRun runPlan(const PlanChoice& choice, const CollCall& call, const ExecReduceOp& op) override {
    const void* scalar = nullptr;
    if (op.preMul) {
      // The executor reads the scalar from host memory when it runs. A
      // device-resident scalar is host memory only on the CPU backend.
      if (op.scalarIsPtr && executor_.backend() != Backend::Cpu) {
        return PlanRun::refused(strFormat("%s %s: a device-resident PreMulSum scalar cannot be read by the host",
                                          choice.kind, choice.name));
      }
      scalar = op.scalarIsPtr ? op.scalarPtr : op.scalarBytes;
    }
    const algo::Choice& c = choiceOf(choice);
    if (c.kind == algo::Choice::Kind::Plan && c.plan->plan->header.variableSizes) return runUniform(choice, call);
    return execute(sendBufferOf(call), call, comm_->size(), c, executorOp(op), scalar);
  }
  bool planRunWaitsForPeers(const PlanChoice& choice, const CollCall& call, const ExecReduceOp& op) const override {
    if (executor_.backend() == Backend::Cpu) return true;
    const int n = comm_->size();
    const algo::Choice& c = choiceOf(choice);
    if (c.kind == algo::Choice::Kind::Native) {
      return executor_.wouldBuildContext(comm_->rank(), sendBufferOf(call), call.recvbuff, sendBytes(call, n),
                                         recvBytes(call, n), static_cast<DataType>(call.dtype), programOf(c, call),
                                         executorOp(op));
    }
    return executor_.wouldBuildContext(comm_->rank(), sendBufferOf(call), call.recvbuff, sendBytes(call, n),
                                       recvBytes(call, n), static_cast<DataType>(call.dtype), c.plan->plan,
                                       executorOp(op));
  }
  PlanChoice selectAllToAllVPlan(const std::vector<uint64_t>& counts, int dtype, std::string* why) override {
    const int n = comm_->size();
    plan::SelectRequest req;
    req.collective = plan::Collective::AllToAllV;
    req.worldSize = n;
    req.nRanksPerNode = comm_->nRanksPerNode();
    if (!plan::variableMessageBytes(n, counts.data(), dtypeSize(dtype), &req.messageBytes)) {
      if (why) *why = "the counts' bytes exceed 2^64";
      return PlanChoice();
    }
    req.dtype = dtype;
    req.rank = comm_->rank();
    return planChoiceOf(plan::Registry::instance().select(req), why);
  }
  PlanRun runAllToAllVPlan(const PlanChoice& choice, const void* send, void* recv, const std::vector<uint64_t>& counts,
                           int dtype, cudaStream_t stream) override {
    const int n = comm_->size();
    uint64_t in = 0, out = 0;
    plan::variableCallBytes(plan::Collective::AllToAllV, n, counts.data(), dtypeSize(dtype), comm_->rank(), &in, &out);
    SplitSizes splits;
    splits.counts = counts.data();
    std::optional<std::string> refusal = executor_.tryExecuteVariable(
        comm_->rank(), send, recv, in, out, static_cast<DataType>(dtype), planOf(choice), splits, stream);
    if (refusal) return PlanRun::refused(std::move(*refusal));
    return PlanRun::ran();
  }

  // The CPU backend completes every plan before execute()
  // returns. The CUDA backend enqueues on the caller's
  // streams, which the caller synchronises: NCCL's
  // ncclCommFinalize does not wait for them either.
  void flush() override {}

 private:
  static const algo::Choice& choiceOf(const PlanChoice& choice) {
    return *static_cast<const algo::Choice*>(choice.selection.get());
  }
  bool nativeInPlace(const algo::Choice& c, const CollCall& call) const {
    return inPlaceForSelection(call) && (c.native->spec().resources & MSCCLPP_ALGORITHM_RUNS_IN_PLACE) != 0;
  }
  // The native algorithm's program for this communicator and call (made once per shape).
  exec::NativeProgramPtr programOf(const algo::Choice& c, const CollCall& call) const {
    return c.native->program(hostOf_, inPlaceForSelection(call), hasRoot(call.kind) ? call.root : 0,
                             executor_.backend());
  }
  // A plan selection as a choice of the first step (all-to-all-v plans,
  // chosen outside the algorithm registry).
  static PlanChoice planChoiceOf(const plan::SelectionPtr& sel, std::string* why) {
    if (why) *why = sel->reason;
    if (!sel->plan) return PlanChoice();
    auto c = std::make_shared<algo::Choice>();
    c->kind = algo::Choice::Kind::Plan;
    c->name = sel->name;
    c->fingerprint = exec::planFingerprint(*sel->plan);
    c->plan = sel;
    c->reason = sel->reason;
    PlanChoice choice;
    choice.name = c->name.c_str();  // lives as long as the choice it holds
    choice.kind = c->kindName();
    choice.selection = std::move(c);
    return choice;
  }
  // The plan of a choice of the first step.
  static const plan::PlanPtr& planOf(const PlanChoice& choice) { return choiceOf(choice).plan->plan; }
  // NCCL ignores a broadcast's sendbuff off the root,
  // where it is often NULL: give the executor a valid one.
  static const void* sendBufferOf(const CollCall& call) {
    return call.kind == CollKind::Broadcast && call.sendbuff == nullptr ? call.recvbuff : call.sendbuff;
  }
  // RuntimeExecutor::tryExecute returns its refusal as a
  // value, so the shim decides on values from here
  // up; exceptions are the call's failures. When no
  // plan runs the agreed call, the call ends here.
  PlanRun execute(const void* send, const CollCall& call, int n, const algo::Choice& choice, ReduceOp op,
                  const void* scalar) {
    struct EndAgreementUnlessRan {
      exec::RuntimeExecutor& executor;
      bool ran = false;
      ~EndAgreementUnlessRan() {
        if (!ran) executor.endAgreement();
      }
    } agreement{executor_};
    std::optional<std::string> refusal =
        choice.kind == algo::Choice::Kind::Native
            ? executor_.tryExecute(comm_->rank(), send, call.recvbuff, sendBytes(call, n), recvBytes(call, n),
                                   static_cast<DataType>(call.dtype), programOf(choice, call), call.stream, op, scalar)
            : executor_.tryExecute(comm_->rank(), send, call.recvbuff, sendBytes(call, n), recvBytes(call, n),
                                   static_cast<DataType>(call.dtype), choice.plan->plan, call.stream, PacketType::LL16,
                                   op, scalar);
    if (refusal) return PlanRun::refused(std::move(*refusal));
    agreement.ran = true;
    return PlanRun::ran();
  }

  // ncclAlltoAll on an alltoallv plan: every count is the call's.
  PlanRun runUniform(const PlanChoice& choice, const CollCall& call) {
    struct EndAgreementUnlessRan {
      exec::RuntimeExecutor& executor;
      bool ran = false;
      ~EndAgreementUnlessRan() {
        if (!ran) executor.endAgreement();
      }
    } agreement{executor_};
    const int n = comm_->size();
    uniformCounts_.assign(static_cast<size_t>(n) * n, call.count);
    SplitSizes splits;
    splits.counts = uniformCounts_.data();
    std::optional<std::string> refusal = executor_.tryExecuteVariable(
        comm_->rank(), call.sendbuff, call.recvbuff, sendBytes(call, n), recvBytes(call, n),
        static_cast<DataType>(call.dtype), planOf(choice), splits, call.stream);
    if (refusal) return PlanRun::refused(std::move(*refusal));
    agreement.ran = true;
    return PlanRun::ran();
  }

  // NCCL's in-place gather and scatter exist only on the root;
  // other ranks often pass NULL for the buffer it compares.
  // Ranks would pick different plans, so every rank asks for
  // an out-of-place one. That serves an in-place root call
  // too: the executor stages the aliased send buffer.
  bool inPlaceForSelection(const CollCall& call) const {
    return (call.kind == CollKind::Gather || call.kind == CollKind::Scatter) ? false : isInPlace(call, comm_->rank());
  }
  // The op as the executor numbers it: every user op is PreMulSum.
  static int execOpNumber(const CollCall& call) {
    return call.op < static_cast<int>(ncclNumOps) ? call.op : static_cast<int>(ReduceOp::PreMulSum);
  }

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Bootstrap> control_;
  std::vector<int32_t> hostOf_;  // per rank: its host's index, for native algorithms
  exec::RuntimeExecutor executor_;
  PlanAgreement agreement_;
  std::shared_ptr<void> failureHook_;
  std::vector<uint64_t> uniformCounts_;  // runUniform's counts, kept between calls
};

}  // namespace

ncclUniqueId createLinkUniqueId() {
  UniqueId uid = TcpBootstrap::createUniqueId();
  static_assert(sizeof(UniqueId) == sizeof(ncclUniqueId), "our unique id must be NCCL's 128 bytes");
  ncclUniqueId id;
  std::memcpy(&id, uid.data(), sizeof(id));
  return id;
}

namespace {

class TcpConnector final : public LinkConnector {
 public:
  TcpConnector(int nRanks, int rank) : bootstrap_(std::make_shared<TcpBootstrap>(rank, nRanks)) {}

  std::unique_ptr<RankLink> connect(const ncclUniqueId& id) override {
    UniqueId uid;
    std::memcpy(uid.data(), &id, sizeof(id));
    try {
      bootstrap_->initialize(uid);
    } catch (const Error& e) {
      // To NCCL's callers, ranks that never reached the rendezvous
      // are unreachable peers, not live peers past a deadline.
      if (e.code() == ErrorCode::Timeout) throw Error(ErrorCode::RemoteError, e.what());
      throw;
    }
    return std::make_unique<RuntimeLink>(std::make_shared<Communicator>(bootstrap_));
  }
  void abort() override { bootstrap_->abort(); }

 private:
  std::shared_ptr<TcpBootstrap> bootstrap_;
};

}  // namespace

std::unique_ptr<LinkConnector> makeLinkConnector(int nRanks, int rank) {
  if (nRanks == 1) return makeSoloConnector();
  return std::make_unique<TcpConnector>(nRanks, rank);
}

std::unique_ptr<RankLink> connectLink(const ncclUniqueId& id, int nRanks, int rank) {
  return makeLinkConnector(nRanks, rank)->connect(id);
}

namespace {

// NCCL allows a one-rank communicator, as PyTorch's
// world size 1 uses. With no peer there is no
// bootstrap, and every exchange does nothing.
class SoloLink final : public RankLink {
 public:
  int rank() const override { return 0; }
  int nRanks() const override { return 1; }
  int nRanksPerNode() const override { return 1; }
  void allGather(void*, size_t) override { checkLive("allGather"); }
  void broadcast(void*, size_t, int root) override {
    checkLive("broadcast");
    MSCCLPP_ENFORCE(root == 0, ErrorCode::InternalError, "broadcast root %d on a one-rank communicator", root);
  }
  void barrier() override { checkLive("barrier"); }
  void send(int peer, int, const void*, size_t) override {
    MSCCLPP_THROW(ErrorCode::InternalError, "send to peer %d on a one-rank communicator", peer);
  }
  void recv(int peer, int, void*, size_t) override {
    MSCCLPP_THROW(ErrorCode::InternalError, "recv from peer %d on a one-rank communicator", peer);
  }
  bool failed(ErrorCode*, std::string*) const override { return false; }  // no peer can fail
  void abort() override { aborted_.store(true); }
  void interruptInflight() override {}
  PlanChoice selectPlan(const CollCall&, std::string* why) override {
    if (why) *why = "a one-rank communicator runs no plans";
    return PlanChoice();
  }
  std::unique_ptr<RankLink> split(int color, int) override {
    checkLive("split");
    return color < 0 ? nullptr : std::make_unique<SoloLink>();
  }
  PlanRun runPlan(const PlanChoice& plan, const CollCall&, const ExecReduceOp&) override {
    MSCCLPP_THROW(ErrorCode::InternalError, "plan %s selected on a one-rank communicator", plan.name);
  }
  bool planRunWaitsForPeers(const PlanChoice&, const CollCall&, const ExecReduceOp&) const override { return false; }
  void flush() override {}

 private:
  void checkLive(const char* what) {
    MSCCLPP_ENFORCE(!aborted_.load(), ErrorCode::Aborted, "%s on an aborted communicator", what);
  }
  std::atomic<bool> aborted_{false};
};

class SoloConnector final : public LinkConnector {
 public:
  std::unique_ptr<RankLink> connect(const ncclUniqueId& id) override {
    // No rank will come to the root ncclGetUniqueId started for this id: end it now, not at its timeout.
    UniqueId uid;
    std::memcpy(uid.data(), &id, sizeof(id));
    TcpBootstrap::stopRoot(uid);
    MSCCLPP_ENFORCE(!aborted_.load(), ErrorCode::Aborted, "the communicator was aborted during its initialization");
    return std::make_unique<SoloLink>();
  }
  void abort() override { aborted_.store(true); }

 private:
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<RankLink> makeSoloLink() { return std::make_unique<SoloLink>(); }

std::unique_ptr<LinkConnector> makeSoloConnector() { return std::make_unique<SoloConnector>(); }

}  // namespace mscclpp::shim
