// Every rank of a communicator runs the same algorithm (a DSL
// plan or a native one), or the real NCCL, for the same call,
// though ranks' own choices can differ. At the first call of
// each shape, every rank all-gathers its shape and choice, and
// all decide alike: the common one, else the real NCCL with a WARN. Mismatched
// shapes fail with InvalidUsage. Decisions are cached per shape
// until the registry changes (docs/nccl-shim.md "Ranks agree").
//
// Threads: the communicator's driving thread, as in NCCL; no lock.
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
  bool inPlace = false;  // only a cache key: NCCL lets ranks differ in it
  bool operator==(const CallShape& o) const {
    return kind == o.kind && count == o.count && dtype == o.dtype && op == o.op && root == o.root &&
           inPlace == o.inPlace;
  }
};
CallShape shapeOf(const CollCall& call, bool inPlace);

// One rank's choice for a shape, as sent to the others.
struct LocalChoice {
  PlanChoice plan;           // empty: the real NCCL
  uint64_t fingerprint = 0;  // the algorithm's, the same on ranks that chose the same
  std::string why;           // the selection's reason
};

class PlanAgreement {
 public:
  PlanAgreement(std::shared_ptr<Bootstrap> control, int rank, int nRanks);

  // The agreed choice for shape and its reason, if
  // cached and the registry did not change since.
  bool cached(const CallShape& shape, uint64_t generation, PlanChoice* choice, std::string* why);
  // Agrees with every rank, which is collective, and caches
  // the decision. Mismatched shapes throw InvalidUsage.
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
