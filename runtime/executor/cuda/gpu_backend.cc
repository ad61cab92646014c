#include "executor/cuda/gpu_backend.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <vector>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/call_descriptor.hpp"
#include "executor/call_monitor.hpp"
#include "executor/context_cache.hpp"
#include "executor/context_image.hpp"
#include "executor/cuda/call_binding.hpp"
#include "executor/cuda/call_completion.hpp"
#include "executor/cuda/context_releaser.hpp"
#include "executor/cuda/cuda_check.hpp"
#include "executor/cuda/gpu_context.hpp"
#include "executor/cuda/gpu_world.hpp"
#include "executor/scale_steps.hpp"
#include "executor/segment_binding.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/cuda_ipc/memory.hpp"

namespace mscclpp::exec {
namespace {

// The buffers' allocation ids are part of the key. A buffer freed and
// allocated again at the same address is new memory, which peers in other
// processes must map anew: their IPC mapping names the old allocation.
struct GpuContextKey {
  const plan::Plan* plan;
  int rank;
  BindingKey binding;
  uint64_t sendAllocation, recvAllocation;
  size_t elementBytes;  // the plan's geometry for the same bytes depends on it (plan_sizing.hpp: sizeCall)
  bool operator==(const GpuContextKey& o) const {
    return plan == o.plan && rank == o.rank && binding == o.binding && sendAllocation == o.sendAllocation &&
           recvAllocation == o.recvAllocation && elementBytes == o.elementBytes;
  }
};

// The failure sources of this backend's contexts, for the call monitor's
// probe: a context that went (or sits in a graph) drops out by itself.
struct FailureSources {
  std::mutex mutex;
  std::vector<std::weak_ptr<const std::function<std::string()>>> sources;

  void add(const std::shared_ptr<const std::function<std::string()>>& source) {
    std::lock_guard<std::mutex> lock(mutex);
    sources.erase(std::remove_if(sources.begin(), sources.end(), [](const auto& s) { return s.expired(); }),
                  sources.end());
    sources.push_back(source);
  }
  std::string probe() {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& weak : sources) {
      if (auto source = weak.lock()) {
        std::string failure = (*source)();
        if (!failure.empty()) return failure;
      }
    }
    return std::string();
  }
};

class GpuBackendImpl final : public GpuBackend {
 public:
  GpuBackendImpl(std::shared_ptr<Communicator> comm, CallMonitor* monitor)
      : world_(std::make_shared<GpuWorld>(std::move(comm))),
        monitor_(monitor),
        cache_(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize()))) {
    DeviceGuard guard(world_->device());
    // Before this rank's first collective, so that no launch loads a kernel
    // (lazy loading: a first launch may synchronise the device).
    loadGpuKernels();
    if (monitor_ == nullptr) return;
    // Before any context of this rank exists (mapped host memory synchronises the device).
    completion_ = std::make_unique<CallCompletion>(world_->device(), CallMonitor::kRecentCalls,
                                                   strFormat("rank %d: call completion marks", world_->rank()));
    monitor_->setCompletion([c = completion_.get()](uint64_t seq) { return c->completed(seq); });
    // A launch that fails on its own (counts its buffers cannot hold) leaves
    // its peers waiting: the monitor tells them as soon as it shows.
    monitor_->setFailureProbe([sources = failureSources_]() { return sources->probe(); });
  }

  ~GpuBackendImpl() override {
    if (monitor_) monitor_->setCompletion(nullptr);  // before completion_ goes
    if (monitor_) monitor_->setFailureProbe(nullptr);
    // Every context goes to the releaser; wait here until it destroyed them,
    // so the executor's memory goes with it. Graphs keep theirs alive.
    cache_.clear();
    ContextReleaser::instance().drain();
  }

  size_t contextCount() const override { return cache_.size(); }

  Refusal execute(const GpuCall& c) override {
    DeviceGuard guard(world_->device());
    uint64_t seq = 0;
    if (monitor_) {
      // The last plan's fingerprint is kept: a steady caller repeats one plan.
      if (c.plan.get() != fingerprintOf_) {
        fingerprint_ = fingerprints_.of(c.plan);
        fingerprintOf_ = c.plan.get();
      }
      describeCall(&descriptor_, *c.plan, fingerprint_, c.sendBytes, c.recvBytes, c.dtype, c.op);
      seq = monitor_->begin(descriptor_);
    }
    bool tracked = false, captured = false;
    Refusal refusal;
    const std::shared_ptr<const std::function<LiveCall()>>* live = nullptr;
    try {
      refusal = enqueue(c, seq, &tracked, &captured, &live);
    } catch (const CountsError& e) {
      // The peers run this call and wait for this rank: it fails on every rank at once, alike.
      if (monitor_) {
        monitor_->failCall(e.code(), e.what());
        monitor_->end();
      }
      ErrorCode code;
      std::string message;
      if (world_->comm().failed(&code, &message)) throw Error(code, message);
      throw;
    } catch (const Error& e) {
      if (monitor_) monitor_->end();
      // A failed communicator (a dead peer, a mismatch the monitor found) says why the call stopped.
      world_->comm().throwIfFailedAfter(e);
      throw;
    } catch (...) {
      if (monitor_) monitor_->end();
      throw;
    }
    if (!monitor_) return refusal;
    if (tracked) {
      monitor_->enqueued(*live);  // a shared pointer copied: the monitor reads the blocks' waits while it runs
    } else if (captured) {
      // A captured call runs at the graph's replays: the monitor watches its context for them.
      monitor_->captured(*live);  // and ends the call
    } else {
      monitor_->end();  // refused, or not tracked
    }
    return refusal;
  }

  bool hasContext(const GpuCall& c) override { return cache_.find(keyOf(c, requestOf(c))) != nullptr; }

  bool pollError(std::string* message) override {
    RetiringContextRef* failed = nullptr;
    cache_.forEach([&](const GpuContextKey&, RetiringContextRef& c) {
      if (failed == nullptr && c->failureRaised()) failed = &c;
    });
    if (failed == nullptr) return false;
    tellPeers(**failed);
    std::unique_ptr<RetiringContextRef> ctx = cache_.erase(failed);
    world_->forgetLoad(&**ctx);
    try {
      DeviceGuard guard(world_->device());
      (*ctx)->throwFailure();
    } catch (const std::exception& e) {
      if (message) *message = e.what();
    }
    return true;
  }

 private:
  // Enqueues the call, building its context first if needed, or returns why
  // it is refused before anything is exchanged or enqueued. *tracked: a
  // completion mark follows it. *captured: it went into a CUDA graph.
  // *live: the context's live-state source.
  Refusal enqueue(const GpuCall& c, uint64_t seq, bool* tracked, bool* captured,
                  const std::shared_ptr<const std::function<LiveCall()>>** live) {
    const plan::PlanHeader& h = c.plan->header;
    cudaStream_t stream = static_cast<cudaStream_t>(c.stream);
    // One query gives the capture state and, while capturing, the capture
    // sequence and its graph, which a captured launch hands its context.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    unsigned long long captureId = 0;
    cudaGraph_t graph = nullptr;
    MSCCLPP_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &capture, &captureId, &graph),
                       "plan %s rank %d: querying the stream's capture state", h.name.c_str(), c.rank);
    const CallRequest req = requestOf(c);
    const GpuContextKey key = keyOf(c, req);
    RetiringContextRef* entry = cache_.find(key);
    GpuContext* ctx = entry != nullptr ? &**entry : nullptr;
    if (ctx == nullptr) {
      if (capture != cudaStreamCaptureStatusNone) {
        return strFormat(
            "plan %s (%s) rank %d: the call is being captured into a CUDA graph, but its execution context (for these "
            "buffers: send %p, recv %p) does not exist yet, and building one exchanges messages with the other ranks "
            "and allocates memory, which capture forbids: run the same call once before capturing (a warm-up "
            "iteration), then capture",
            h.name.c_str(), h.source.c_str(), c.rank, c.send, c.recv);
      }
      if (Refusal r = build(key, req, c, &ctx)) return r;
      entry = cache_.find(key);  // a communicator that failed meanwhile raised the new context's flag
    }
    const void* legacy = reinterpret_cast<const void*>(cudaStreamLegacy);
    // The legacy stream serialises the kernels of ranks sharing this GPU.
    // Strings are built only to refuse, so an allowed call allocates nothing.
    if ((c.stream == nullptr || c.stream == legacy) && world_->topology().coResidentCount() > 1) {
      const std::string problem = streamProblem(strFormat("plan %s rank %d", h.name.c_str(), c.rank),
                                                world_->topology().coResidentRanks(), c.stream, legacy);
      MSCCLPP_ENFORCE(problem.empty(), ErrorCode::InvalidUsage, "%s", problem.c_str());
    }
    if (ctx->failureRaised()) {
      tellPeers(*ctx);
      std::unique_ptr<RetiringContextRef> failed = cache_.erase(entry);
      world_->forgetLoad(&**failed);
      (*failed)->throwFailure();
    }
    GpuCallArgs args;
    args.dtype = c.dtype;
    args.op = c.op;
    args.packet = c.packet;
    args.stream = c.stream;
    args.scalar = c.scalar;
    args.capturing = capture == cudaStreamCaptureStatusActive;
    args.captureId = captureId;
    args.graph = graph;
    args.call = launchCallTag(seq, args.capturing);
    args.counts = c.counts;
    args.countsOnDevice = c.countsOnDevice;
    if (Refusal r = ctx->launch(args)) return r;
    *live = &ctx->liveSource();
    // Captured calls run at replays, which no completion mark can number:
    // the monitor watches their context's waits instead.
    *captured = args.capturing;
    *tracked = completion_ != nullptr && !args.capturing && completion_->mark(c.stream, seq);
    return std::nullopt;
  }

  // A failure the context's blocks published (counts its buffers cannot
  // hold) leaves the peers waiting for this rank, unless the monitor's probe
  // told them already: they are told before it is thrown here.
  void tellPeers(GpuContext& ctx) {
    if (!monitor_) return;
    const std::string failure = (*ctx.failureSource())();
    if (!failure.empty()) monitor_->failLaunch(failure);
  }

  static CallRequest requestOf(const GpuCall& c) {
    CallRequest req;
    req.plan = c.plan.get();
    req.rank = c.rank;
    req.send = static_cast<const char*>(c.send);
    req.recv = static_cast<char*>(c.recv);
    req.sendBytes = c.sendBytes;
    req.recvBytes = c.recvBytes;
    req.op = c.op;
    return req;
  }

  static GpuContextKey keyOf(const GpuCall& c, const CallRequest& req) {
    // An in-place call's one buffer is asked for once.
    const uint64_t sendAllocation = transport::cuda_ipc::allocationId(c.send);
    const uint64_t recvAllocation = c.recv == c.send ? sendAllocation : transport::cuda_ipc::allocationId(c.recv);
    return GpuContextKey{c.plan.get(),   c.rank,         bindingKeyOf(req),
                         sendAllocation, recvAllocation, dataTypeSize(c.dtype)};
  }

  // Builds the call's context collectively into *built, or returns why the
  // plan cannot serve the call here, before anything is exchanged.
  Refusal build(const GpuContextKey& key, const CallRequest& req, const GpuCall& c, GpuContext** built) {
    CallShape shape;
    if (Refusal r = tryShapeCall(*c.plan, c.rank, c.sendBytes, c.recvBytes, c.dtype, &shape)) return r;
    const CallDescriptor call =
        describeCall(*c.plan, fingerprints_.of(c.plan), c.sendBytes, c.recvBytes, c.dtype, c.op);
    std::shared_ptr<GpuContext> ctx;
    if (Refusal r = GpuContext::create(world_, c.plan, c.rank, shape, req, call, c.dtype, nativeOpOf(c.op), c.stream,
                                       &ctx, c.native))
      return r;
    // Evicted contexts are retired, not destroyed here: freeing synchronises
    // the device, and peers' kernels may wait for this thread's next launch.
    std::vector<std::unique_ptr<RetiringContextRef>> evicted;
    cache_.setCapacity(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize())));
    failureSources_->add(ctx->failureSource());
    RetiringContextRef& added = cache_.insert(key, std::make_unique<RetiringContextRef>(std::move(ctx)), &evicted);
    // Later calls' residency counts the kernels of the cached contexts.
    for (const std::unique_ptr<RetiringContextRef>& e : evicted) world_->forgetLoad(&**e);
    world_->recordLoad(&*added, added->residentLoad());
    if (!evicted.empty()) {
      MSCCLPP_INFO(LogExec, "rank %d: %zu GPU execution context(s) dropped (MSCCLPP_EXEC_CONTEXT_CACHE=%zu)", c.rank,
                   evicted.size(), cache_.capacity());
    }
    *built = &*added;
    return std::nullopt;
  }

  std::shared_ptr<GpuWorld> world_;
  CallMonitor* monitor_;
  std::unique_ptr<CallCompletion> completion_;  // with a monitor: where calls say they completed
  std::shared_ptr<FailureSources> failureSources_ = std::make_shared<FailureSources>();
  CallDescriptor descriptor_;                  // the call's, reused (no allocation per call)
  PlanFingerprints fingerprints_;              // keeps its plans alive, so fingerprintOf_ names a live one
  const plan::Plan* fingerprintOf_ = nullptr;  // the plan of the last call, and its fingerprint
  uint64_t fingerprint_ = 0;
  ContextCache<GpuContextKey, RetiringContextRef> cache_;
};

}  // namespace

Refusal GpuBackend::unavailable(const Communicator* comm) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) (void)cudaGetLastError();
  if (e != cudaSuccess || n <= 0) {
    return strFormat("the CUDA backend needs a CUDA device, and none is visible (%s): run with MSCCLPP_BACKEND=cpu",
                     e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
  }
  if (comm != nullptr && comm->device() < 0) {
    return strFormat(
        "GPU executor: rank %d's communicator has no CUDA device (it was built for the CPU backend: "
        "MSCCLPP_BACKEND=cpu, or no device was visible)",
        comm->rank());
  }
  return std::nullopt;
}

std::unique_ptr<GpuBackend> GpuBackend::create(std::shared_ptr<Communicator> comm, CallMonitor* monitor) {
  // A missing device or build is said first: the caller must change that.
  if (Refusal r = unavailable(comm.get())) throw Error(ErrorCode::NotSupported, *r);
  MSCCLPP_ENFORCE(comm != nullptr, ErrorCode::InvalidArgument, "GPU executor: the communicator is null");
  return std::make_unique<GpuBackendImpl>(std::move(comm), monitor);
}

}  // namespace mscclpp::exec
