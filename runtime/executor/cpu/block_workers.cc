#include "executor/cpu/block_workers.hpp"

#include <algorithm>
#include <chrono>

#include "core/enforce.hpp"
#include "core/logger.hpp"

namespace mscclpp::exec {

BlockWorkers::BlockWorkers(uint32_t nWorkers, int logRank, std::string name)
    : name_(std::move(name)), logRank_(logRank) {
  threads_.reserve(nWorkers);
  for (uint32_t i = 0; i < nWorkers; ++i) threads_.emplace_back([this, i] { workerLoop(i); });
}

BlockWorkers::~BlockWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void BlockWorkers::workerLoop(uint32_t index) {
  ScopedLogRank logRank(logRank_);
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(uint32_t)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Idle wait between launches: not a wait for a peer, so no deadline; the destructor wakes it.
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_ && generation_ == seen) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(index);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error && !error_) error_ = error;
      if (++finished_ == threads_.size()) done_.notify_all();
    }
  }
}

void BlockWorkers::run(const std::function<void(uint32_t)>& fn, double waitSeconds, double tickSeconds,
                       const std::function<void(double)>& onTick) {
  if (threads_.empty()) return;
  std::unique_lock<std::mutex> lock(mutex_);
  MSCCLPP_ENFORCE(!broken_, ErrorCode::InvalidUsage, "%s: an earlier launch never finished; the context is unusable",
                  name_.c_str());
  job_ = &fn;
  finished_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  using Clock = std::chrono::steady_clock;
  auto seconds = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  const auto start = Clock::now();
  const auto deadline = waitSeconds > 0 ? start + seconds(waitSeconds) : Clock::time_point::max();
  const bool ticking = tickSeconds > 0 && onTick;
  auto nextTick = ticking ? start + seconds(tickSeconds) : Clock::time_point::max();
  auto allDone = [&] { return finished_ == threads_.size(); };
  while (!allDone()) {
    if (Clock::now() >= deadline) {
      broken_ = true;
      throw TimeoutError(strFormat("%s: %u of %zu block threads still running %.3g s after the launch started",
                                   name_.c_str(), static_cast<unsigned>(threads_.size() - finished_), threads_.size(),
                                   waitSeconds));
    }
    if (done_.wait_until(lock, std::min(deadline, nextTick), allDone)) break;
    if (Clock::now() >= nextTick) {
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      nextTick += seconds(tickSeconds);
      lock.unlock();  // the tick may take its time (logging, asking peers); the workers go on
      onTick(waited);
      lock.lock();
    }
  }
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace mscclpp::exec
