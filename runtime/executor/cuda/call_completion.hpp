// Where the CUDA backend's calls say they completed, for the call monitor (call_monitor.hpp): one
// word of host-mapped memory per recent-call slot (CallMonitor::kRecentCalls, by call number), which
// the call's stream sets to the call's number after the call's last operation. The host reads the
// words without synchronising, so "call k is in progress" means "enqueued and its stream has not
// reached its end" whatever the host thread does meanwhile, on any number of streams.
//
// The store is cuStreamWriteValue64 (a stream memory operation) where the device supports them,
// otherwise an 8-byte cudaMemcpyAsync from pageable host memory (CUDA reads the source before the
// call returns, so each call's number is its own). Either costs one enqueued operation per call and
// no allocation. Calls captured into a CUDA graph are not marked (a replay would write the number of
// the call that was captured, not of the replay): the monitor watches their replays through the
// waits their launches publish, tagged with the captured call (CallMonitor::captured).
//
// Thread-safety: mark() on the backend's thread; completed() from any thread.
#ifndef MSCCLPP_EXECUTOR_CUDA_CALL_COMPLETION_HPP_
#define MSCCLPP_EXECUTOR_CUDA_CALL_COMPLETION_HPP_

#include <cstdint>
#include <string>

#include "executor/cuda/gpu_memory.hpp"

namespace mscclpp::exec {

class CallCompletion {
 public:
  // Allocates the words (mapped host memory: before any context of this rank exists, since the
  // allocation synchronises the device). `slots` is the number of recent calls tracked.
  CallCompletion(int device, uint64_t slots, const std::string& what);

  // Enqueues, on `stream` after what it already holds, the store that says call `seq` completed.
  // False when CUDA refused it (the error is cleared; the call is then not tracked).
  bool mark(void* stream, uint64_t seq);
  // Whether the stream of call `seq` (one of the last `slots` marked) passed its mark.
  bool completed(uint64_t seq) const;

 private:
  uint64_t slots_;
  PinnedAllocation words_;
  void* writeValue64_ = nullptr;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_CALL_COMPLETION_HPP_
