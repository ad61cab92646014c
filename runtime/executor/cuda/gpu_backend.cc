#include "executor/cuda/gpu_backend.hpp"

#include <cuda_runtime.h>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/params.hpp"
#include "executor/context_cache.hpp"
#include "executor/context_image.hpp"
#include "executor/cuda/call_binding.hpp"
#include "executor/cuda/cuda_check.hpp"
#include "executor/cuda/gpu_context.hpp"
#include "executor/cuda/gpu_world.hpp"
#include "executor/scale_steps.hpp"

namespace mscclpp::exec {
namespace {

struct GpuContextKey {
  const plan::Plan* plan;
  int rank;
  BindingKey binding;
  bool operator==(const GpuContextKey& o) const { return plan == o.plan && rank == o.rank && binding == o.binding; }
};

class GpuBackendImpl final : public GpuBackend {
 public:
  explicit GpuBackendImpl(std::shared_ptr<Communicator> comm)
      : world_(std::move(comm)), cache_(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize()))) {}

  ~GpuBackendImpl() override {
    // Each context synchronises with its last launch before freeing: with our device current.
    try {
      DeviceGuard guard(world_.device());
      cache_.clear();
    } catch (const std::exception& e) {
      MSCCLPP_WARN(LogExec, "GPU executor teardown: %s", e.what());
    }
  }

  size_t contextCount() const override { return cache_.size(); }

  void execute(const GpuCall& c) override {
    DeviceGuard guard(world_.device());
    const plan::PlanHeader& h = c.plan->header;
    cudaStream_t stream = static_cast<cudaStream_t>(c.stream);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    MSCCLPP_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture), "plan %s rank %d: querying the stream's capture state",
                       h.name.c_str(), c.rank);
    CallRequest req;
    req.plan = c.plan.get();
    req.rank = c.rank;
    req.send = static_cast<const char*>(c.send);
    req.recv = static_cast<char*>(c.recv);
    req.sendBytes = c.sendBytes;
    req.recvBytes = c.recvBytes;
    req.op = c.op;
    const GpuContextKey key{c.plan.get(), c.rank, bindingKeyOf(req)};
    GpuContext* ctx = cache_.find(key);
    if (ctx == nullptr) {
      MSCCLPP_ENFORCE(capture == cudaStreamCaptureStatusNone, ErrorCode::NotSupported,
                      "plan %s (%s) rank %d: the call is being captured into a CUDA graph, but its execution context "
                      "(for these buffers: send %p, recv %p) does not exist yet, and building one exchanges messages "
                      "with the other ranks and allocates memory, which capture forbids: run the same call once "
                      "before capturing (a warm-up iteration), then capture",
                      h.name.c_str(), h.source.c_str(), c.rank, c.send, c.recv);
      ctx = &build(key, req, c);
    }
    const void* legacy = reinterpret_cast<const void*>(cudaStreamLegacy);
    if (c.stream == nullptr || c.stream == legacy) {  // only then build strings (the hot path allocates nothing)
      const std::string problem = streamProblem(strFormat("plan %s rank %d", h.name.c_str(), c.rank),
                                                world_.topology().coResidentRanks(), c.stream, legacy);
      MSCCLPP_ENFORCE(problem.empty(), ErrorCode::InvalidUsage, "%s", problem.c_str());
    }
    if (ctx->failureRaised()) {
      std::unique_ptr<GpuContext> failed = cache_.erase(ctx);
      failed->throwFailure();
    }
    GpuCallArgs args;
    args.dtype = c.dtype;
    args.op = c.op;
    args.packet = c.packet;
    args.stream = c.stream;
    args.scalar = c.scalar;
    ctx->launch(args);
  }

  bool pollError(std::string* message) override {
    GpuContext* failed = nullptr;
    cache_.forEach([&](const GpuContextKey&, GpuContext& c) {
      if (failed == nullptr && c.failureRaised()) failed = &c;
    });
    if (failed == nullptr) return false;
    std::unique_ptr<GpuContext> ctx = cache_.erase(failed);
    try {
      DeviceGuard guard(world_.device());
      ctx->throwFailure();
    } catch (const std::exception& e) {
      if (message) *message = e.what();
    }
    return true;
  }

 private:
  GpuContext& build(const GpuContextKey& key, const CallRequest& req, const GpuCall& c) {
    const CallShape shape = shapeCall(*c.plan, c.rank, c.sendBytes, c.recvBytes, c.dtype);
    auto ctx = std::make_unique<GpuContext>(world_, c.plan, c.rank, shape, req, c.dtype, nativeOpOf(c.op));
    std::vector<std::unique_ptr<GpuContext>> evicted;
    cache_.setCapacity(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize())));
    GpuContext& added = cache_.insert(key, std::move(ctx), &evicted);
    if (!evicted.empty()) {
      MSCCLPP_INFO(LogExec, "rank %d: %zu GPU execution context(s) dropped (MSCCLPP_EXEC_CONTEXT_CACHE=%zu)", c.rank,
                   evicted.size(), cache_.capacity());
    }
    return added;
  }

  GpuWorld world_;
  ContextCache<GpuContextKey, GpuContext> cache_;
};

}  // namespace

std::unique_ptr<GpuBackend> GpuBackend::create(std::shared_ptr<Communicator> comm) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) (void)cudaGetLastError();
  MSCCLPP_ENFORCE(e == cudaSuccess && n > 0, ErrorCode::NotSupported,
                  "the CUDA backend needs a CUDA device, and none is visible (%s): run with MSCCLPP_BACKEND=cpu",
                  e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
  return std::make_unique<GpuBackendImpl>(std::move(comm));
}

}  // namespace mscclpp::exec
