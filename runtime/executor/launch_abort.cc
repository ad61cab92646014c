#include "executor/launch_abort.hpp"

#include "core/enforce.hpp"
#include "mscclpp/device.hpp"

namespace mscclpp::exec {

void LaunchAbort::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_.store(true, std::memory_order_release);
  // Blocks and the proxy poll this flag in every wait: the launch stops
  // within a backoff period and fails with Error(Aborted).
  if (running_ != nullptr) atomicStore<uint32_t>(running_, 1, memoryOrderRelease);
}

bool LaunchAbort::inFlight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_ != nullptr;
}

LaunchAbort::Running::Running(LaunchAbort& owner, uint32_t* flag, const std::string& what) : owner_(owner) {
  std::lock_guard<std::mutex> lock(owner_.mutex_);
  // Relaxed: abort() stores under this mutex too.
  MSCCLPP_ENFORCE(!owner_.aborted_.load(std::memory_order_relaxed), ErrorCode::Aborted, "%s: the executor was aborted",
                  what.c_str());
  owner_.running_ = flag;
}

LaunchAbort::Running::~Running() {
  std::lock_guard<std::mutex> lock(owner_.mutex_);
  owner_.running_ = nullptr;
}

}  // namespace mscclpp::exec
