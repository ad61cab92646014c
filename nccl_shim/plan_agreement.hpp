// Every rank of a communicator runs the same plan (or the real NCCL) for the same call (issue 13). A rank's own
// choice can differ from its peers': their plan directories or registrations differ, a plan file is broken in one
// rank's copy only, a user selector answers differently, or one rank calls in place and another does not. So the
// choice is agreed: at the first call of each call shape on a communicator every rank all-gathers its shape and
// its choice (plan name and fingerprint, or none, with its reason) over the shim's bootstrap view and decides
// alike from what all sent: the common plan if every rank chose the same one, else the real NCCL for every rank,
// with one WARN per rank naming each rank's choice and why (a plan skipped as broken names its rank's JSON path).
// Ranks whose shapes differ fail together with InvalidUsage naming both calls (mismatched calls).
//
// The decision is cached per communicator and shape, so later calls cost a hash lookup (cheaper than the
// registry's shared-locked lookup it replaces). The registry's generation() invalidates the cache: the rule for
// plans registered, unregistered or selectors set at run time (Python plan.register, mscclppPlanRegister*) is that
// every rank makes the change at the same point of its sequence of calls on each communicator, like a collective
// call without the communication. The next call of each shape then agrees again on every rank. A rank that
// changes its registry at another point is found by the executor's call monitor (one rank agreeing on a call its
// peer already runs) and every rank fails with InvalidUsage saying so (docs/nccl-shim.md "Ranks agree").
//
// Threads: the communicator's driving thread (NCCL's rule); no lock.
#ifndef MSCCLPP_NCCL_SHIM_PLAN_AGREEMENT_HPP_
#define MSCCLPP_NCCL_SHIM_PLAN_AGREEMENT_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "coll_call.hpp"
#include "rank_link.hpp"

namespace mscclpp {
class Bootstrap;
}

namespace mscclpp::shim {

// What ranks must agree on: the call's shape as this rank sees it.
struct CallShape {
  int kind = 0;
  uint64_t count = 0;
  int dtype = 0;
  int op = -1;
  int root = -1;
  bool inPlace = false;  // not compared between ranks (NCCL allows mixing); part of the cache key
  bool operator==(const CallShape& o) const {
    return kind == o.kind && count == o.count && dtype == o.dtype && op == o.op && root == o.root &&
           inPlace == o.inPlace;
  }
};
CallShape shapeOf(const CollCall& call, bool inPlace);

// One rank's choice for a shape, as sent to the others.
struct LocalChoice {
  PlanChoice plan;           // empty: the real NCCL
  uint64_t fingerprint = 0;  // of the plan (exec::planFingerprint)
  std::string why;           // the selection's reason
};

class PlanAgreement {
 public:
  PlanAgreement(std::shared_ptr<Bootstrap> control, int rank, int nRanks);

  // The agreed choice for the shape (why: its reason), when cached and the registry did not change.
  bool cached(const CallShape& shape, uint64_t generation, PlanChoice* choice, std::string* why);
  // Agrees with every rank (collective) and caches the decision; throws InvalidUsage on mismatched shapes.
  PlanChoice agree(const CallShape& shape, uint64_t generation, const LocalChoice& mine, std::string* why);

 private:
  struct ShapeHash {
    size_t operator()(const CallShape& s) const;
  };
  struct Decision {
    PlanChoice plan;
    std::string why;
  };

  std::shared_ptr<Bootstrap> control_;
  int rank_;
  int nRanks_;
  uint64_t generation_ = 0;
  std::unordered_map<CallShape, Decision, ShapeHash> decisions_;
};

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_PLAN_AGREEMENT_HPP_
