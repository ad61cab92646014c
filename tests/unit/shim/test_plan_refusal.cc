// The shim's "plan or NCCL" decision is a value: a plan that refuses a call
// (RankLink::runPlan returns PlanRun::refused) sends the call to the real NCCL,
// while an exception from running a plan, NotSupported included, is an error
// and never a fallback. A one-rank communicator over a scripted link and the
// test-double libnccl as the real NCCL.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "comm.hpp"
#include "dispatch.hpp"
#include "mscclpp/errors.hpp"
#include "rank_link.hpp"

using namespace mscclpp;
using namespace mscclpp::shim;

namespace {

// A one-rank link whose plan selection always picks "scripted" and whose runPlan does what the test says.
class ScriptedLink final : public RankLink {
 public:
  enum class Outcome { Run, Refuse, ThrowNotSupported };
  explicit ScriptedLink(Outcome* outcome, int* runs) : outcome_(outcome), runs_(runs) {}

  int rank() const override { return 0; }
  int nRanks() const override { return 1; }
  int nRanksPerNode() const override { return 1; }
  void allGather(void*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
  void send(int, int, const void*, size_t) override {}
  void recv(int, int, void*, size_t) override {}
  std::unique_ptr<RankLink> split(int, int) override { return nullptr; }
  bool failed(ErrorCode*, std::string*) const override { return false; }
  void abort() override {}
  void interruptInflight() override {}
  PlanChoice selectPlan(const CollCall&, std::string*) override {
    PlanChoice choice;
    choice.name = "scripted";
    choice.selection = std::make_shared<int>(0);
    return choice;
  }
  PlanRun runPlan(const PlanChoice&, const CollCall&, const ExecReduceOp&) override {
    ++*runs_;
    switch (*outcome_) {
      case Outcome::Run:
        return PlanRun::ran();
      case Outcome::Refuse:
        return PlanRun::refused("its threadblocks need 2048 threads");
      case Outcome::ThrowNotSupported:
        throw Error(ErrorCode::NotSupported, "not a refusal: thrown while running");
    }
    return PlanRun::ran();
  }
  bool planRunWaitsForPeers(const PlanChoice&, const CollCall&, const ExecReduceOp&) const override { return false; }
  void flush() override {}

 private:
  Outcome* outcome_;
  int* runs_;
};

// The test double's record of NCCL calls (the copy the shim loaded).
int doubleCallsNamed(const char* prefix) {
  void* handle = dlopen(NCCL_DOUBLE_PATH, RTLD_LAZY | RTLD_NOLOAD);
  REQUIRE(handle != nullptr);
  auto count = reinterpret_cast<int (*)()>(dlsym(handle, "ncclDoubleRecordCount"));
  auto record = reinterpret_cast<const char* (*)(int)>(dlsym(handle, "ncclDoubleRecord"));
  REQUIRE((count != nullptr && record != nullptr));
  int n = 0;
  for (int i = 0; i < count(); ++i) n += std::string(record(i)).rfind(prefix, 0) == 0;
  dlclose(handle);
  return n;
}

}  // namespace

TEST_CASE("a refusal falls back to NCCL; a throw is an error", "[dispatch]") {
  // The Meson test sets MSCCLPP_NCCL_LIB_PATH to the double (read when the shim first looks for the real NCCL).
  ScriptedLink::Outcome outcome = ScriptedLink::Outcome::Run;
  int runs = 0;
  Comm comm(1, 0, -1, CommConfig::parse(nullptr));
  comm.adoptLink(std::make_unique<ScriptedLink>(&outcome, &runs));
  comm.fallback().createWithLink(comm.link(), comm.config());
  REQUIRE(comm.fallback().available());
  comm.markReady();
  ncclComm_t handle = reinterpret_cast<ncclComm_t>(&comm);

  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  CollCall call;
  call.kind = CollKind::AllReduce;
  call.sendbuff = in.data();
  call.recvbuff = out.data();
  call.count = in.size();
  call.dtype = ncclFloat32;
  call.op = ncclSum;
  const int before = doubleCallsNamed("ncclAllReduce(");

  CHECK(submitCall(call, handle) == ncclSuccess);  // the plan ran: NCCL not called
  CHECK(runs == 1);
  CHECK(doubleCallsNamed("ncclAllReduce(") == before);
  CHECK(comm.stats().get(CollKind::AllReduce).viaPlan == 1);

  outcome = ScriptedLink::Outcome::Refuse;
  CHECK(submitCall(call, handle) == ncclSuccess);  // refused: the real NCCL ran it
  CHECK(runs == 2);
  CHECK(doubleCallsNamed("ncclAllReduce(") == before + 1);
  CHECK(comm.stats().get(CollKind::AllReduce).viaNccl == 1);

  outcome = ScriptedLink::Outcome::ThrowNotSupported;
  CHECK(submitCall(call, handle) == ncclInvalidUsage);  // NCCL's code for NotSupported; no fallback
  CHECK(runs == 3);
  CHECK(doubleCallsNamed("ncclAllReduce(") == before + 1);
  (void)comm.fallback().destroy();
}
