// Where the CUDA backend's calls say they completed, for the call monitor.
// One word of host-mapped memory per recent-call slot; the call's stream sets
// it to the call's number after the call's last operation, and the host reads
// it without synchronising. The store is cuStreamWriteValue64 where supported,
// else an 8-byte copy from pinned memory (one from pageable memory may wait
// for the stream, here for the call itself).
// Captured calls get no mark: each replay would write the captured number.
// Thread-safety: mark() on the backend's thread; completed() from any thread.
#ifndef MSCCLPP_EXECUTOR_CUDA_CALL_COMPLETION_HPP_
#define MSCCLPP_EXECUTOR_CUDA_CALL_COMPLETION_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/cuda/gpu_memory.hpp"

namespace mscclpp::exec {

class CallCompletion {
 public:
  // Allocates the words before any context of this rank exists: mapped
  // host memory synchronises the device. `slots`: recent calls tracked.
  CallCompletion(int device, uint64_t slots, const std::string& what);

  // Enqueues on `stream` the store that says call `seq` completed. False
  // when CUDA refused it: the error is cleared and the call not tracked.
  bool mark(void* stream, uint64_t seq);
  // Whether the stream of call `seq` (one of the last `slots` marked) passed its mark.
  bool completed(uint64_t seq) const;

 private:
  uint64_t slots_;
  PinnedAllocation words_;
  void* writeValue64_ = nullptr;
  // Without cuStreamWriteValue64: per slot, what the copy reads, and the
  // call whose copy read it last (0: none), which must have landed before
  // the source is written again.
  std::unique_ptr<PinnedAllocation> sources_;
  std::vector<uint64_t> sourcedBy_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_CALL_COMPLETION_HPP_
