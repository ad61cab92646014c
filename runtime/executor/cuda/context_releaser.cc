#include "executor/cuda/context_releaser.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "executor/cuda/gpu_context.hpp"

namespace mscclpp::exec {

struct ContextReleaser::Impl {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::shared_ptr<GpuContext>> queue;
  uint64_t retired = 0, dropped = 0;
  bool started = false;
};

ContextReleaser& ContextReleaser::instance() {
  // Never destroyed: graphs may hand contexts over until the process ends.
  static ContextReleaser* r = new ContextReleaser();
  return *r;
}

ContextReleaser::ContextReleaser() : impl_(new Impl()) {}

void ContextReleaser::retire(std::shared_ptr<GpuContext> context) {
  if (!context) return;
  std::lock_guard<std::mutex> lock(impl_->m);
  if (!impl_->started) {
    impl_->started = true;
    std::thread([this] { loop(); }).detach();
  }
  impl_->queue.push_back(std::move(context));
  ++impl_->retired;
  impl_->cv.notify_all();
}

void ContextReleaser::drain() {
  std::unique_lock<std::mutex> lock(impl_->m);
  const uint64_t target = impl_->retired;
  impl_->cv.wait(lock, [&] { return impl_->dropped >= target; });
}

void ContextReleaser::loop() {
  std::unique_lock<std::mutex> lock(impl_->m);
  for (;;) {
    impl_->cv.wait(lock, [&] { return !impl_->queue.empty(); });
    std::shared_ptr<GpuContext> context = std::move(impl_->queue.front());
    impl_->queue.pop_front();
    lock.unlock();
    context.reset();  // ~GpuContext (when this was the last reference) never throws
    lock.lock();
    ++impl_->dropped;
    impl_->cv.notify_all();
  }
}

RetiringContextRef::~RetiringContextRef() { ContextReleaser::instance().retire(std::move(context_)); }

}  // namespace mscclpp::exec
