#include "executor/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/params.hpp"
#include "executor/scale_steps.hpp"

namespace mscclpp::exec {

CpuBackend::CpuBackend(std::shared_ptr<ContextWiring> wiring, LaunchAbort& abort)
    : wiring_(std::move(wiring)),
      abort_(abort),
      cache_(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize()))) {}

CpuContext& CpuBackend::context(const ExecCall& c) {
  Key key{c.plan, c.rank, c.sendBytes, c.recvBytes};
  if (CpuContext* hit = cache_.find(key)) return *hit;
  CallShape shape = shapeCall(*c.plan, c.rank, c.sendBytes, c.recvBytes, c.dtype);
  RankResources res = wiring_->connect(c.plan, c.rank, shape);
  auto ctx = std::make_unique<CpuContext>(c.plan, c.rank, shape, std::move(res));
  cache_.setCapacity(static_cast<size_t>(std::max<int64_t>(1, params::contextCacheSize())));
  std::vector<std::unique_ptr<CpuContext>> evicted;  // destroyed when this call leaves
  CpuContext& inserted = cache_.insert(std::move(key), std::move(ctx), &evicted);
  MSCCLPP_INFO(LogExec, "plan %s rank %d: execution context built for %llu input and %llu output bytes",
               c.plan->header.name.c_str(), c.rank, static_cast<unsigned long long>(c.sendBytes),
               static_cast<unsigned long long>(c.recvBytes));
  return inserted;
}

void CpuBackend::execute(const ExecCall& c) {
  const plan::PlanHeader& h = c.plan->header;
  CpuContext& ctx = context(c);
  const RankResources& res = ctx.image().resources();
  // Stage in: the plan's input (inside the data buffer for in-place plans) gets the send buffer,
  // pre-scaled for premulsum. Off a scatter's root the send buffer is never read (NCCL allows any
  // pointer there, even one to fewer bytes).
  if (readsInput(h.collective, c.rank, h.root) && c.sendBytes > 0) {
    if (c.op == ReduceOp::PreMulSum) {
      preMultiplyHost(c.dtype, res.input, c.send, c.sendBytes, c.scalar);
    } else {
      std::memcpy(res.input, c.send, c.sendBytes);
    }
  }
  {
    LaunchAbort::Running running(abort_, ctx.image().device().abortFlag,
                                 strFormat("plan %s rank %d", h.name.c_str(), c.rank));
    ctx.launch(c.dtype, nativeOpOf(c.op), c.packet, params::timeoutSeconds());
  }
  if (c.op == ReduceOp::Avg) {
    const uint64_t bytes = reducedOutputBytes(h.collective, c.rank, h.root, c.recvBytes);
    if (bytes > 0) divideHost(c.dtype, res.output, bytes, static_cast<uint32_t>(c.plan->ranks.size()));
  }
  if (writesOutput(h.collective, c.rank, h.root) && c.recvBytes > 0) std::memcpy(c.recv, res.output, c.recvBytes);
}

}  // namespace mscclpp::exec
