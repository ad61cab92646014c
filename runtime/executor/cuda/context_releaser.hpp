// Where GPU execution contexts go when nothing will launch them again, and where they are
// destroyed: one thread per process (the releaser), never a rank's thread.
//
// Why a thread of its own: destroying a context frees device memory, and cudaFree synchronises the
// whole device (CUDA Programming Guide, "Stream-Ordered Memory Allocator": cudaFree "causes the GPU
// to synchronize across all executing CUDA streams"; "Implicit Synchronization"). On a rank's thread
// that synchronisation can wait for a peer's kernel that spins on this very rank, whose next launch
// that thread has not issued yet: a deadlock until the device deadline (issue 12, finding 1). The
// releaser blocks no rank, so every kernel it waits for can finish.
//
// Who retires: the backend's cache when it evicts a context or is destroyed, and CUDA graphs that
// captured a launch (through a cudaUserObject whose destructor hands the context over; CUDA runs it
// once the graph and its executable graphs are destroyed and their launches completed, and forbids
// CUDA calls in it: retire() makes none). A context is destroyed when the last of these references
// is dropped, always on the releaser thread.
//
// Thread-safety: retire() and drain() from any thread; retire() never blocks.
#ifndef MSCCLPP_EXECUTOR_CUDA_CONTEXT_RELEASER_HPP_
#define MSCCLPP_EXECUTOR_CUDA_CONTEXT_RELEASER_HPP_

#include <memory>

namespace mscclpp::exec {

class GpuContext;

class ContextReleaser {
 public:
  static ContextReleaser& instance();

  // Hands a reference over; the releaser thread drops it (destroying the context when it was the
  // last reference).
  void retire(std::shared_ptr<GpuContext> context);
  // Waits until every reference retired before the call was dropped.
  void drain();

 private:
  ContextReleaser();
  void loop();
  struct Impl;
  Impl* impl_;
};

// A cache's reference to a context: dropping it retires the context (the cache stays agnostic).
class RetiringContextRef {
 public:
  explicit RetiringContextRef(std::shared_ptr<GpuContext> context) : context_(std::move(context)) {}
  ~RetiringContextRef();
  RetiringContextRef(const RetiringContextRef&) = delete;
  RetiringContextRef& operator=(const RetiringContextRef&) = delete;
  GpuContext& operator*() const { return *context_; }
  GpuContext* operator->() const { return context_.get(); }

 private:
  std::shared_ptr<GpuContext> context_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_CONTEXT_RELEASER_HPP_
