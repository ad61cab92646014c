// A CPU-backend execution context: the resolved plan image for one (plan, rank, call shape,
// resources), a persistent pool of block threads, and, when the plan has port channels, the
// runtime's ProxyService (runtime/proxy) with a request handler that performs the emulated
// transfer against this context's memory table (same host) or on a TCP connection (a peer on
// another host, RankResources::remotePorts). Built once, launched many times; the LL flag, semaphore counters and
// scratch persist between launches exactly as on the GPU.
//
// Thread-safety: one launch at a time (the owner serialises calls); different contexts (ranks)
// run concurrently. After a failed launch the context refuses further launches.
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
#include "mscclpp/datatype.hpp"
#include "mscclpp/proxy.hpp"

namespace mscclpp::exec {

class CpuContext {
 public:
  // timeoutSeconds: the timeout stored in the channel handles and the proxy FIFO (the communicator's; <= 0: none);
  // timeoutSetting: where it came from (Communicator::timeoutSetting()), named by the FIFO's timeouts.
  CpuContext(plan::PlanPtr plan, int rank, const CallShape& shape, RankResources resources, double timeoutSeconds,
             const char* timeoutSetting = "MSCCLPP_TIMEOUT_S");
  ~CpuContext();
  CpuContext(const CpuContext&) = delete;
  CpuContext& operator=(const CpuContext&) = delete;

  // Runs every threadblock once with reduce op `op` (native: sum, prod, max, min) and returns when
  // all finished. Every wait is bounded by timeoutSeconds, the proxy's flushes included; timeoutSetting names
  // where it came from in messages ("MSCCLPP_TIMEOUT_S", "the communicator's timeout"). On failure throws TimeoutError
  // (a wait of this rank timed out), Error(Aborted) (stopped because another rank failed) or
  // Error(NotSupported/InvalidArgument) with the blocks' wait-for description.
  // Error(NotSupported) with launchRefusal(dtype) when there is one.
  void launch(DataType dtype, ReduceOp op, PacketType packet, double timeoutSeconds,
              const char* timeoutSetting = "MSCCLPP_TIMEOUT_S");
  // Why this context cannot reduce `dtype` (its reductions touch offsets or sizes that split elements), or nullopt.
  Refusal launchRefusal(DataType dtype) const;

  // What the long-wait warning adds about the peers (the call monitor's view: who is idle, who is
  // in which call); called on the launching thread while blocks wait. Empty: nothing.
  void setPeerStatus(std::function<std::string()> status) { peerStatus_ = std::move(status); }
  // Kept until the context goes, and dropped before its memory: the communicator's registration that raises this
  // context's abort flag when it fails (Communicator::raiseOnFailure).
  void holdFailureRegistration(std::shared_ptr<void> registration) { failureRegistration_ = std::move(registration); }

  // The launch in progress as the call monitor sees it (any thread, while launch() runs).
  LiveCall liveCall() const;

  const ContextImage& image() const { return *image_; }
  bool failed() const { return failed_; }
  // The flag of the most recent launch.
  uint32_t lastLaunchFlag() const { return lastFlag_.load(std::memory_order_relaxed); }

 private:
  std::string handleRequest(const TriggerFields& f);
  // handleRequest for a port channel whose peer is on another host (RankResources::remotePorts).
  std::string handleRemoteRequest(const TriggerFields& f);
  // After a successful launch with port channels: waits until the proxy performed every request of
  // the launch (bounded). Returns "" or why it could not.
  std::string completeProxyRequests(double timeoutSeconds);
  // One WARN line, every MSCCLPP_WAIT_WARN_S of a launch: what each unfinished block waits for.
  void warnLongWait(double waited) const;

  std::unique_ptr<ProxyService> proxy_;
  std::unique_ptr<ContextImage> image_;
  std::unique_ptr<BlockWorkers> workers_;
  bool failed_ = false;
  std::atomic<uint32_t> lastFlag_{0};            // read by liveCall() from the monitor's thread
  std::atomic<double> launchTimeoutSeconds_{0};  // the launch's timeout, for the proxy thread's flushes
  std::function<std::string()> peerStatus_;
  std::shared_ptr<void> failureRegistration_;  // last: released before the flag's memory
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CPU_CPU_CONTEXT_HPP_
