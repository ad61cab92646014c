// Where GPU contexts go when nothing will launch them again. One thread per
// process destroys them, never a rank's thread: cudaFree synchronises the
// device, and on a rank's thread it could wait for a peer's kernel spinning
// on that very rank (docs/cuda-backend.md, "Destruction").
// References come from the backend's cache and from graphs that captured a
// launch; the last one dropped destroys the context on the releaser thread.
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
