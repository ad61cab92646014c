// A persistent pool of host threads, one per plan threadblock of a CPU
// context: created with the context, woken for every launch, joined when the
// context goes. No thread is spawned per call.
// Thread-safety: one run() at a time; the destructor must not race with run().
#ifndef MSCCLPP_EXECUTOR_CPU_BLOCK_WORKERS_HPP_
#define MSCCLPP_EXECUTOR_CPU_BLOCK_WORKERS_HPP_

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mscclpp::exec {

class BlockWorkers {
 public:
  // logRank: the rank printed on the workers' log lines.
  BlockWorkers(uint32_t nWorkers, int logRank, std::string name);
  ~BlockWorkers();
  BlockWorkers(const BlockWorkers&) = delete;
  BlockWorkers& operator=(const BlockWorkers&) = delete;

  uint32_t size() const { return static_cast<uint32_t>(threads_.size()); }

  // Runs fn(i) on every worker i and returns when all returned, rethrowing
  // fn's first exception. Throws TimeoutError when they have not returned
  // within waitSeconds, a safety net; the pool is then unusable.
  // waitSeconds <= 0: no limit. While waiting, onTick(seconds so far) runs
  // on this thread every tickSeconds, when both are given.
  void run(const std::function<void(uint32_t)>& fn, double waitSeconds, double tickSeconds = 0,
           const std::function<void(double)>& onTick = nullptr);

 private:
  void workerLoop(uint32_t index);

  std::string name_;
  int logRank_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(uint32_t)>* job_ = nullptr;
  uint64_t generation_ = 0;
  uint32_t finished_ = 0;
  bool stop_ = false;
  bool broken_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_BLOCK_WORKERS_HPP_
