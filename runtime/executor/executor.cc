#include "executor/executor_internal.hpp"

#include <atomic>
#include <mutex>

#include "comm/communicator_impl.hpp"
#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/backend.hpp"
#include "executor/call_monitor.hpp"
#include "executor/cpu/context_wiring.hpp"
#include "executor/cpu/cpu_backend.hpp"
#include "executor/cuda/gpu_backend.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/launch_abort.hpp"
#include "executor/scale_steps.hpp"
#include "mscclpp/communicator.hpp"
#include "plan/plan_names.hpp"

namespace mscclpp {

const char* backendName(Backend b) {
  switch (b) {
    case Backend::Auto:
      return "auto";
    case Backend::Cuda:
      return "cuda";
    case Backend::Cpu:
      return "cpu";
  }
  return "?";
}

Backend resolveBackend() {
  const std::string choice = params::backend();
  if (choice == "cuda") return Backend::Cuda;
  if (choice == "cpu") return Backend::Cpu;
  if (exec::cudaDeviceVisible()) return Backend::Cuda;
  static std::atomic<bool> told{false};
  if (!told.exchange(true))
    MSCCLPP_INFO(LogExec, "MSCCLPP_BACKEND=auto: no CUDA device is visible, using the CPU backend");
  return Backend::Cpu;
}

namespace {

// The call's arguments that decide its execution context (the rest: stream, packet type, scalar).
exec::ExecCall callOf(int rank, const void* send, void* recv, size_t sendBytes, size_t recvBytes, DataType dtype,
                      const std::shared_ptr<const plan::Plan>& plan, ReduceOp op,
                      const exec::NativeProgramPtr& native = nullptr) {
  exec::ExecCall call;
  call.native = native;
  call.rank = rank;
  call.send = send;
  call.recv = recv;
  call.sendBytes = sendBytes;
  call.recvBytes = recvBytes;
  call.dtype = dtype;
  call.plan = plan;
  call.op = op;
  return call;
}

}  // namespace

struct MSCCLPP_INTERNAL Executor::Impl {
  Backend backend = Backend::Cpu;
  std::shared_ptr<exec::ContextWiring> wiring;
  std::mutex mutex;  // serialises calls (held for a whole CPU launch)
  exec::LaunchAbort abort;
  std::shared_ptr<Communicator> comm;              // null for wirings without one (the emulator's threads)
  std::unique_ptr<exec::CallMonitor> monitor;      // on a communicator: stuck calls, mismatches
  std::unique_ptr<exec::ExecutionBackend> runner;  // made at the first call (after the monitor: goes first)

  // Makes the backend at the first call, or refuses when it cannot: no
  // device or no communicator for cuda, alike on ranks configured alike.
  exec::Refusal makeBackend() {
    if (runner) return std::nullopt;
    if (backend == Backend::Cuda) {
      std::shared_ptr<Communicator> comm = wiring->communicator();
      if (comm == nullptr) {
        return std::string(
            "the CUDA backend needs an Executor built on a Communicator (this one's wiring keeps every rank's buffers "
            "in host memory): construct Executor(communicator), or use MSCCLPP_BACKEND=cpu");
      }
      if (exec::Refusal r = exec::GpuBackend::unavailable(comm.get())) return r;
      runner = exec::GpuBackend::create(std::move(comm), monitor.get());
    } else {
      runner = std::make_unique<exec::CpuBackend>(wiring, abort, monitor.get());
    }
    return std::nullopt;
  }

  // A failed communicator fails every call with its own error, such as the
  // dead peer. `detail` says what this call saw of it.
  void throwIfCommFailed(const std::string& detail) const {
    ErrorCode code;
    std::string why;
    if (comm && comm->failed(&code, &why)) throw Error(code, detail.empty() ? why : why + "\n" + detail);
  }

  // The one path of every call: a refusal as a value, every other failure thrown.
  exec::Refusal tryExecute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                           DataType dtype, const plan::PlanPtr& plan, void* stream, PacketType packetType, ReduceOp op,
                           const void* scalar, const SplitSizes* splits = nullptr,
                           const exec::NativeProgramPtr& native = nullptr) {
    MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument, "Executor::execute: the plan is null");
    const plan::PlanHeader& h = plan->header;
    MSCCLPP_ENFORCE(!h.variableSizes || (splits != nullptr && splits->counts != nullptr), ErrorCode::InvalidArgument,
                    "Executor::execute: plan %s is a variable-size %s plan; pass the call's counts (SplitSizes)",
                    h.name.c_str(), plan::collectiveName(h.collective));
    MSCCLPP_ENFORCE(h.variableSizes || splits == nullptr, ErrorCode::InvalidArgument,
                    "Executor::execute: plan %s has fixed sizes; counts are only for variable-size plans",
                    h.name.c_str());
    MSCCLPP_ENFORCE(dataTypeSize(dtype) > 0, ErrorCode::InvalidArgument, "Executor::execute: datatype %d is not valid",
                    static_cast<int>(dtype));
    MSCCLPP_ENFORCE(reduceOpName(op) != nullptr, ErrorCode::InvalidArgument,
                    "Executor::execute: reduce op %d is not valid", static_cast<int>(op));
    MSCCLPP_ENFORCE(packetType == PacketType::LL16 || packetType == PacketType::LL8, ErrorCode::InvalidArgument,
                    "Executor::execute: packet type %d is not valid", static_cast<int>(packetType));
    MSCCLPP_ENFORCE(static_cast<int>(plan->ranks.size()) == wiring->worldSize(), ErrorCode::InvalidArgument,
                    "plan %s is written for %zu ranks; the executor's world has %d", h.name.c_str(), plan->ranks.size(),
                    wiring->worldSize());
    MSCCLPP_ENFORCE(rank >= 0 && rank < static_cast<int>(plan->ranks.size()), ErrorCode::InvalidArgument,
                    "Executor::execute: rank %d of a %zu-rank plan", rank, plan->ranks.size());
    MSCCLPP_ENFORCE(!exec::readsInput(h.collective, rank, h.root) || sendBytes == 0 || sendBuff != nullptr,
                    ErrorCode::InvalidArgument, "Executor::execute: a null send buffer of %zu bytes on rank %d",
                    sendBytes, rank);
    MSCCLPP_ENFORCE(!exec::writesOutput(h.collective, rank, h.root) || recvBytes == 0 || recvBuff != nullptr,
                    ErrorCode::InvalidArgument, "Executor::execute: a null receive buffer of %zu bytes on rank %d",
                    recvBytes, rank);
    if (exec::Refusal r = exec::planOpRefusal(h, op)) return r;
    MSCCLPP_ENFORCE(op != ReduceOp::PreMulSum || scalar != nullptr, ErrorCode::InvalidArgument,
                    "Executor::execute: plan %s rank %d: premulsum needs a scalar, one %s element in host memory (got "
                    "a null pointer)",
                    h.name.c_str(), rank, dataTypeName(dtype));
    MSCCLPP_ENFORCE(!abort.aborted(), ErrorCode::Aborted, "plan %s rank %d: the executor was aborted", h.name.c_str(),
                    rank);
    // The detail is formatted only for a failed communicator: a call allocates nothing.
    if (comm && comm->failed()) throwIfCommFailed(strFormat("plan %s rank %d: not run", h.name.c_str(), rank));
    MSCCLPP_ENFORCE(native == nullptr || (native->kernel != nullptr && native->kernel->hostBlock != nullptr),
                    ErrorCode::InvalidArgument, "native algorithm %s has no host entry point", h.name.c_str());
    exec::ExecCall call = callOf(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan, op, native);
    call.stream = stream;
    call.packet = packetType;
    call.scalar = scalar;
    if (splits != nullptr) {
      call.counts = splits->counts;
      call.countsOnDevice = splits->onDevice;
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (exec::Refusal r = makeBackend()) return r;
    return runner->execute(call);
  }
};

Executor::Executor(std::shared_ptr<Communicator> comm) : impl_(std::make_unique<Impl>()) {
  checkEnvironment();
  impl_->backend = resolveBackend();
  // A communicator without a CUDA device runs the CPU backend unless cuda
  // was forced; then the first call says why it cannot run.
  if (impl_->backend == Backend::Cuda && comm != nullptr && comm->device() < 0 && params::backend() != "cuda")
    impl_->backend = Backend::Cpu;
  impl_->comm = comm;
  if (comm != nullptr) {
    // Executors are made in the same order on every rank, so the index
    // names the monitor's bootstrap view alike everywhere.
    impl_->monitor =
        std::make_unique<exec::CallMonitor>(comm, CommunicatorAccess::impl(*comm).executorCount.fetch_add(1));
  }
  impl_->wiring = std::make_shared<exec::CommunicatorWiring>(std::move(comm));
}

exec::RuntimeExecutor::RuntimeExecutor(std::shared_ptr<ContextWiring> wiring, Backend backend)
    : Executor(wiredImpl(std::move(wiring), backend)) {}

std::unique_ptr<Executor::Impl> exec::RuntimeExecutor::wiredImpl(std::shared_ptr<ContextWiring> wiring,
                                                                 Backend backend) {
  MSCCLPP_ENFORCE(wiring != nullptr, ErrorCode::InvalidArgument, "Executor: the wiring is null");
  checkEnvironment();
  auto impl = std::make_unique<Impl>();
  impl->backend = backend == Backend::Auto ? resolveBackend() : backend;
  impl->comm = wiring->communicator();
  impl->wiring = std::move(wiring);
  return impl;
}

Executor::~Executor() = default;

Backend Executor::backend() const { return impl_->backend; }

size_t Executor::contextCount() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->runner ? impl_->runner->contextCount() : 0;
}

void Executor::abort() { impl_->abort.abort(); }

bool Executor::launchInFlight() const { return impl_->abort.inFlight(); }

bool Executor::aborted() const { return impl_->abort.aborted(); }

bool exec::RuntimeExecutor::wouldBuildContext(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                                              size_t recvBytes, DataType dtype, const plan::PlanPtr& plan,
                                              ReduceOp op) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  // No backend yet: the first call makes it and builds the call's context.
  return impl_->runner == nullptr ||
         !impl_->runner->hasContext(callOf(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan, op));
}

bool exec::RuntimeExecutor::wouldBuildContext(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                                              size_t recvBytes, DataType dtype, const NativeProgramPtr& native,
                                              ReduceOp op) const {
  MSCCLPP_ENFORCE(native != nullptr, ErrorCode::InvalidArgument, "Executor: the native program is null");
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->runner == nullptr || !impl_->runner->hasContext(callOf(rank, sendBuff, recvBuff, sendBytes, recvBytes,
                                                                       dtype, native->plan, op, native));
}

void exec::RuntimeExecutor::beginAgreement(int collective, size_t sendBytes, size_t recvBytes, DataType dtype, int op,
                                           int root) {
  if (!impl_->monitor) return;
  exec::CallDescriptor call;
  call.collective = collective;
  call.sendBytes = sendBytes;
  call.recvBytes = recvBytes;
  call.dtype = static_cast<int32_t>(dtype);
  call.op = op;
  call.root = root;
  impl_->monitor->agree(call);
}

void exec::RuntimeExecutor::endAgreement() {
  if (impl_->monitor) impl_->monitor->endAgreement();
}

bool Executor::pollAsyncError(std::string* message) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->runner != nullptr && impl_->runner->pollError(message);
}

namespace {

// The public calls take a scalar with premulsum only, as the C API does.
void checkScalarOp(const plan::PlanPtr& plan, int rank, ReduceOp op, const void* scalar) {
  MSCCLPP_ENFORCE(op == ReduceOp::PreMulSum || scalar == nullptr, ErrorCode::InvalidArgument,
                  "Executor::execute: plan %s rank %d: a scalar was given with reduce op %s; only premulsum takes one",
                  plan ? plan->header.name.c_str() : "(null)", rank, reduceOpName(op) ? reduceOpName(op) : "(invalid)");
}

}  // namespace

void Executor::execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                       DataType dtype, const ExecutionPlan& plan, void* stream, PacketType packetType, ReduceOp op,
                       const void* scalar) {
  const plan::PlanPtr& loaded = plan.impl_ ? plan.impl_->plan : nullptr;
  checkScalarOp(loaded, rank, op, scalar);
  if (exec::Refusal r = impl_->tryExecute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, loaded, stream,
                                          packetType, op, scalar))
    throw Error(ErrorCode::NotSupported, *r);
}

void Executor::execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                       DataType dtype, const ExecutionPlan& plan, const SplitSizes& splits, void* stream,
                       PacketType packetType, ReduceOp op, const void* scalar) {
  const plan::PlanPtr& loaded = plan.impl_ ? plan.impl_->plan : nullptr;
  checkScalarOp(loaded, rank, op, scalar);
  if (exec::Refusal r = impl_->tryExecute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, loaded, stream,
                                          packetType, op, scalar, &splits))
    throw Error(ErrorCode::NotSupported, *r);
}

std::optional<std::string> exec::RuntimeExecutor::tryExecuteVariable(int rank, const void* sendBuff, void* recvBuff,
                                                                     size_t sendBytes, size_t recvBytes, DataType dtype,
                                                                     const plan::PlanPtr& plan,
                                                                     const SplitSizes& splits, void* stream,
                                                                     PacketType packetType, ReduceOp op,
                                                                     const void* scalar) {
  return impl_->tryExecute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan, stream, packetType, op, scalar,
                           &splits);
}

void exec::RuntimeExecutor::execute(int rank, const void* sendBuff, void* recvBuff, size_t sendBytes, size_t recvBytes,
                                    DataType dtype, const plan::PlanPtr& plan, void* stream, PacketType packetType,
                                    ReduceOp op, const void* scalar) {
  if (exec::Refusal r = impl_->tryExecute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan, stream,
                                          packetType, op, scalar))
    throw Error(ErrorCode::NotSupported, *r);
}

std::optional<std::string> exec::RuntimeExecutor::tryExecute(int rank, const void* sendBuff, void* recvBuff,
                                                             size_t sendBytes, size_t recvBytes, DataType dtype,
                                                             const plan::PlanPtr& plan, void* stream,
                                                             PacketType packetType, ReduceOp op, const void* scalar) {
  return impl_->tryExecute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan, stream, packetType, op, scalar);
}

std::optional<std::string> exec::RuntimeExecutor::tryExecute(int rank, const void* sendBuff, void* recvBuff,
                                                             size_t sendBytes, size_t recvBytes, DataType dtype,
                                                             const NativeProgramPtr& native, void* stream, ReduceOp op,
                                                             const void* scalar) {
  MSCCLPP_ENFORCE(native != nullptr, ErrorCode::InvalidArgument, "Executor::execute: the native program is null");
  return impl_->tryExecute(rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, native->plan, stream,
                           PacketType::LL16, op, scalar, nullptr, native);
}

}  // namespace mscclpp
