// NCCL's group semantics, per thread as in NCCL: one
// thread may drive several ranks. Calls up to the
// outermost ncclGroupEnd are queued and issued there, in
// order. Inits and splits inside a group are deferred
// and run together there, since ranks created by one
// thread must rendezvous together. An error is returned
// by the failing call and latched for the outermost end.
#ifndef MSCCLPP_NCCL_SHIM_GROUP_HPP_
#define MSCCLPP_NCCL_SHIM_GROUP_HPP_

#include <nccl.h>

#include <functional>
#include <vector>

#include "coll_call.hpp"

namespace mscclpp::shim {

class GroupState {
 public:
  int depth() const { return depth_; }
  bool active() const { return depth_ > 0; }

  void start() { ++depth_; }
  // Leaves one level; true when it was the outermost one. At
  // depth 0 it throws Error(InvalidUsage) with NCCL's words.
  bool end();

  // A deferred communicator creation. The group end latches its failure.
  void addJob(std::function<void()> job) { jobs_.push_back(std::move(job)); }
  void addOp(const CollCall& call) { ops_.push_back(call); }
  // Keeps the group's first error; later ones do not replace it.
  void latch(ncclResult_t result) {
    if (latched_ == ncclSuccess) latched_ = result;
  }

  // Queued calls of comm: destroying it inside
  // a group must not leave them dangling.
  bool hasOpsOf(const void* comm) const;
  void dropOpsOf(const void* comm);

  // Moves the queued work out: a failing
  // group end leaves the thread clean.
  std::vector<std::function<void()>> takeJobs();
  // Swaps the queued ops into *out, whose capacity is reused next time.
  void takeOps(std::vector<CollCall>* out);
  ncclResult_t takeLatched();
  // Drops everything, after an error that ends the group.
  void reset();

 private:
  int depth_ = 0;
  ncclResult_t latched_ = ncclSuccess;
  std::vector<std::function<void()>> jobs_;
  std::vector<CollCall> ops_;
};

// The calling thread's group.
GroupState& threadGroup();

// As in NCCL, the outermost ncclGroupEnd
// returns a failed call's error too.
inline ncclResult_t latchInGroup(ncclResult_t r) {
  if (r != ncclSuccess && r != ncclInProgress && threadGroup().active()) threadGroup().latch(r);
  return r;
}

// Runs jobs concurrently, a thread each, or inline when there
// is one. Rethrows the first failure once all finished.
void runConcurrently(std::vector<std::function<void()>>& jobs);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_GROUP_HPP_
