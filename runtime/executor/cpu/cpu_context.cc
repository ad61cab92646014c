#include "executor/cpu/cpu_context.hpp"

#include <algorithm>
#include <cstring>

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/cpu/host_block_runner.hpp"
#include "executor/cpu/remote_port_peers.hpp"
#include "executor/diagnostics.hpp"

namespace mscclpp::exec {
namespace {

uint64_t secondsToNs(double s) { return s <= 0 ? kNoDeadline : static_cast<uint64_t>(s * 1e9); }

// Connection::flush's "no deadline of mine": it then applies MSCCLPP_TIMEOUT_S, none by default.
constexpr int64_t kNoFlushDeadlineUsec = -1;

}  // namespace

CpuContext::CpuContext(plan::PlanPtr plan, int rank, const CallShape& shape, RankResources resources,
                       double timeoutSeconds, const char* timeoutSetting, NativeProgramPtr native)
    : native_(std::move(native)) {
  const std::string name = strFormat("plan %s rank %d", plan->header.name.c_str(), rank);
  const uint64_t handleTimeout = secondsToNs(timeoutSeconds);
  FifoDeviceHandle fifo{};
  if (!plan->ranks.at(rank).portChannels.empty()) {
    int64_t slots = params::proxyFifoSize();
    MSCCLPP_ENFORCE(slots > 0 && slots <= (1 << 20), ErrorCode::InvalidArgument,
                    "MSCCLPP_PROXY_FIFO_SIZE=%lld: expected 1 to 1048576 slots", static_cast<long long>(slots));
    proxy_ = std::make_unique<ProxyService>(static_cast<int>(slots), kHostDevice, timeoutSeconds, timeoutSetting);
    fifo = proxy_->fifoDeviceHandle();
  }
  if (native_) {
    liveWaits_.assign(std::max<size_t>(1, plan->ranks.at(rank).threadblocks.size()), LiveWaitSlot{});
    resources.liveWaits = liveWaits_.data();
  }
  image_ =
      ContextImage::build(std::move(plan), rank, shape, std::move(resources), proxy_ ? &fifo : nullptr, handleTimeout);
  if (native_) {
    const ExecContextDevice& dev = image_->device();
    view_ = std::make_unique<NativeView>(*native_, *image_, dev, dev.memoryChannels, dev.portChannels);
  }
  if (proxy_) {
    // The handler reads this context's tables; a failure raises the abort flag so blocks stop.
    proxy_->setRequestHandler([this](const TriggerFields& f) { return handleRequest(f); });
    proxy_->setFailureFlag(image_->device().abortFlag);
    proxy_->startProxy();
  }
  workers_ = std::make_unique<BlockWorkers>(image_->device().nBlocks, rank, name);
}

CpuContext::~CpuContext() {
  workers_.reset();
  if (proxy_) proxy_->stopProxy();
}

// The emulated port-channel transfer: a copy into the peer's shared
// memory, then a release increment of its semaphore, in FIFO order. A flush
// needs nothing more: pop() publishes the tail that flush waits for.
std::string CpuContext::handleRequest(const TriggerFields& f) {
  const RankResources& res = image_->resources();
  if (res.remotePorts && res.remotePorts->crossesHost(f.channelId)) return handleRemoteRequest(f);
  if (f.type & TriggerPut) {
    char *src = nullptr, *dst = nullptr;
    std::string error = image_->resolvePut(f, &src, &dst);
    if (!error.empty()) return error;
    std::memmove(dst, src, f.size);
  }
  if (f.type & TriggerSignal) {
    const auto& out = image_->resources().portOutbound;
    if (f.channelId >= out.size()) return strFormat("signal on port channel %u; %zu declared", f.channelId, out.size());
    // Release: the copies performed for this channel before the signal are visible to the peer's wait.
    atomicFetchAdd<uint64_t>(out[f.channelId], 1, memoryOrderRelease);
  }
  return std::string();
}

// A request of a port channel to another host: the same operations on the
// channel's connection, in FIFO order, so a signal follows earlier puts.
// A connection error becomes the proxy's failure.
std::string CpuContext::handleRemoteRequest(const TriggerFields& f) {
  RemotePortPeers& peers = *image_->resources().remotePorts;
  RemotePortPeers::Channel& ch = peers.channels[f.channelId];
  const auto& table = image_->memoryTable();
  const char* op = "put";
  try {
    if (f.type & TriggerPut) {
      if (f.srcMemoryId >= kFirstRemoteMemoryId || f.dstMemoryId < kFirstRemoteMemoryId ||
          f.dstMemoryId >= peers.memories.size() || peers.memories[f.dstMemoryId].owner != ch.peer) {
        return strFormat(
            "plan %s rank %d: put on port channel %u (to rank %d on another host) names memory ids %u -> "
            "%u; the source must be this rank's input/output/scratch (0-2) and the destination a remote "
            "buffer of rank %d",
            peers.planName.c_str(), peers.rank, f.channelId, ch.peer, f.srcMemoryId, f.dstMemoryId, ch.peer);
      }
      const RemotePortPeers::Memory& s = peers.memories[f.srcMemoryId];
      const RemotePortPeers::Memory& d = peers.memories[f.dstMemoryId];
      const uint64_t sBytes = table[f.srcMemoryId].bytes, dBytes = table[f.dstMemoryId].bytes;
      if (f.srcOffset + f.size > sBytes || f.dstOffset + f.size > dBytes || f.srcOffset + f.size < f.srcOffset ||
          f.dstOffset + f.size < f.dstOffset) {
        return strFormat(
            "plan %s rank %d: put on port channel %u of %llu bytes from memory %u offset %llu (%llu "
            "bytes) to rank %d's memory %u offset %llu (%llu bytes) is out of bounds",
            peers.planName.c_str(), peers.rank, f.channelId, ull(f.size), f.srcMemoryId, ull(f.srcOffset), ull(sBytes),
            ch.peer, f.dstMemoryId, ull(f.dstOffset), ull(dBytes));
      }
      if (f.size > 0) ch.connection->write(d.region, d.offset + f.dstOffset, s.region, s.offset + f.srcOffset, f.size);
    }
    if (f.type & TriggerSignal) {
      op = "signal";
      ch.connection->updateAndSync(ch.peerRegion, ch.peerCounterOffset, &ch.outbound, ch.outbound + 1);
    }
    if (f.type & TriggerFlush) {
      op = "flush";
      // The launch's timeout, which is the communicator's own when it has
      // one; MSCCLPP_TIMEOUT_S alone would ignore that.
      const double s = launchTimeoutSeconds_.load(std::memory_order_relaxed);
      ch.connection->flush(s <= 0 ? kNoFlushDeadlineUsec : static_cast<int64_t>(s * 1e6));
    }
  } catch (const std::exception& e) {
    return strFormat("plan %s rank %d: %s on port channel %u to rank %d (host %s) failed: %s", peers.planName.c_str(),
                     peers.rank, op, f.channelId, ch.peer, ch.peerHost.c_str(), e.what());
  }
  return std::string();
}

// A plan may end with requests still in the FIFO. A launch returns only
// once the proxy performed every request its blocks pushed: on this host
// the copy and increment are done; to another host the request is in the
// socket. A process that exits after its last collective then keeps its
// final signal. No flush: it needs the peer's acknowledgement, and a peer
// that finished its own launch may be gone.
std::string CpuContext::completeProxyRequests(double timeoutSeconds) {
  FifoDeviceHandle fifo = proxy_->fifoDeviceHandle();
  // Acquire: the blocks' pushes happened before they finished (joined by run()); head is final.
  const uint64_t head = atomicLoad<uint64_t>(fifo.head, memoryOrderAcquire);
  if (head == 0) return std::string();
  const SpinStatus st = fifo.sync(head - 1, deadlineAfter(secondsToNs(timeoutSeconds)), image_->device().abortFlag);
  if (st == SpinStatus::Ok) return std::string();
  return strFormat("waiting for the proxy to perform the launch's last port-channel requests: %s",
                   st == SpinStatus::Timeout ? "timed out" : "stopped (the proxy failed)");
}

std::vector<BlockWait> CpuContext::liveBlocks(uint64_t* progress) const {
  const ExecContextDevice& dev = image_->device();
  // A native kernel's blocks publish their long waits, as on a GPU.
  if (native_)
    return describeWaitSlots(image_->plan(), image_->rank(), liveWaits_.data(), dev.nBlocks, progress, nullptr,
                             &native_->kernel->steps);
  return describeLiveBlocks(image_->plan(), image_->rank(), dev, lastFlag_.load(), progress);
}

void CpuContext::warnLongWait(double waited) const {
  const plan::Plan& plan = image_->plan();
  const std::string what = summarizeWaits(liveBlocks(nullptr));
  const std::string peers = peerStatus_ ? peerStatus_() : std::string();
  MSCCLPP_WARN(LogExec,
               "plan %s rank %d: launch with flag %u has waited %.3g s (MSCCLPP_WAIT_WARN_S=%.3g; no deadline "
               "unless MSCCLPP_TIMEOUT_S sets one): %s%s%s",
               plan.header.name.c_str(), image_->rank(), lastFlag_.load(), waited, params::waitWarnSeconds(),
               what.empty() ? "its threadblocks are finishing" : what.c_str(), peers.empty() ? "" : "; ",
               peers.c_str());
}

LiveCall CpuContext::liveCall() const {
  LiveCall call;
  call.waits = liveBlocks(&call.progress);
  if (proxy_) {
    // Requests still in the proxy (a put in flight over TCP) are work, not a wait.
    FifoDeviceHandle fifo = proxy_->fifoDeviceHandle();
    const uint64_t head = atomicLoad<uint64_t>(fifo.head, memoryOrderRelaxed);
    const uint64_t tail = atomicLoad<uint64_t>(fifo.tail, memoryOrderRelaxed);
    call.progress = mix64(mix64(call.progress, head), tail);
    if (head != tail) {
      BlockWait busy;
      busy.text = strFormat("rank %d: its proxy has %llu request(s) in flight", image_->rank(), ull(head - tail));
      call.waits.push_back(std::move(busy));
    }
  }
  return call;
}

Refusal CpuContext::launchRefusal(DataType dtype) const {
  const size_t elem = dataTypeSize(dtype);
  if (elem > 0 && (image_->reduceGranularity() % elem) == 0) return std::nullopt;
  return strFormat("plan %s rank %d: its reductions touch offsets/sizes in steps of %llu bytes, not whole %s elements",
                   image_->plan().header.name.c_str(), image_->rank(), ull(image_->reduceGranularity()),
                   dataTypeName(dtype));
}

void CpuContext::launch(DataType dtype, ReduceOp op, PacketType packet, double timeoutSeconds,
                        const char* timeoutSetting) {
  const plan::Plan& plan = image_->plan();
  const int rank = image_->rank();
  MSCCLPP_ENFORCE(!failed_, ErrorCode::InvalidUsage,
                  "plan %s rank %d: this execution context failed in an earlier launch and cannot run again",
                  plan.header.name.c_str(), rank);
  if (Refusal r = launchRefusal(dtype)) throw Error(ErrorCode::NotSupported, *r);
  const ExecContextDevice& dev = image_->device();
  LaunchArgs args{secondsToNs(timeoutSeconds), static_cast<uint32_t>(packet), 0};
  launchTimeoutSeconds_.store(timeoutSeconds, std::memory_order_relaxed);  // before any block can push
  lastFlag_ = dev.state->flag;  // no launch in flight: a plain read is ordered by the last run()
  // The workers' own limit backs up the interpreter's deadlines, which are
  // none by default: a dead peer raises the abort flag instead.
  const double safety = timeoutSeconds <= 0 ? 0 : 2 * timeoutSeconds + 30;
  if (native_) {
    const AlgorithmLaunchArgs nativeArgs{args.timeoutNs, 0, static_cast<int32_t>(dtype), static_cast<int32_t>(op), 0};
    const NativeHostBlockFn block = native_->kernel->hostBlock;
    const AlgorithmDeviceContext* view = &view_->context();
    workers_->run([&](uint32_t b) { block(view, &nativeArgs, b); }, safety, params::waitWarnSeconds(),
                  [&](double waited) { warnLongWait(waited); });
  } else {
    HostBlockFn fn = hostBlockFunction(dtype, op);
    workers_->run([&](uint32_t block) { fn(dev, block, args); }, safety, params::waitWarnSeconds(),
                  [&](double waited) { warnLongWait(waited); });
  }

  bool stopped = false, timedOut = false, invalid = false;
  for (uint32_t b = 0; b < dev.nBlocks; ++b) {
    uint32_t s = dev.blockRecords[b].state;
    stopped |= blockStopped(dev.blockRecords[b]);
    timedOut |= s == kBlockTimedOut;
    invalid |= s == kBlockInvalid;
  }
  std::string drainError;
  if (!stopped && proxy_ && proxy_->errorMessage().empty()) drainError = completeProxyRequests(timeoutSeconds);
  const std::string proxyError = proxy_ ? proxy_->errorMessage() : std::string();
  if (!stopped && proxyError.empty() && drainError.empty()) return;
  failed_ = true;
  std::string msg = strFormat("plan %s (%s) rank %d: launch with flag %u failed", plan.header.name.c_str(),
                              plan.header.source.c_str(), rank, lastFlag_.load());
  if (timedOut) msg += " (" + describeTimeout(timeoutSetting, timeoutSeconds) + ")";
  if (!proxyError.empty()) msg += "; " + proxyError;
  if (!drainError.empty() && proxyError.empty()) msg += "; " + drainError;
  for (const std::string& line :
       describeUnfinishedBlocks(plan, rank, dev.blockRecords, dev.nBlocks, lastFlag_.load(),
                                dev.state->firstFailedBlock, native_ ? &native_->kernel->steps : nullptr)) {
    msg += "\n  " + line;
  }
  if (timedOut) throw TimeoutError(msg);
  if (!proxyError.empty() && image_->resources().remotePorts) throw Error(ErrorCode::RemoteError, msg);
  if (!drainError.empty()) throw TimeoutError(msg);
  if (invalid || !proxyError.empty()) throw Error(ErrorCode::NotSupported, msg);
  throw Error(ErrorCode::Aborted, msg);
}

}  // namespace mscclpp::exec
