// The link of a one-rank communicator. NCCL allows nranks == 1 (PyTorch's world size 1 uses it); there is no
// peer to rendezvous with, so no bootstrap is started and every exchange is a local no-op.
#include <atomic>

#include "core/enforce.hpp"
#include "rank_link.hpp"

namespace mscclpp::shim {

namespace {

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
  bool planRunBlocksHost() const override { return false; }
  void flush() override {}

 private:
  void checkLive(const char* what) {
    MSCCLPP_ENFORCE(!aborted_.load(), ErrorCode::Aborted, "%s on an aborted communicator", what);
  }
  std::atomic<bool> aborted_{false};
};

class SoloConnector final : public LinkConnector {
 public:
  std::unique_ptr<RankLink> connect(const ncclUniqueId&) override {
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
