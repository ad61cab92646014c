#include "mscclpp/executor.hpp"

#include <atomic>
#include <cstring>
#include <list>
#include <mutex>

#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/context_image.hpp"
#include "executor/context_wiring.hpp"
#include "executor/cpu/cpu_context.hpp"
#include "executor/cuda/gpu_backend.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/scale_steps.hpp"
#include "mscclpp/communicator.hpp"

namespace mscclpp {

const char* backendName(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Cuda: return "cuda";
    case Backend::Cpu: return "cpu";
  }
  return "?";
}

Backend resolveBackend() {
  const std::string choice = params::backend();
  if (choice == "cuda") return Backend::Cuda;
  if (choice == "cpu") return Backend::Cpu;
  if (exec::cudaDeviceVisible()) return Backend::Cuda;
  static std::atomic<bool> told{false};
  if (!told.exchange(true)) MSCCLPP_INFO(LogExec, "MSCCLPP_BACKEND=auto: no CUDA device is visible, using the CPU backend");
  return Backend::Cpu;
}

namespace {

struct ContextKey {
  const plan::Plan* plan;
  int rank;
  uint64_t inputBytes, outputBytes;
  bool operator==(const ContextKey& o) const {
    return plan == o.plan && rank == o.rank && inputBytes == o.inputBytes && outputBytes == o.outputBytes;
  }
};

// Whether the collective writes a result into this rank's output (reduce and gather: the root only).
bool writesOutput(plan::Collective c, int rank, int root) {
  return (c != plan::Collective::Reduce && c != plan::Collective::Gather) || rank == root;
}
// Whether the collective reads this rank's input (scatter: the root only; NCCL passes NULL elsewhere).
bool readsInput(plan::Collective c, int rank, int root) { return c != plan::Collective::Scatter || rank == root; }

}  // namespace

struct Executor::Impl {
  Backend backend = Backend::Cpu;
  std::shared_ptr<exec::ContextWiring> wiring;
  std::mutex mutex;
  struct Entry {
    ContextKey key;
    plan::PlanPtr plan;  // keeps the plan (the key's pointer) alive
    std::unique_ptr<exec::CpuContext> ctx;
  };
  std::list<Entry> contexts;  // most recently used first (CPU backend)
  // abort(): `mutex` is held for a whole CPU launch, so abort uses its own lock to reach the abort
  // flag of the launch in flight (null when none) and to keep its context alive while raising it.
  std::mutex abortMutex;
  std::atomic<bool> aborted{false};  // also read without the lock: the CUDA path's per-call check
  uint32_t* runningAbortFlag = nullptr;
  std::unique_ptr<exec::GpuBackend> gpu;  // CUDA backend: its contexts (created at the first call)

  exec::GpuBackend& gpuBackend() {
    if (!gpu) {
      std::shared_ptr<Communicator> comm = wiring->communicator();
      MSCCLPP_ENFORCE(comm != nullptr, ErrorCode::NotSupported,
                      "the CUDA backend needs an Executor built on a Communicator (this one's wiring keeps every "
                      "rank's buffers in host memory): construct Executor(communicator), or use MSCCLPP_BACKEND=cpu");
      gpu = exec::GpuBackend::create(std::move(comm));
    }
    return *gpu;
  }

  exec::CpuContext& context(const plan::PlanPtr& plan, int rank, uint64_t in, uint64_t out, DataType dtype) {
    ContextKey key{plan.get(), rank, in, out};
    for (auto it = contexts.begin(); it != contexts.end(); ++it) {
      if (it->key == key) {
        contexts.splice(contexts.begin(), contexts, it);
        return *contexts.front().ctx;
      }
    }
    exec::CallShape shape = exec::shapeCall(*plan, rank, in, out, dtype);
    exec::RankResources res = wiring->connect(plan, rank, shape);
    auto ctx = std::make_unique<exec::CpuContext>(plan, rank, shape, std::move(res));
    contexts.push_front(Entry{key, plan, std::move(ctx)});
    const int64_t cap = std::max<int64_t>(1, params::contextCacheSize());
    while (static_cast<int64_t>(contexts.size()) > cap) contexts.pop_back();
    MSCCLPP_INFO(LogExec, "plan %s rank %d: execution context built for %llu input and %llu output bytes",
                 plan->header.name.c_str(), rank, static_cast<unsigned long long>(in), static_cast<unsigned long long>(out));
    return *contexts.front().ctx;
  }
};

Executor::Executor(std::shared_ptr<Communicator> comm) : impl_(std::make_unique<Impl>()) {
  checkEnvironment();
  impl_->backend = resolveBackend();
  // A communicator built for the host (no CUDA device) runs the CPU backend unless cuda was forced
  // (then the first call says why it cannot run).
  if (impl_->backend == Backend::Cuda && comm != nullptr && comm->device() < 0 && params::backend() != "cuda")
    impl_->backend = Backend::Cpu;
  impl_->wiring = std::make_shared<exec::CommunicatorWiring>(std::move(comm));
}

Executor::Executor(std::shared_ptr<exec::ContextWiring> wiring, Backend backend) : impl_(std::make_unique<Impl>()) {
  MSCCLPP_ENFORCE(wiring != nullptr, ErrorCode::InvalidArgument, "Executor: the wiring is null");
  checkEnvironment();
  impl_->backend = backend == Backend::Auto ? resolveBackend() : backend;
  impl_->wiring = std::move(wiring);
}

Executor::~Executor() = default;

Backend Executor::backend() const { return impl_->backend; }

size_t Executor::contextCount() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->contexts.size() + (impl_->gpu ? impl_->gpu->contextCount() : 0);
}

void Executor::abort() {
  std::lock_guard<std::mutex> lock(impl_->abortMutex);
  impl_->aborted.store(true, std::memory_order_release);
  // Blocks and the proxy poll this flag in every wait: the launch in flight stops within a backoff
  // period and fails with Error(Aborted).
  if (impl_->runningAbortFlag != nullptr) atomicStore<uint32_t>(impl_->runningAbortFlag, 1, memoryOrderRelease);
}

bool Executor::launchInFlight() const {
  std::lock_guard<std::mutex> lock(impl_->abortMutex);
  return impl_->runningAbortFlag != nullptr;
}

bool Executor::aborted() const { return impl_->aborted.load(std::memory_order_acquire); }

bool Executor::pollAsyncError(std::string* message) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->gpu != nullptr && impl_->gpu->pollError(message);
}

void Executor::execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                       DataType dtype, const std::shared_ptr<const plan::Plan>& plan, void* stream,
                       PacketType packetType, ReduceOp op, const void* scalar) {
  MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument, "Executor::execute: the plan is null");
  const plan::PlanHeader& h = plan->header;
  MSCCLPP_ENFORCE(dataTypeSize(dtype) > 0, ErrorCode::InvalidArgument, "Executor::execute: datatype %d is not valid",
                  static_cast<int>(dtype));
  MSCCLPP_ENFORCE(reduceOpName(op) != nullptr, ErrorCode::InvalidArgument, "Executor::execute: reduce op %d is not valid",
                  static_cast<int>(op));
  MSCCLPP_ENFORCE(packetType == PacketType::LL16 || packetType == PacketType::LL8, ErrorCode::InvalidArgument,
                  "Executor::execute: packet type %d is not valid", static_cast<int>(packetType));
  MSCCLPP_ENFORCE(static_cast<int>(plan->ranks.size()) == impl_->wiring->worldSize(), ErrorCode::InvalidArgument,
                  "plan %s is written for %zu ranks; the executor's world has %d", h.name.c_str(), plan->ranks.size(),
                  impl_->wiring->worldSize());
  MSCCLPP_ENFORCE(rank >= 0 && rank < static_cast<int>(plan->ranks.size()), ErrorCode::InvalidArgument,
                  "Executor::execute: rank %d of a %zu-rank plan", rank, plan->ranks.size());
  const bool reads = readsInput(h.collective, rank, h.root);
  MSCCLPP_ENFORCE(!reads || sendBytes == 0 || sendBuff != nullptr, ErrorCode::InvalidArgument,
                  "Executor::execute: a null send buffer of %zu bytes on rank %d", sendBytes, rank);
  const bool writes = writesOutput(h.collective, rank, h.root);
  MSCCLPP_ENFORCE(!writes || recvBytes == 0 || recvBuff != nullptr, ErrorCode::InvalidArgument,
                  "Executor::execute: a null receive buffer of %zu bytes on rank %d", recvBytes, rank);
  exec::checkPlanServesOp(h, op);
  MSCCLPP_ENFORCE(op != ReduceOp::PreMulSum || scalar != nullptr, ErrorCode::InvalidArgument,
                  "Executor::execute: premulsum needs a scalar (got a null pointer)");
  MSCCLPP_ENFORCE(!aborted(), ErrorCode::Aborted, "plan %s rank %d: the executor was aborted", h.name.c_str(), rank);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->backend == Backend::Cuda) {
    // Device buffers, enqueued on `stream`: see executor/cuda/gpu_backend.hpp.
    exec::GpuCall call;
    call.rank = rank;
    call.send = sendBuff;
    call.recv = recvBuff;
    call.sendBytes = sendBytes;
    call.recvBytes = recvBytes;
    call.dtype = dtype;
    call.plan = plan;
    call.stream = stream;
    call.packet = packetType;
    call.op = op;
    call.scalar = scalar;
    impl_->gpuBackend().execute(call);
    return;
  }
  exec::CpuContext& ctx = impl_->context(plan, rank, sendBytes, recvBytes, dtype);
  const exec::RankResources& res = ctx.image().resources();
  // Stage in: the plan's input (inside the data buffer for in-place plans) gets the send buffer,
  // pre-scaled for premulsum. Off a scatter's root the send buffer is never read (NCCL allows any
  // pointer there, even one to fewer bytes).
  if (reads && sendBytes > 0) {
    if (op == ReduceOp::PreMulSum) exec::preMultiplyHost(dtype, res.input, sendBuff, sendBytes, scalar);
    else std::memcpy(res.input, sendBuff, sendBytes);
  }
  {
    std::lock_guard<std::mutex> guard(impl_->abortMutex);
    // Relaxed: abort() stores under this mutex too.
    MSCCLPP_ENFORCE(!impl_->aborted.load(std::memory_order_relaxed), ErrorCode::Aborted,
                    "plan %s rank %d: the executor was aborted", h.name.c_str(), rank);
    impl_->runningAbortFlag = ctx.image().device().abortFlag;
  }
  struct ClearRunning {
    Impl* impl;
    ~ClearRunning() {
      std::lock_guard<std::mutex> guard(impl->abortMutex);
      impl->runningAbortFlag = nullptr;
    }
  } clearRunning{impl_.get()};
  ctx.launch(dtype, exec::nativeOpOf(op), packetType, params::timeoutSeconds());
  if (op == ReduceOp::Avg) {
    const uint64_t bytes = exec::reducedOutputBytes(h.collective, rank, h.root, recvBytes);
    if (bytes > 0) exec::divideHost(dtype, res.output, bytes, static_cast<uint32_t>(plan->ranks.size()));
  }
  if (writes && recvBytes > 0) std::memcpy(recvBuff, res.output, recvBytes);
}

}  // namespace mscclpp
