// A CPU-backend execution context for one plan, rank, call shape and set of
// resources: the resolved image, a pool of block threads, and for port
// channels a ProxyService whose handler copies into a same-host peer's memory
// or writes on a TCP connection to another host. Built once, launched many
// times; the LL flag, counters and scratch persist between launches. For a
// native algorithm its blocks run the kernel, which publishes long waits in
// live-wait slots as on a GPU.
// Thread-safety: one launch at a time; contexts of different ranks run
// concurrently. After a failed launch the context refuses further launches.
#ifndef MSCCLPP_EXECUTOR_CPU_CPU_CONTEXT_HPP_
#define MSCCLPP_EXECUTOR_CPU_CPU_CONTEXT_HPP_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "executor/call_monitor.hpp"
#include "executor/context_image.hpp"
#include "executor/cpu/block_workers.hpp"
#include "executor/native_program.hpp"
#include "executor/native_view.hpp"
#include "mscclpp/datatype.hpp"
#include "mscclpp/proxy.hpp"

namespace mscclpp::exec {

class CpuContext {
 public:
  // timeoutSeconds: the communicator's timeout for the channel handles and
  // the proxy FIFO; <= 0: none. timeoutSetting names where it came from.
  // native: the algorithm whose kernel the blocks run; null for a plan.
  CpuContext(plan::PlanPtr plan, int rank, const CallShape& shape, RankResources resources, double timeoutSeconds,
             const char* timeoutSetting = "MSCCLPP_TIMEOUT_S", NativeProgramPtr native = nullptr);
  ~CpuContext();
  CpuContext(const CpuContext&) = delete;
  CpuContext& operator=(const CpuContext&) = delete;

  // Runs every threadblock once with the native op `op` and returns when all
  // finished. Every wait, the proxy's flushes included, is bounded by
  // timeoutSeconds. Throws with the blocks' wait-for picture: TimeoutError
  // when a wait of this rank timed out, Error(Aborted) when another rank
  // failed, NotSupported or InvalidArgument for a bad request. Throws
  // Error(NotSupported) with launchRefusal(dtype) when there is one.
  void launch(DataType dtype, ReduceOp op, PacketType packet, double timeoutSeconds,
              const char* timeoutSetting = "MSCCLPP_TIMEOUT_S");
  // Why this context cannot reduce `dtype`: its reductions would split
  // elements. Else nullopt.
  Refusal launchRefusal(DataType dtype) const;

  // What the long-wait warning says about the peers, from the call monitor.
  // Called on the launching thread while blocks wait.
  void setPeerStatus(std::function<std::string()> status) { peerStatus_ = std::move(status); }
  // The communicator's registration that raises the abort flag when it
  // fails. Dropped before the context's memory.
  void holdFailureRegistration(std::shared_ptr<void> registration) { failureRegistration_ = std::move(registration); }

  // The launch in progress as the call monitor sees it (any thread, while launch() runs).
  LiveCall liveCall() const;

  const ContextImage& image() const { return *image_; }
  // Variable-size plans: binds the next launch's segments (ContextImage::bindSegments).
  std::string bindSegments(const uint64_t* counts, size_t elementBytes) {
    return image_->bindSegments(counts, elementBytes);
  }
  bool failed() const { return failed_; }
  // The flag of the most recent launch.
  uint32_t lastLaunchFlag() const { return lastFlag_.load(std::memory_order_relaxed); }

 private:
  std::string handleRequest(const TriggerFields& f);
  // handleRequest for a port channel whose peer is on another host (RankResources::remotePorts).
  std::string handleRemoteRequest(const TriggerFields& f);
  // After a launch with port channels: waits, bounded, until the proxy
  // performed every request. Returns "" or why it could not.
  std::string completeProxyRequests(double timeoutSeconds);
  // One WARN line, every MSCCLPP_WAIT_WARN_S of a launch: what each unfinished block waits for.
  void warnLongWait(double waited) const;
  // Every unfinished block's wait, as the call monitor reads it.
  std::vector<BlockWait> liveBlocks(uint64_t* progress) const;

  NativeProgramPtr native_;
  std::vector<LiveWaitSlot> liveWaits_;  // native kernels publish their long waits here
  std::unique_ptr<ProxyService> proxy_;
  std::unique_ptr<ContextImage> image_;
  std::unique_ptr<NativeView> view_;
  std::unique_ptr<BlockWorkers> workers_;
  bool failed_ = false;
  std::atomic<uint32_t> lastFlag_{0};            // read by liveCall() from the monitor's thread
  std::atomic<double> launchTimeoutSeconds_{0};  // the launch's timeout, for the proxy thread's flushes
  std::function<std::string()> peerStatus_;
  std::shared_ptr<void> failureRegistration_;  // last: released before the flag's memory
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_CPU_CONTEXT_HPP_
