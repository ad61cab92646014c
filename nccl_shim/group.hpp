// NCCL group semantics, per thread (NCCL keeps the group depth thread-local, so one thread may drive several
// ranks): calls between ncclGroupStart and the outermost ncclGroupEnd are queued and issued at that end, in
// order; communicator inits and splits inside a group are deferred to it and run concurrently there (several
// ranks created by one thread must rendezvous together: nccl-tests -g N, ncclCommInitAll); an error inside the
// group is returned by the failing call and latched for the outermost end.
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
  // Leaves one level; true when that was the outermost (the caller then runs takeJobs()/takeOps()).
  // Throws Error(InvalidUsage) "ncclGroupEnd: not in a group call." at depth 0.
  bool end();

  // A deferred communicator creation; throws on failure (its result is latched by the group end).
  void addJob(std::function<void()> job) { jobs_.push_back(std::move(job)); }
  void addOp(const CollCall& call) { ops_.push_back(call); }
  // The first error of the group (later ones do not replace it).
  void latch(ncclResult_t result) {
    if (latched_ == ncclSuccess) latched_ = result;
  }

  // Queued calls of comm (destroy/abort of a communicator inside a group must not leave them dangling).
  bool hasOpsOf(const void* comm) const;
  void dropOpsOf(const void* comm);

  // Moves the queued work out, leaving the state empty (a failing group end leaves the thread clean).
  std::vector<std::function<void()>> takeJobs();
  // Swaps the queued ops into *out (whose capacity is reused next time: no allocation in steady state).
  void takeOps(std::vector<CollCall>* out);
  ncclResult_t takeLatched();
  // Drops everything (after an error that ends the group).
  void reset();

 private:
  int depth_ = 0;
  ncclResult_t latched_ = ncclSuccess;
  std::vector<std::function<void()>> jobs_;
  std::vector<CollCall> ops_;
};

// The calling thread's group.
GroupState& threadGroup();

// NCCL latches the error of a call made inside a group so that the outermost ncclGroupEnd returns it too.
inline ncclResult_t latchInGroup(ncclResult_t r) {
  if (r != ncclSuccess && r != ncclInProgress && threadGroup().active()) threadGroup().latch(r);
  return r;
}

// Runs jobs concurrently (one thread each when there are several, inline for one) and rethrows the first
// failure after all finished.
void runConcurrently(std::vector<std::function<void()>>& jobs);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_GROUP_HPP_
