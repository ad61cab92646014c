// An Executor's abort switch: abort() stops the executor for good, from any
// thread at any time (ncclCommAbort, ncclCommRevoke). A CPU launch registers
// its context's abort flag while it runs, so abort() raises it and the
// launch's blocks and proxy stop within a backoff period.
// Thread-safety: every member may be called from any thread.
#ifndef MSCCLPP_EXECUTOR_LAUNCH_ABORT_HPP_
#define MSCCLPP_EXECUTOR_LAUNCH_ABORT_HPP_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace mscclpp::exec {

class LaunchAbort {
 public:
  void abort();
  // Read without a lock: the per-call check of the GPU path.
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Whether a launch is registered now (diagnostics).
  bool inFlight() const;

  // Registers `flag` as the running launch's for the scope. Throws
  // Error(Aborted) naming `what` when the executor is aborted already.
  class Running {
   public:
    Running(LaunchAbort& owner, uint32_t* flag, const std::string& what);
    ~Running();
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    LaunchAbort& owner_;
  };

 private:
  mutable std::mutex mutex_;  // guards running_ (abort() raises the flag under it)
  std::atomic<bool> aborted_{false};
  uint32_t* running_ = nullptr;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_LAUNCH_ABORT_HPP_
