#include "executor/cuda/call_completion.hpp"

#include "core/logger.hpp"

namespace mscclpp::exec {

CallCompletion::CallCompletion(int device, uint64_t slots, const std::string& what)
    : slots_(slots), words_(slots * sizeof(uint64_t), what), writeValue64_(resolveStreamWriteValue64(device)) {
  if (writeValue64_ != nullptr) return;
  sources_ = std::make_unique<PinnedAllocation>(slots * sizeof(uint64_t), what + " (copy sources)");
  sourcedBy_.assign(slots, 0);
}

bool CallCompletion::mark(void* stream, uint64_t seq) {
  uint64_t* word = static_cast<uint64_t*>(words_.device()) + seq % slots_;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (writeValue64_ != nullptr) {
    // The default flags order the store after every earlier operation of the stream (the kernel).
    const CUresult r = reinterpret_cast<WriteValue64Fn>(writeValue64_)(reinterpret_cast<CUstream>(s),
                                                                       reinterpret_cast<CUdeviceptr>(word), seq, 0);
    if (r == CUDA_SUCCESS) return true;
    MSCCLPP_INFO(LogExec, "call #%llu: cuStreamWriteValue64 of its completion mark failed (CUresult %d): not tracked",
                 static_cast<unsigned long long>(seq), static_cast<int>(r));
    return false;
  }
  const uint64_t slot = seq % slots_;
  if (sourcedBy_[slot] != 0 && !completed(sourcedBy_[slot])) {
    // The copy of an earlier call still has to read this source: writing it
    // now would mark that call done with our number, early.
    MSCCLPP_INFO(LogExec, "call #%llu: its completion mark's source is still in use: not tracked",
                 static_cast<unsigned long long>(seq));
    return false;
  }
  uint64_t* source = static_cast<uint64_t*>(sources_->host()) + slot;
  *source = seq;
  const cudaError_t e = cudaMemcpyAsync(word, source, sizeof(uint64_t), cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) {
    sourcedBy_[slot] = seq;
    return true;
  }
  (void)cudaGetLastError();
  MSCCLPP_INFO(LogExec, "call #%llu: the copy of its completion mark failed (%s): not tracked",
               static_cast<unsigned long long>(seq), cudaGetErrorString(e));
  return false;
}

bool CallCompletion::completed(uint64_t seq) const {
  const uint64_t* word = static_cast<const uint64_t*>(words_.host()) + seq % slots_;
  return __atomic_load_n(word, __ATOMIC_ACQUIRE) >= seq;
}

}  // namespace mscclpp::exec
