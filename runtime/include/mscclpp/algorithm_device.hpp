// The kernel side of a native algorithm (docs/algorithms.md): what a kernel sees of its rank
// (AlgorithmDeviceContext: buffers, a channel to every peer, the peers' buffers) and AlgorithmBlock,
// through which it waits. The runtime builds the context, caches it per call shape and launches the
// kernel, as for a plan; AlgorithmBlock keeps the launch records a plan's blocks keep, so a stuck
// wait is published to the call monitor, a dead peer stops it and a deadline ends it. One source
// for both backends: nvcc compiles it into a kernel, the host compiler into the CPU backend's
// blocks (one thread each). Everything here is trivially copyable or header-only.
#ifndef MSCCLPP_ALGORITHM_DEVICE_HPP_
#define MSCCLPP_ALGORITHM_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "mscclpp/device.hpp"
#include "mscclpp/device_syncer.hpp"
#include "mscclpp/host_launch.hpp"
#include "mscclpp/launch_records_device.hpp"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/packet_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/switch_channel_device.hpp"

namespace mscclpp {

// A port-channel memory id that names no buffer.
constexpr uint32_t kNoMemoryId = 0xffffffffu;
// This rank's own buffers as port-channel put sources.
constexpr uint32_t kInputMemoryId = 0;
constexpr uint32_t kOutputMemoryId = 1;
constexpr uint32_t kScratchMemoryId = 2;

// One rank as a kernel reaches it. Buffers are mapped for loads and
// stores when the rank is on this host and the algorithm asked for them,
// else null; memory ids name them for port-channel puts (kNoMemoryId: none).
struct AlgorithmPeer {
  char* input;
  char* output;
  char* scratch;  // the whole buffer; a launch uses AlgorithmBlock::peerScratch
  uint32_t inputId;
  uint32_t outputId;
  uint32_t scratchId;
  int32_t host;  // its host's index: hosts are numbered by their lowest rank
};

// One rank's view of a native algorithm's execution context. Arrays live
// where the kernel runs (device memory on a GPU). Channels are indexed by
// peer rank; the entry of a peer with no such channel is zeroed.
// Memory channels: dst_ is the peer's output (else its scratch), src_ our
// input, packetBuffer_ our scratch. Port channels: dst_ the peer's output
// id, src_ our input's.
struct AlgorithmDeviceContext {
  int32_t rank;
  int32_t nRanks;
  int32_t root;  // rooted collectives; 0 otherwise
  int32_t host;  // this rank's host index, and the hosts of the communicator
  int32_t nHosts;
  int32_t localRank;  // its index among the ranks of its host, in rank order
  int32_t nLocalRanks;
  uint32_t nBlocks;
  char* input;
  char* output;
  char* scratch;  // both halves when the algorithm double-buffers it
  uint64_t inputBytes;
  uint64_t outputBytes;
  uint64_t scratchBytes;                      // one launch's part (a half when double-buffered)
  uint64_t scratchHalfBytes;                  // offset of the second half; 0 when not double-buffered
  MemoryChannelDeviceHandle* memoryChannels;  // [nRanks]
  PortChannelDeviceHandle* portChannels;      // [nRanks]
  SwitchChannelDeviceHandle* switchChannels;  // input's, then output's, as asked for
  uint32_t nSwitchChannels;
  uint32_t reserved;
  const AlgorithmPeer* peers;  // [nRanks]; peers[rank] is this rank
  // The launch state AlgorithmBlock keeps; kernels need not touch it.
  DeviceSyncer* gridBarrier;
  ExecState* state;
  BlockRecord* blockRecords;  // [nBlocks]
  uint32_t* abortFlag;        // nonzero: a block or rank failed, stop waiting
  LiveWaitSlot* liveWaits;    // [nBlocks]
};
static_assert(std::is_trivially_copyable<AlgorithmDeviceContext>::value, "copied to device memory as bytes");

// Per launch, by value.
struct AlgorithmLaunchArgs {
  uint64_t timeoutNs;  // each block's deadline: its start plus this; kNoDeadline: none
  uint32_t call;       // the call's tag for published waits (launchCallTag)
  int32_t dtype;       // DataType
  int32_t op;          // ReduceOp: Sum, Prod, Max or Min (avg and premulsum run as Sum around the kernel)
  uint32_t flags;      // kAlgorithmLaunch* bits
};
// The CUDA backend launches cooperatively (cudaLaunchCooperativeKernel):
// blocks that wait on each other, directly or through peers, are resident together.
constexpr uint32_t kAlgorithmLaunchCooperative = 1u;
// A GPU context: its waits poll the abort flag's device-memory copy
// (ExecState::abortCopy), which long waits raise from the host's flag.
constexpr uint32_t kAlgorithmLaunchAbortCopy = 2u;

// One thread's handle on its block's launch. Every wait goes through it:
// bounded by the launch's deadline, stopped by the abort flag, published
// after 1 ms where the host reads it. A failed wait records where the
// block stopped, raises the abort flag (other blocks and ranks stop), and
// makes this thread's later waits return false at once. A kernel then
// runs on to its end without waiting; every thread of the block must still
// reach each block barrier it calls.
class AlgorithmBlock {
 public:
  MSCCLPP_HOST_DEVICE_INLINE AlgorithmBlock(const AlgorithmDeviceContext& ctx, const AlgorithmLaunchArgs& args,
                                            uint32_t block, uint32_t thread, uint32_t nThreads)
      : ctx_(ctx), block_(block), tid_(thread), nthreads_(nThreads), dtype_(args.dtype), op_(args.op) {
    deadline_ = args.timeoutNs == kNoDeadline ? kNoDeadline : deadlineAfter(args.timeoutNs);
    // Acquire: pairs with the previous launch's last block, which released the advanced flag.
    flag_ = atomicLoad<uint32_t, scopeDevice>(&ctx.state->flag, memoryOrderAcquire);
    half_ = (ctx.scratchHalfBytes != 0 && (flag_ & 1u) == 0) ? ctx.scratchHalfBytes : 0;
    // GPU contexts' waits poll the abort flag's device-memory copy; the host
    // raises the mapped flag, which long waits read once per round.
    recorder_ =
        BlockRecorder::of(ctx, block, thread, flag_, args.call,
                          (args.flags & kAlgorithmLaunchAbortCopy) != 0 ? &ctx.state->abortCopy : ctx.abortFlag);
  }

  MSCCLPP_HOST_DEVICE_INLINE const AlgorithmDeviceContext& context() const { return ctx_; }
  MSCCLPP_HOST_DEVICE_INLINE uint32_t block() const { return block_; }
  MSCCLPP_HOST_DEVICE_INLINE uint32_t thread() const { return tid_; }
  MSCCLPP_HOST_DEVICE_INLINE uint32_t threads() const { return nthreads_; }
  // The launch's DataType and reduce op (ReduceOp numbering).
  MSCCLPP_HOST_DEVICE_INLINE int dtype() const { return dtype_; }
  MSCCLPP_HOST_DEVICE_INLINE int op() const { return op_; }
  // The launch's LL flag: never 0, another for every launch.
  MSCCLPP_HOST_DEVICE_INLINE uint32_t flag() const { return flag_; }
  // This launch's part of the scratch, ours and a peer's (its mapping; null when unmapped).
  MSCCLPP_HOST_DEVICE_INLINE uint64_t scratchOffset() const { return half_; }
  MSCCLPP_HOST_DEVICE_INLINE char* scratch() const { return ctx_.scratch + half_; }
  MSCCLPP_HOST_DEVICE_INLINE char* peerScratch(int peer) const {
    char* s = ctx_.peers[peer].scratch;
    return s == nullptr ? nullptr : s + half_;
  }
  // False once a wait of this thread failed or the launch was aborted.
  MSCCLPP_HOST_DEVICE_INLINE bool ok() const { return !failed_; }

  // The step the block is at, named by the algorithm's step names in
  // diagnostics. Call it from every thread of the block alike.
  MSCCLPP_HOST_DEVICE_INLINE void step(uint32_t s) {
    step_ = s;
#if !defined(MSCCLPP_DEVICE_COMPILE)
    atomicStore<uint32_t, scopeDevice>(&ctx_.blockRecords[block_].opIndex, s, memoryOrderRelaxed);
#endif
  }

  // ---- memory channels: a signal releases our earlier writes, a wait acquires the peer's ----
  MSCCLPP_HOST_DEVICE_INLINE void signal(int peer) { ctx_.memoryChannels[peer].signal(); }
  MSCCLPP_HOST_DEVICE_INLINE bool wait(int peer) {
    if (stopped()) return false;
    auto& sem = ctx_.memoryChannels[peer].semaphore_;
    const uint64_t expected = sem.claimNextExpected();
    uint64_t observed = 0;
    const SpinStatus st = reportedWait(
        WaitKind::MemoryChannel, static_cast<uint32_t>(peer), expected, &observed,
        [&](uint64_t deadline) { return sem.waitClaimed(expected, deadline, recorder_.waitAbort, &observed); });
    return settle(st, WaitKind::MemoryChannel, static_cast<uint32_t>(peer), expected, observed, 0);
  }

  // ---- port channels: requests to this rank's proxy, performed in order ----
  MSCCLPP_HOST_DEVICE_INLINE bool put(int peer, MemoryId dst, uint64_t dstOffset, MemoryId src, uint64_t srcOffset,
                                      uint64_t bytes, bool withSignal) {
    if (stopped()) return false;
    auto& ch = ctx_.portChannels[peer];
    const SpinStatus st = withSignal
                              ? ch.putWithSignal(dst, dstOffset, src, srcOffset, bytes, deadline_, ctx_.abortFlag)
                              : ch.put(dst, dstOffset, src, srcOffset, bytes, deadline_, ctx_.abortFlag);
    return settle(st, st == SpinStatus::Invalid ? WaitKind::Request : WaitKind::FifoPush, static_cast<uint32_t>(peer),
                  0, 0, bytes);
  }
  MSCCLPP_HOST_DEVICE_INLINE bool portSignal(int peer) {
    if (stopped()) return false;
    const SpinStatus st = ctx_.portChannels[peer].signal(deadline_, ctx_.abortFlag);
    return settle(st, WaitKind::FifoPush, static_cast<uint32_t>(peer), 0, 0, 0);
  }
  // Waits until the proxy completed every request pushed before: our sources may be reused.
  MSCCLPP_HOST_DEVICE_INLINE bool portFlush(int peer) {
    if (stopped()) return false;
    uint64_t index = 0, tail = 0;
    const SpinStatus st = ctx_.portChannels[peer].flush(deadline_, ctx_.abortFlag, &index, &tail);
    return settle(st, WaitKind::Flush, static_cast<uint32_t>(peer), index + 1, tail, 0);
  }
  MSCCLPP_HOST_DEVICE_INLINE bool portWait(int peer) {
    if (stopped()) return false;
    auto& sem = ctx_.portChannels[peer].semaphore_;
    const uint64_t expected = sem.claimNextExpected();
    uint64_t observed = 0;
    const SpinStatus st = reportedWait(
        WaitKind::PortChannel, static_cast<uint32_t>(peer), expected, &observed,
        [&](uint64_t deadline) { return sem.waitClaimed(expected, deadline, recorder_.waitAbort, &observed); });
    return settle(st, WaitKind::PortChannel, static_cast<uint32_t>(peer), expected, observed, 0);
  }

  // ---- LL packets: waits for the packet at `p` to carry this launch's flag ----
  // writer: the rank whose store it waits for; byteOffset: where it lies in its buffer.
  template <class Packet>
  MSCCLPP_HOST_DEVICE_INLINE bool readPacket(const Packet* p, int writer, uint64_t byteOffset,
                                             typename Packet::Payload* payload) {
    if (stopped()) return false;
    uint32_t seen = 0;
    if (p->readOnce(flag_, payload, &seen)) return true;
    uint64_t observed = seen;
    const SpinStatus st = reportedWait(
        WaitKind::Packet, static_cast<uint32_t>(writer), flag_, &observed,
        [&](uint64_t deadline) {
          const SpinStatus s = mscclpp::readPacket(p, flag_, payload, deadline, recorder_.waitAbort, &seen);
          observed = seen;
          return s;
        },
        byteOffset);
    return settle(st, WaitKind::Packet, static_cast<uint32_t>(writer), flag_, observed, byteOffset);
  }

  // Every block of this rank's launch: their writes before it are visible to all after it.
  // All threads of every block call it.
  MSCCLPP_HOST_DEVICE_INLINE bool gridSync() {
    const uint64_t none = 0;
    const SpinStatus st = ctx_.gridBarrier->syncWith(ctx_.nBlocks, recorder_.waitAbort, [&](auto&& spin) {
      if (failed_) return SpinStatus::Aborted;
      return reportedWait(WaitKind::Barrier, 0, ctx_.nBlocks, &none, spin);
    });
    return settle(st, WaitKind::Barrier, 0, ctx_.nBlocks, 0, 0);
  }

  // The block's end: every thread calls it once (the entry points below do).
  MSCCLPP_HOST_DEVICE_INLINE void finish() {
    syncBlockThreads();
    if (tid_ == 0) recorder_.finish(ctx_.nBlocks);
  }

 private:
  MSCCLPP_HOST_DEVICE_INLINE bool stopped() {
    if (failed_) return true;
    if (atomicLoad<uint32_t>(recorder_.waitAbort, memoryOrderRelaxed) == 0) return false;
    fail(SpinStatus::Aborted, WaitKind::None, 0, 0, 0, 0);
    return true;
  }

  MSCCLPP_HOST_DEVICE_INLINE bool settle(SpinStatus st, WaitKind kind, uint32_t what, uint64_t expected,
                                         uint64_t observed, uint64_t detail) {
    if (st == SpinStatus::Ok) return true;
    fail(st, kind, what, expected, observed, detail);
    return false;
  }

  // Long waits publish themselves where the host reads them (BlockRecorder::reportedWait).
  template <class Spin>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus reportedWait(WaitKind kind, uint32_t what, uint64_t expected,
                                                     const uint64_t* observed, Spin&& spin, uint64_t detail = 0) {
    return recorder_.reportedWait(site(), kind, what, expected, observed, deadline_, spin, detail);
  }
  MSCCLPP_HOST_DEVICE_INLINE WaitSite site() const { return {step_, UINT32_MAX}; }

  // Records where the block stopped; a failure of its own stops the other blocks and ranks.
  MSCCLPP_HOST_DEVICE_INLINE void fail(SpinStatus st, WaitKind kind, uint32_t what, uint64_t expected,
                                       uint64_t observed, uint64_t detail) {
    if (failed_) return;
    failed_ = true;
    recorder_.recordStop(st, site(), 0, kind, what, expected, observed, detail, /*publishInvalid=*/false);
  }

  const AlgorithmDeviceContext& ctx_;
  uint32_t block_, tid_, nthreads_;
  int32_t dtype_, op_;
  uint32_t flag_ = 0;
  uint32_t step_ = 0;
  uint64_t half_ = 0;
  uint64_t deadline_ = kNoDeadline;
  // Waits, stops and the block's end in the launch records. Its waitAbort is
  // the flag the spins poll; FIFO waits, which wait for the host's proxy
  // anyway, read the host's flag itself.
  BlockRecorder recorder_{};
  bool failed_ = false;
};

// ---- Entry points. Kernel: a default-constructible functor with
// `MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock&) const`. ----

// The CPU backend's entry: block `block` of a launch, on the calling host thread.
template <class Kernel>
void algorithmHostBlock(const void* context, const void* args, uint32_t block) {
  const auto& ctx = *static_cast<const AlgorithmDeviceContext*>(context);
  const auto& a = *static_cast<const AlgorithmLaunchArgs*>(args);
  const detail::HostGridPosition saved = detail::hostGridPosition();
  detail::hostGridPosition() = detail::HostGridPosition{block, ctx.nBlocks};
  AlgorithmBlock b(ctx, a, block, 0, 1);
  Kernel{}(b);
  b.finish();
  detail::hostGridPosition() = saved;
}

#if defined(__CUDACC__)
template <class Kernel>
__global__ void algorithmKernel(const AlgorithmDeviceContext* ctx, AlgorithmLaunchArgs args) {
  AlgorithmBlock b(*ctx, args, blockIdx.x, threadIdx.x, blockDim.x);
  Kernel{}(b);
  b.finish();
}

// The CUDA backend's entry: enqueues the kernel on stream; returns the cudaError_t of the launch.
template <class Kernel>
int algorithmGpuLaunch(const void* deviceContext, const void* args, uint32_t nBlocks, uint32_t threadsPerBlock,
                       void* stream) {
  const AlgorithmDeviceContext* ctx = static_cast<const AlgorithmDeviceContext*>(deviceContext);
  AlgorithmLaunchArgs a = *static_cast<const AlgorithmLaunchArgs*>(args);
  void* params[] = {&ctx, &a};
  const void* kernel = reinterpret_cast<const void*>(&algorithmKernel<Kernel>);
  // Both return this launch's own error; an earlier error of the caller's stays.
  cudaError_t e = (a.flags & kAlgorithmLaunchCooperative) != 0
                      ? cudaLaunchCooperativeKernel(kernel, dim3(nBlocks), dim3(threadsPerBlock), params, 0,
                                                    static_cast<cudaStream_t>(stream))
                      : cudaLaunchKernel(kernel, dim3(nBlocks), dim3(threadsPerBlock), params, 0,
                                         static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) (void)cudaGetLastError();
  return static_cast<int>(e);
}

// What the kernel allows on the current device; returns a cudaError_t.
template <class Kernel>
int algorithmGpuQuery(int threadsPerBlock, int* maxThreadsPerBlock, int* blocksPerSm) {
  cudaFuncAttributes attr{};
  cudaError_t e = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&algorithmKernel<Kernel>));
  if (e == cudaSuccess) {
    *maxThreadsPerBlock = attr.maxThreadsPerBlock;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        blocksPerSm, reinterpret_cast<const void*>(&algorithmKernel<Kernel>), threadsPerBlock, 0);
  }
  if (e != cudaSuccess) (void)cudaGetLastError();
  return static_cast<int>(e);
}
#endif

}  // namespace mscclpp

#endif  // MSCCLPP_ALGORITHM_DEVICE_HPP_
