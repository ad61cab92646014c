#include "executor/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/call_monitor.hpp"
#include "executor/scale_steps.hpp"
#include "mscclpp/communicator.hpp"
#include "plan/variable_sizes.hpp"

namespace mscclpp::exec {

CpuBackend::CpuBackend(std::shared_ptr<ContextWiring> wiring, LaunchAbort& abort, CallMonitor* monitor)
    : wiring_(std::move(wiring)),
      comm_(wiring_->communicator()),
      abort_(abort),
      monitor_(monitor),
      cache_(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize()))) {}

CpuContext& CpuBackend::build(const ExecCall& c, const CallShape& shape, const CallDescriptor& descriptor) {
  RankResources res = wiring_->connect(c.plan, c.rank, shape, descriptor);  // collective
  auto ctx = comm_ ? std::make_unique<CpuContext>(c.plan, c.rank, shape, std::move(res), comm_->timeoutSeconds(),
                                                  comm_->timeoutSetting(), c.native)
                   : std::make_unique<CpuContext>(c.plan, c.rank, shape, std::move(res), params::timeoutSeconds(),
                                                  "MSCCLPP_TIMEOUT_S", c.native);
  if (monitor_) ctx->setPeerStatus([m = monitor_]() { return m->peerStatus(); });
  // A failed communicator (a dead or unreachable peer) stops the context's waits at once.
  if (comm_) ctx->holdFailureRegistration(comm_->raiseOnFailure(ctx->image().device().abortFlag));
  cache_.setCapacity(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize())));
  std::vector<std::unique_ptr<CpuContext>> evicted;  // destroyed when this call leaves
  CpuContext& inserted = cache_.insert(keyOf(c), std::move(ctx), &evicted);
  MSCCLPP_INFO(LogExec, "plan %s rank %d: execution context built for %llu input and %llu output bytes",
               c.plan->header.name.c_str(), c.rank, static_cast<unsigned long long>(c.sendBytes),
               static_cast<unsigned long long>(c.recvBytes));
  return inserted;
}

Refusal CpuBackend::execute(const ExecCall& c) {
  MSCCLPP_ENFORCE(!c.countsOnDevice, ErrorCode::InvalidArgument,
                  "plan %s rank %d: the CPU backend reads the counts from host memory, not device memory",
                  c.plan->header.name.c_str(), c.rank);
  // Refusals come before the call begins. A new context is first shaped
  // and its wiring asked, so no rank starts a build the plan cannot serve.
  CpuContext* ctx = cache_.find(keyOf(c));
  CallShape shape;
  if (ctx == nullptr) {
    const Key key = keyOf(c);
    if (Refusal r = tryShapeCall(*c.plan, c.rank, key.inputBytes, key.outputBytes, c.dtype, &shape)) return r;
    if (Refusal r = wiring_->refusal(*c.plan)) return r;
  }
  const CallDescriptor descriptor =
      describeCall(*c.plan, fingerprints_.of(c.plan), c.sendBytes, c.recvBytes, c.dtype, c.op);
  struct EndCall {
    CallMonitor* monitor;
    ~EndCall() {
      if (monitor) monitor->end();
    }
  } endCall{monitor_};
  if (monitor_) monitor_->begin(descriptor);
  try {
    if (ctx == nullptr) ctx = &build(c, shape, descriptor);
    // The reduce granularity is known once the context is built, alike on
    // every rank. Nothing of the launch has started.
    if (Refusal r = ctx->launchRefusal(c.dtype)) return r;
    if (monitor_) monitor_->running([ctx]() { return ctx->liveCall(); });
    run(c, *ctx);
  } catch (const CountsError& e) {
    // The peers run this call and wait for this rank: it fails on every rank at once, alike.
    if (monitor_) monitor_->failCall(e.code(), e.what());
    ErrorCode code;
    std::string message;
    if (comm_ && comm_->failed(&code, &message)) throw Error(code, message);
    throw;
  } catch (const Error& e) {
    // Communicator::throwIfFailedAfter gives a dead peer the moment the bootstrap needs to name it.
    if (comm_) comm_->throwIfFailedAfter(e);
    throw;
  }
  return std::nullopt;
}

void CpuBackend::launch(const ExecCall& c, CpuContext& ctx) {
  LaunchAbort::Running running(abort_, ctx.image().device().abortFlag,
                               strFormat("plan %s rank %d", c.plan->header.name.c_str(), c.rank));
  if (comm_) {
    ctx.launch(c.dtype, nativeOpOf(c.op), c.packet, comm_->timeoutSeconds(), comm_->timeoutSetting());
  } else {
    ctx.launch(c.dtype, nativeOpOf(c.op), c.packet, params::timeoutSeconds());
  }
}

void CpuBackend::bindCounts(const ExecCall& c, CpuContext& ctx, uint64_t* inBytes, uint64_t* outBytes) {
  const plan::Plan& p = *c.plan;
  const size_t elem = dataTypeSize(c.dtype);
  const std::string rule = checkCountRule(p, c.rank, c.counts);
  if (!rule.empty())
    throw Error(ErrorCode::InvalidArgument, withRankCounts(rule, c.rank, p.header.worldSize, c.counts));
  std::string why = checkCounts(p, c.rank, c.counts, elem, c.sendBytes, c.recvBytes);
  if (why.empty()) why = ctx.bindSegments(c.counts, elem);
  if (!why.empty()) throw CountsError(withRankCounts(why, c.rank, p.header.worldSize, c.counts));
  plan::variableCallBytes(p.header.collective, p.header.worldSize, c.counts, elem, c.rank, inBytes, outBytes);
}

void CpuBackend::run(const ExecCall& c, CpuContext& ctx) {
  const plan::PlanHeader& h = c.plan->header;
  const RankResources& res = ctx.image().resources();
  if (h.variableSizes) {
    // Only the segments the counts name are copied, so the send and
    // receive buffers may be the same.
    uint64_t inBytes = 0, outBytes = 0;
    bindCounts(c, ctx, &inBytes, &outBytes);
    if (inBytes > 0) {
      if (c.op == ReduceOp::PreMulSum) {
        preMultiplyHost(c.dtype, res.input, c.send, inBytes, c.scalar);
      } else {
        std::memcpy(res.input, c.send, inBytes);
      }
    }
    launch(c, ctx);
    const uint64_t avgBytes = reducedOutputBytes(h.collective, c.rank, h.root, outBytes);
    if (c.op == ReduceOp::Avg && avgBytes > 0)
      divideHost(c.dtype, res.output, avgBytes, static_cast<uint32_t>(c.plan->ranks.size()));
    if (outBytes > 0) std::memcpy(c.recv, res.output, outBytes);
    return;
  }
  // Stage in: the plan's input gets the send buffer, pre-scaled for
  // premulsum. Off a scatter's root the send buffer is never read: NCCL
  // allows any pointer there. A padded call moves each rank-major part
  // between the call's pitch and the plan's; padding never reaches the user.
  const plan::CallGeometry& geometry = ctx.image().shape().geometry;
  if (readsInput(h.collective, c.rank, h.root) && c.sendBytes > 0) {
    const uint32_t parts = geometry.padded ? geometry.inputParts : 1;
    const uint64_t part = geometry.padded ? geometry.partBytes : c.sendBytes;
    for (uint32_t i = 0; i < parts; ++i) {
      char* dst = static_cast<char*>(res.input) + i * geometry.paddedPartBytes;
      const char* src = static_cast<const char*>(c.send) + i * part;
      if (c.op == ReduceOp::PreMulSum) {
        preMultiplyHost(c.dtype, dst, src, part, c.scalar);
      } else {
        std::memcpy(dst, src, part);
      }
    }
  }
  launch(c, ctx);
  if (c.op == ReduceOp::Avg) {
    const uint64_t bytes = reducedOutputBytes(h.collective, c.rank, h.root, geometry.outputBytes);
    if (bytes > 0) divideHost(c.dtype, res.output, bytes, static_cast<uint32_t>(c.plan->ranks.size()));
  }
  if (writesOutput(h.collective, c.rank, h.root) && c.recvBytes > 0) {
    if (!geometry.padded) {
      std::memcpy(c.recv, res.output, c.recvBytes);
    } else {
      for (uint32_t i = 0; i < geometry.outputParts; ++i)
        std::memcpy(static_cast<char*>(c.recv) + i * geometry.partBytes,
                    static_cast<const char*>(res.output) + i * geometry.paddedPartBytes, geometry.partBytes);
    }
  }
}

}  // namespace mscclpp::exec
