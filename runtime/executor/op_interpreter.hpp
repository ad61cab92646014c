// The op interpreter: the semantics of every plan operation, written once as
// __host__ __device__ code. The GPU kernel runs one BlockInterpreter per CUDA
// block, all its threads cooperating; the CPU backend runs one per host
// thread, as thread 0 of 1. MSCCLPP_DEVICE_COMPILE marks where the hardware
// differs. The synchronisation rules it keeps are in docs/executor.md,
// "The op interpreter".
#ifndef MSCCLPP_EXECUTOR_OP_INTERPRETER_HPP_
#define MSCCLPP_EXECUTOR_OP_INTERPRETER_HPP_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exec_layout.hpp"
#include "mscclpp/copy_device.hpp"
#include "mscclpp/datatype.hpp"
#include "mscclpp/device.hpp"
#include "mscclpp/packet_device.hpp"
#include "mscclpp/switch_channel_device.hpp"
#include "reduce_ops.hpp"
#include "vector_reduce.hpp"

namespace mscclpp::exec {

constexpr uint64_t kNoUnit = UINT64_MAX;

// The (dtype, op) pairs the switch reduces itself with multimem.ld_reduce.
// Other pairs go through the members' pointers.
template <class T, class Op>
struct MultimemOf {
  static constexpr bool kOk = false;
};
#define MSCCLPP_MULTIMEM(T, OP, E, O)                      \
  template <>                                              \
  struct MultimemOf<T, OP> {                               \
    static constexpr bool kOk = true;                      \
    static constexpr MultimemElem kElem = MultimemElem::E; \
    static constexpr MultimemOp kOp = MultimemOp::O;       \
  };
MSCCLPP_MULTIMEM(float, OpSum, F32, Sum)
MSCCLPP_MULTIMEM(__half, OpSum, F16, Sum)
MSCCLPP_MULTIMEM(__half, OpMin, F16, Min)
MSCCLPP_MULTIMEM(__half, OpMax, F16, Max)
MSCCLPP_MULTIMEM(__nv_bfloat16, OpSum, BF16, Sum)
MSCCLPP_MULTIMEM(__nv_bfloat16, OpMin, BF16, Min)
MSCCLPP_MULTIMEM(__nv_bfloat16, OpMax, BF16, Max)
MSCCLPP_MULTIMEM(int32_t, OpSum, S32, Sum)
MSCCLPP_MULTIMEM(int32_t, OpMin, S32, Min)
MSCCLPP_MULTIMEM(int32_t, OpMax, S32, Max)
MSCCLPP_MULTIMEM(uint32_t, OpSum, U32, Sum)
MSCCLPP_MULTIMEM(uint32_t, OpMin, U32, Min)
MSCCLPP_MULTIMEM(uint32_t, OpMax, U32, Max)
#undef MSCCLPP_MULTIMEM

template <class T, class Op>
class BlockInterpreter {
 public:
  using R = Reducer<T, Op>;

  MSCCLPP_HOST_DEVICE_INLINE BlockInterpreter(const ExecContextDevice& ctx, const ThreadblockDevice& tb,
                                              uint32_t blockIndex, uint32_t threadId, uint32_t numThreads,
                                              const LaunchArgs& args)
      : ctx_(ctx), tb_(tb), block_(blockIndex), tid_(threadId), nthreads_(numThreads) {
    deadline_ = deadlineAfter(args.timeoutNs);
    packetDeadline_ = ctx.liveWaits == nullptr ? deadline_ : minU(deadline_, clockNs() + kReportWaitAfterNs);
    resume_ = threadId;
    segments_ = args.segments;
    segmentBegin_ = args.segmentBegin;
    counts_ = args.counts;
    nRanks_ = args.nRanks;
    elementBytes_ = args.elementBytes;
    ll8_ = args.packetType == static_cast<uint32_t>(PacketType::LL8);
    // Acquire: pairs with the previous launch's last block, which released the advanced flag.
    flag_ = atomicLoad<uint32_t, scopeDevice>(&ctx.state->flag, memoryOrderAcquire);
    half_ = (ctx.doubleScratch && (flag_ & 1u) == 0) ? ctx.scratchHalfBytes : 0;
    // GPU contexts' waits poll the abort flag's device-memory copy; the host
    // raises the mapped flag, which long waits read once per round.
    recorder_ = BlockRecorder::of(ctx, blockIndex, threadId, flag_, args.call,
                                  ctx.liveWaits != nullptr ? &ctx.state->abortCopy : ctx.abortFlag);
  }

  MSCCLPP_HOST_DEVICE_INLINE void run() {
    if (segments_ != nullptr && !bindSegments()) {
      finishBlock();
      return;
    }
    // One flat loop over the ops, pipelines included: a pipeline op sets
    // the unit and jumps back to its body until its iterations are done.
    // The loop's state lives in the object, not in registers a handler call
    // would have to save, so nothing spills.
    for (pc_ = 0; pc_ < tb_.nOps;) {
      if (stopped()) {
        markStopped(pc_);
        break;
      }
      // The op each block is at, for the wait-for report (host builds only).
      publishProgress(pc_, bodyEnd_ == 0 ? UINT32_MAX : iteration_);
      const plan::Op& op = tb_.ops[pc_];
      if (op.type == plan::OpType::Pipeline) {
        startPipeline(op);
        continue;
      }
      exec(op, pc_);
      ++pc_;
      if (pc_ == bodyEnd_) nextIteration();
    }
    finishBlock();
  }

 private:
  struct Span {
    uint64_t off;
    uint64_t bytes;
  };

  // ---- variable sizes ----------------------------------------------------------------------------
  // Writes the offset and bytes of the block's segment references from the
  // count matrix, each thread some of them, then waits for the block. A
  // segment the counts push past its buffer fails the block: nothing runs.
  MSCCLPP_HOST_DEVICE_INLINE bool bindSegments() {
    ResolvedRef* refs = const_cast<ResolvedRef*>(tb_.refs);
    const uint64_t elem = elementBytes_;
    for (uint32_t i = segmentBegin_[block_] + tid_; i < segmentBegin_[block_ + 1]; i += nthreads_) {
      const DeviceSegment& s = segments_[i];
      const uint64_t count = counts_[static_cast<uint64_t>(s.sender) * nRanks_ + s.receiver];
      bool fits = count <= UINT64_MAX / 4 / elem;
      const uint64_t bytes = fits ? count * elem : UINT64_MAX;
      uint64_t offset = s.fixedOffset;
      for (uint32_t k = 0; fits && s.placed && k < s.prefix; ++k) {
        const uint64_t c = s.alongRow ? counts_[static_cast<uint64_t>(s.line) * nRanks_ + k]
                                      : counts_[static_cast<uint64_t>(k) * nRanks_ + s.line];
        fits = c <= UINT64_MAX / 4 / elem && offset <= UINT64_MAX / 4 - c * elem;
        if (fits) offset += c * elem;
      }
      fits = fits && offset <= UINT64_MAX / 4 - bytes;
      fits = fits && (s.slotBytes == 0 || bytes <= s.slotBytes) && (offset + bytes) * s.factor <= s.limit;
      if (!fits) {
        opIndex_ = s.op;
        fail(SpinStatus::Invalid, tb_.ops[s.op], WaitKind::Segment, s.sender, s.slotBytes > 0 ? s.slotBytes : s.limit,
             bytes == UINT64_MAX ? UINT64_MAX : (s.slotBytes > 0 ? bytes : (offset + bytes) * s.factor), s.receiver);
        continue;
      }
      refs[s.ref].offset = offset;
      refs[s.ref].bytes = bytes;
    }
    syncBlockThreads();
    const uint32_t state = atomicLoad<uint32_t, scopeDevice>(&ctx_.blockRecords[block_].state, memoryOrderAcquire);
    return state != kBlockInvalid && state != kBlockWriting;
  }

  // ---- references ------------------------------------------------------------------------------
  MSCCLPP_HOST_DEVICE_INLINE const ResolvedRef& src(const plan::Op& op, uint32_t k) const {
    return tb_.refs[op.srcBegin + k];
  }
  MSCCLPP_HOST_DEVICE_INLINE const ResolvedRef& dst(const plan::Op& op, uint32_t k) const {
    return tb_.refs[op.dstBegin + k];
  }
  MSCCLPP_HOST_DEVICE_INLINE uint32_t id(const plan::Op& op, uint32_t k) const {
    return tb_.ids[op.idsBegin + (k < op.nIds ? k : op.nIds - 1)];
  }
  // The part of a reference this pipeline iteration covers.
  // Outside pipelines: the whole slice.
  MSCCLPP_HOST_DEVICE_INLINE Span span(const ResolvedRef& r) const {
    if (unit_ == kNoUnit) return Span{r.offset, r.bytes};
    if (pipeOff_ >= r.bytes) return Span{r.offset, 0};
    uint64_t b = r.bytes - pipeOff_ < unit_ ? r.bytes - pipeOff_ : unit_;
    uint64_t p = (r.scratch && ctx_.wrapScratch) ? scratchPipeOff_ : pipeOff_;
    return Span{r.offset + p, b};
  }
  // Byte offset inside the target buffer, scratch half included.
  // Packets lie at twice the data offset.
  MSCCLPP_HOST_DEVICE_INLINE uint64_t bufferOffset(const ResolvedRef& r, uint64_t dataOff, bool packet) const {
    return (r.scratch ? half_ : 0) + (packet ? 2 * dataOff : dataOff);
  }
  MSCCLPP_HOST_DEVICE_INLINE char* addr(const ResolvedRef& r, uint64_t dataOff, bool packet) const {
    return r.base + bufferOffset(r, dataOff, packet);
  }
  MSCCLPP_HOST_DEVICE_INLINE static uint64_t minU(uint64_t a, uint64_t b) { return a < b ? a : b; }

  // ---- control -----------------------------------------------------------------------------------
  // The CPU backend stops a block once the context is aborted: one thread
  // per block keeps no barrier to match. GPU threads keep walking the ops,
  // and their waits return at once.
  MSCCLPP_HOST_DEVICE_INLINE bool stopped() const {
#if defined(MSCCLPP_DEVICE_COMPILE)
    return false;
#else
    return failed_ || atomicLoad<uint32_t>(ctx_.abortFlag, memoryOrderRelaxed) != 0;
#endif
  }

  // CPU backend: the op a block is at, readable while it runs, so that
  // describeLiveBlocks can describe a long wait before it ends. Relaxed: a
  // diagnostic publishes no data. The GPU's records are device memory read
  // after the launch; its long waits publish themselves (reportedWait).
  MSCCLPP_HOST_DEVICE_INLINE void publishProgress(uint32_t index, uint32_t iteration) {
#if !defined(MSCCLPP_DEVICE_COMPILE)
    BlockRecord* r = &ctx_.blockRecords[block_];
    atomicStore<uint32_t, scopeDevice>(&r->opIndex, index, memoryOrderRelaxed);
    atomicStore<uint32_t, scopeDevice>(&r->pipelineIteration, iteration, memoryOrderRelaxed);
#else
    (void)index;
    (void)iteration;
#endif
  }

  // GPU contexts have a live-wait slot per block; CPU contexts have none:
  // the host reads their counters live (BlockRecorder::reportedWait).
  template <class Spin>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus reportedWait(WaitKind kind, uint32_t what, uint64_t expected,
                                                     const uint64_t* observed, Spin&& spin, uint64_t detail = 0) {
    return recorder_.reportedWait(site(), kind, what, expected, observed, deadline_, spin, detail);
  }
  MSCCLPP_HOST_DEVICE_INLINE WaitSite site() const { return {opIndex_, unit_ == kNoUnit ? UINT32_MAX : iteration_}; }

  // Records that the block stopped before op `index` because the context was aborted.
  MSCCLPP_HOST_DEVICE_INLINE void markStopped(uint32_t index) {
    if (failed_) return;
    opIndex_ = index;
    fail(SpinStatus::Aborted, tb_.ops[index], WaitKind::None, 0, 0, 0, 0);
  }

  MSCCLPP_HOST_DEVICE_INLINE void fail(SpinStatus st, const plan::Op& op, WaitKind kind, uint32_t what,
                                       uint64_t expected, uint64_t observed, uint64_t detail) {
    if (failed_) return;
    failed_ = true;
    // An invalid launch (counts its buffers cannot hold) never waits long,
    // so no slot would show it: it is published, for the call monitor to
    // tell the peers at once, which otherwise wait for this rank until their deadline.
    recorder_.recordStop(st, site(), static_cast<uint32_t>(op.type), kind, what, expected, observed, detail,
                         /*publishInvalid=*/true);
  }

  MSCCLPP_HOST_DEVICE_INLINE void finishBlock() {
    syncBlockThreads();
    if (tid_ == 0) recorder_.finish(ctx_.nBlocks);
  }

  // A pipeline op: its body, the next bodyCount ops, runs once per unit.
  MSCCLPP_HOST_DEVICE_NOINLINE void startPipeline(const plan::Op& op) {
    const uint64_t total = static_cast<uint64_t>(op.numChunks) * ctx_.chunkBytes;
    // A zero unit is refused when the context was built; an empty body does nothing.
    iterations_ = op.unitSize == 0 || op.bodyCount == 0 ? 0 : (total + op.unitSize - 1) / op.unitSize;
    if (iterations_ == 0) {
      pc_ += 1 + op.bodyCount;
      return;
    }
    iterationIndex_ = 0;
    unit_ = op.unitSize;
    pipeOff_ = 0;
    scratchPipeOff_ = 0;
    iteration_ = 0;
    bodyBegin_ = pc_ + 1;
    bodyEnd_ = pc_ + 1 + op.bodyCount;
    pc_ = bodyBegin_;
  }

  // After the last op of a pipeline body: the next unit, or past the
  // pipeline. Outside a pipeline bodyEnd_ is 0, and pc_ can be 0 again after
  // settlePending stepped back from op 0: nothing to do.
  MSCCLPP_HOST_DEVICE_NOINLINE void nextIteration() {
    if (bodyEnd_ == 0) return;
    if (++iterationIndex_ < iterations_) {
      pipeOff_ = iterationIndex_ * unit_;
      // Wrapped once per unit here, not per access in the handlers' loops.
      scratchPipeOff_ = ctx_.wrapScratch ? pipeOff_ % ctx_.scratchChunkBytes : pipeOff_;
      iteration_ = static_cast<uint32_t>(iterationIndex_);
      pc_ = bodyBegin_;
    } else {
      pipeOff_ = 0;
      unit_ = kNoUnit;
      bodyEnd_ = 0;
    }
  }

  // The dispatch. Every handler is out of line on the GPU, so each gets
  // the kernel's 64 registers per thread to itself and none spills.
  MSCCLPP_HOST_DEVICE_INLINE void exec(const plan::Op& op, uint32_t index) {
    opIndex_ = index;
    using plan::OpType;
    switch (op.type) {
      case OpType::Nop:
        syncBlockThreads();
        break;
      case OpType::Barrier:
        barrier(op);
        break;
      case OpType::Signal:
        signal(op, false);
        break;
      case OpType::RelaxedSignal:
        signal(op, true);
        break;
      case OpType::Wait:
        wait(op, false);
        break;
      case OpType::RelaxedWait:
        wait(op, true);
        break;
      case OpType::Flush:
        flush(op);
        break;
      case OpType::Put:
      case OpType::PutWithSignal:
      case OpType::PutWithSignalAndFlush:
        put(op);
        break;
      case OpType::Get:
        get(op);
        break;
      case OpType::Copy:
        copyOp(op);
        break;
      case OpType::Reduce:
      case OpType::ReduceSend:
      case OpType::ReadReduce:
      case OpType::ReadReduceSend:
        reduce(op);
        break;
      case OpType::PutPackets:
      case OpType::ReadPutPackets:
      case OpType::CopyPackets:
      case OpType::UnpackPackets:
      case OpType::ReducePackets:
      case OpType::ReduceSendPackets:
      case OpType::ReduceCopyPackets:
      case OpType::ReduceCopySendPackets:
      case OpType::GroupStorePackets:
        if (ll8_)
          packetOp<LL8Packet>(op);
        else
          packetOp<LL16Packet>(op);
        break;
      case OpType::GroupLoadReduce:
      case OpType::GroupLoadReduceStore:
        groupReduce(op);
        break;
      case OpType::GroupStore:
        groupStore(op);
        break;
      case OpType::SemAcquire:
        semAcquire(op);
        break;
      case OpType::SemRelease:
        semRelease(op);
        break;
      case OpType::Pipeline:
        break;  // nested pipelines are refused at load time
    }
    // The op is looked up again, not kept: a reference live across the call
    // is a register the call must preserve, and ptxas spills it.
    if (pending_.set) settlePending();
  }

  // A handler deferred a failure for op opIndex_. A packet op's early leave
  // is waited out here; then pc_ steps back and run() dispatches the op
  // again from the thread's loop index. Any other failure fills the block's
  // record. The op is not called from here: a second caller of the
  // handlers, or any loop in the dispatch, makes ptxas spill.
  MSCCLPP_HOST_DEVICE_NOINLINE void settlePending() {
    if (awaitLatePacket()) {
      --pc_;  // run() steps it forward again; unsigned, 0 - 1 + 1 is 0
      return;
    }
    pending_.set = false;
    fail(pending_.status, tb_.ops[opIndex_], pending_.kind, pending_.what, pending_.expected, pending_.observed,
         pending_.detail);
  }

  // A wait that fails in a packet loop only notes what it waited for and
  // leaves the loop; the dispatch fills the record after the handler.
  // The loops then keep no registers for a cold path of their own.
  MSCCLPP_HOST_DEVICE_INLINE void deferFail(SpinStatus st, WaitKind kind, uint32_t what, uint64_t expected,
                                            uint64_t observed, uint64_t detail, uint64_t resumeAt = 0) {
    pending_ = PendingFailure{true, st, kind, what, expected, observed, detail, resumeAt};
  }

  // ---- synchronisation ops ----------------------------------------------------------------------
  MSCCLPP_HOST_DEVICE_NOINLINE void barrier(const plan::Op& op) {
    // A long wait at a barrier is published too: it waits on this rank's
    // other blocks, which the monitor's wait-for analysis follows.
    const uint64_t none = 0;
    SpinStatus st = ctx_.barriers[op.barrierId].syncWith(op.numThreadblocks, recorder_.waitAbort, [&](auto&& spin) {
      return reportedWait(WaitKind::Barrier, op.barrierId, op.numThreadblocks, &none, spin);
    });
    if (st != SpinStatus::Ok) fail(st, op, WaitKind::Barrier, op.barrierId, op.numThreadblocks, 0, 0);
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void semRelease(const plan::Op& op) {
    for (uint32_t k = tid_; k < op.nIds; k += nthreads_) {
      // Release: what this block did before is visible to the block that acquires.
      atomicFetchAdd<uint32_t, scopeDevice>(&ctx_.semaphores[id(op, k)], 1u, memoryOrderRelease);
    }
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void signal(const plan::Op& op, bool relaxed) {
    for (uint32_t k = tid_; k < op.nIds; k += nthreads_) {
      uint32_t c = id(op, k);
      if (op.channelType == plan::ChannelType::Memory) {
        if (relaxed)
          ctx_.memoryChannels[c].relaxedSignal();
        else
          ctx_.memoryChannels[c].signal();
      } else {
        SpinStatus st = ctx_.portChannels[c].signal(deadline_, ctx_.abortFlag);
        if (st != SpinStatus::Ok) fail(st, op, WaitKind::FifoPush, c, 0, 0, 0);
      }
    }
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void wait(const plan::Op& op, bool relaxed) {
    for (uint32_t k = tid_; k < op.nIds; k += nthreads_) {
      uint32_t c = id(op, k);
      uint64_t expected = 0, observed = 0;
      SpinStatus st;
      WaitKind kind;
      if (op.channelType == plan::ChannelType::Memory) {
        kind = WaitKind::MemoryChannel;
        auto& sem = ctx_.memoryChannels[c].semaphore_;
        expected = sem.claimNextExpected();
        st = reportedWait(kind, c, expected, &observed, [&](uint64_t deadline) {
          return relaxed ? sem.relaxedWaitClaimed(expected, deadline, recorder_.waitAbort, &observed)
                         : sem.waitClaimed(expected, deadline, recorder_.waitAbort, &observed);
        });
      } else {
        kind = WaitKind::PortChannel;
        auto& sem = ctx_.portChannels[c].semaphore_;
        expected = sem.claimNextExpected();
        st = reportedWait(kind, c, expected, &observed, [&](uint64_t deadline) {
          return sem.waitClaimed(expected, deadline, recorder_.waitAbort, &observed);
        });
      }
      if (st != SpinStatus::Ok) {
        fail(st, op, kind, c, expected, observed, 0);
        return;
      }
    }
  }

  // One thread per listed port channel pushes a flush and waits for it.
  MSCCLPP_HOST_DEVICE_NOINLINE void flush(const plan::Op& op) {
    for (uint32_t k = tid_; k < op.nIds; k += nthreads_) {
      uint32_t c = id(op, k);
      uint64_t index = 0, tail = 0;
      SpinStatus st = ctx_.portChannels[c].flush(deadline_, ctx_.abortFlag, &index, &tail);
      if (st != SpinStatus::Ok) {
        fail(st, op, WaitKind::Flush, c, index + 1, tail, 0);
        return;
      }
    }
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void semAcquire(const plan::Op& op) {
    for (uint32_t k = tid_; k < op.nIds; k += nthreads_) {
      uint32_t s = id(op, k);
      uint32_t* sem = &ctx_.semaphores[s];
      uint64_t seen = 0;
      SpinStatus st = reportedWait(WaitKind::Semaphore, s, 1, &seen, [&](uint64_t deadline) {
        return spinUntil(
            [&] {
              uint32_t v = atomicLoad<uint32_t, scopeDevice>(sem, memoryOrderRelaxed);
              while (v > 0) {
                // Acquire on success: pairs with the sem_release that made the count positive.
                if (atomicCompareExchange<uint32_t, scopeDevice>(sem, &v, v - 1, memoryOrderAcquire)) return true;
              }
              seen = v;
              return false;
            },
            deadline, recorder_.waitAbort);
      });
      if (st != SpinStatus::Ok) {
        fail(st, op, WaitKind::Semaphore, s, 1, seen, 0);
        return;
      }
    }
  }

  // ---- data movement ----------------------------------------------------------------------------
  MSCCLPP_HOST_DEVICE_NOINLINE void put(const plan::Op& op) {
    if (op.channelType == plan::ChannelType::Port) {
      MSCCLPP_NO_UNROLL
      for (uint32_t i = tid_; i < op.nDst; i += nthreads_) {
        const ResolvedRef& s = src(op, op.nSrc == 1 ? 0 : i);
        const ResolvedRef& d = dst(op, i);
        Span ss = span(s), ds = span(d);
        uint64_t bytes = minU(ss.bytes, ds.bytes);
        uint32_t c = id(op, i);
        auto& pc = ctx_.portChannels[c];
        uint64_t dOff = bufferOffset(d, ds.off, false), sOff = bufferOffset(s, ss.off, false);
        SpinStatus st;
        if (op.type == plan::OpType::Put) {
          st = pc.put(d.memoryId, dOff, s.memoryId, sOff, bytes, deadline_, ctx_.abortFlag);
        } else if (op.type == plan::OpType::PutWithSignal) {
          st = pc.putWithSignal(d.memoryId, dOff, s.memoryId, sOff, bytes, deadline_, ctx_.abortFlag);
        } else {
          st = pc.putWithSignalAndFlush(d.memoryId, dOff, s.memoryId, sOff, bytes, deadline_, ctx_.abortFlag);
        }
        if (st != SpinStatus::Ok) {
          fail(st, op, st == SpinStatus::Invalid ? WaitKind::Request : WaitKind::FifoPush, c, 0, 0, bytes);
          return;
        }
      }
      return;
    }
    for (uint32_t i = 0; i < op.nDst; ++i) {
      const ResolvedRef& s = src(op, op.nSrc == 1 ? 0 : i);
      const ResolvedRef& d = dst(op, i);
      Span ss = span(s), ds = span(d);
      copyGlobal(addr(d, ds.off, false), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_, nthreads_);
    }
    if (op.type != plan::OpType::Put) {
      // pws/pwsf over memory channels: the whole block's copy lands before the signal releases it.
      syncBlockThreads();
      for (uint32_t k = tid_; k < op.nIds; k += nthreads_) ctx_.memoryChannels[id(op, k)].signal();
    }
  }

  // The remote source uses its own offset, the local destination its own.
  MSCCLPP_HOST_DEVICE_NOINLINE void get(const plan::Op& op) {
    for (uint32_t i = 0; i < op.nDst; ++i) {
      const ResolvedRef& s = src(op, op.nSrc == 1 ? 0 : i);
      const ResolvedRef& d = dst(op, i);
      Span ss = span(s), ds = span(d);
      copyGlobal(addr(d, ds.off, false), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_, nthreads_);
    }
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void copyOp(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    copyGlobal(addr(d, ds.off, false), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_, nthreads_);
  }

  // re, res, rre, rres: dst = src[0] + src[1] + ... with the op.
  // res and rres also store to the remote dst[1..]. Each thread reads all
  // sources of a tile before writing, so a destination may alias a source.
  MSCCLPP_HOST_DEVICE_NOINLINE void reduce(const plan::Op& op) {
    uint64_t count = span(src(op, 0)).bytes / sizeof(T);
    uint32_t nDst = (op.type == plan::OpType::Reduce || op.type == plan::OpType::ReadReduce) ? 1 : op.nDst;
    uint64_t done = 0;  // elements reduced by the vector path
#if defined(MSCCLPP_DEVICE_COMPILE)
    constexpr bool kFp8 = sizeof(T) == 1 && !std::is_integral<T>::value;
    // 16-byte vectors when every source and destination is 16-aligned,
    // with packed half and bfloat16 math. Sources are read before writing.
    uintptr_t phase = 0;
    for (uint32_t k = 0; k < op.nSrc; ++k)
      phase |= reinterpret_cast<uintptr_t>(addr(src(op, k), span(src(op, k)).off, false));
    for (uint32_t d = 0; d < nDst; ++d)
      phase |= reinterpret_cast<uintptr_t>(addr(dst(op, d), span(dst(op, d)).off, false));
    if ((phase & 15) == 0 && sizeof(T) <= 16) {
      const uint64_t nVec = count * sizeof(T) / 16;
      const uint64_t stride = nthreads_;
      const uint64_t step = 16 * stride;  // bytes between a thread's four vectors
      uint64_t v = tid_;
      // fp8: two vectors per thread and step. Its lanes' math is emulated,
      // and with four vectors ptxas spills it (min and max, e5m2 sum).
      if constexpr (kFp8) {
        for (; v + stride < nVec; v += 2 * stride) {
          const char* p = addr(src(op, 0), span(src(op, 0)).off, false) + v * 16;
          Vec16 a0 = loadVec16(p), a1 = loadVec16(p + step);
          for (uint32_t k = 1; k < op.nSrc; ++k) {
            const char* q = addr(src(op, k), span(src(op, k)).off, false) + v * 16;
            const Vec16 b0 = loadVec16(q), b1 = loadVec16(q + step);
            a0 = reduceWord<T, Op>(a0, b0);
            a1 = reduceWord<T, Op>(a1, b1);
          }
          for (uint32_t d = 0; d < nDst; ++d) {
            char* o = addr(dst(op, d), span(dst(op, d)).off, false) + v * 16;
            storeVec16(o, a0);
            storeVec16(o + step, a1);
          }
        }
      }
      // Four vectors per thread and step: each source's four loads are in
      // flight together, and every load of a step comes before its stores.
      for (; !kFp8 && v + 3 * stride < nVec; v += 4 * stride) {
        // Each next vector one step further: no multiple of step stays live.
        const char* p = addr(src(op, 0), span(src(op, 0)).off, false) + v * 16;
        Vec16 a0 = loadVec16(p), a1 = loadVec16(p += step), a2 = loadVec16(p += step), a3 = loadVec16(p += step);
        for (uint32_t k = 1; k < op.nSrc; ++k) {
          const char* q = addr(src(op, k), span(src(op, k)).off, false) + v * 16;
          const Vec16 b0 = loadVec16(q), b1 = loadVec16(q += step), b2 = loadVec16(q += step),
                      b3 = loadVec16(q += step);
          a0 = reduceWord<T, Op>(a0, b0);
          a1 = reduceWord<T, Op>(a1, b1);
          a2 = reduceWord<T, Op>(a2, b2);
          a3 = reduceWord<T, Op>(a3, b3);
        }
        for (uint32_t d = 0; d < nDst; ++d) {
          char* o = addr(dst(op, d), span(dst(op, d)).off, false) + v * 16;
          storeVec16(o, a0);
          storeVec16(o += step, a1);
          storeVec16(o += step, a2);
          storeVec16(o += step, a3);
        }
      }
      for (; v < nVec; v += stride) {
        Vec16 acc = loadVec16(addr(src(op, 0), span(src(op, 0)).off, false) + v * 16);
        for (uint32_t k = 1; k < op.nSrc; ++k)
          acc = reduceWord<T, Op>(acc, loadVec16(addr(src(op, k), span(src(op, k)).off, false) + v * 16));
        for (uint32_t d = 0; d < nDst; ++d) storeVec16(addr(dst(op, d), span(dst(op, d)).off, false) + v * 16, acc);
      }
      done = nVec * 16 / sizeof(T);
    }
#endif
    if (done < count) reduceElements(op, nDst, done, count);
  }

  // The elements of a reduce from `done` on, kTile per thread and step: all
  // of them when the buffers do not share a 16-byte phase, else the vector
  // loop's remainder. Out of line: the vector loop keeps its registers.
  MSCCLPP_HOST_DEVICE_NOINLINE void reduceElements(const plan::Op& op, uint32_t nDst, uint64_t done, uint64_t count) {
#if defined(MSCCLPP_DEVICE_COMPILE)
    constexpr uint64_t kTile = 1;
#else
    constexpr uint64_t kTile = 4096 / sizeof(T);
#endif
    const uint64_t rest = count - done;
    const uint64_t nTiles = (rest + kTile - 1) / kTile;
    for (uint64_t t = tid_; t < nTiles; t += nthreads_) {
      const uint64_t e0 = done + t * kTile;
      const uint64_t m = minU(kTile, count - e0);
      T acc[kTile];
      {
        const ResolvedRef& s0 = src(op, 0);
        const T* p = reinterpret_cast<const T*>(addr(s0, span(s0).off, false)) + e0;
        for (uint64_t j = 0; j < m; ++j) acc[j] = p[j];
      }
      for (uint32_t k = 1; k < op.nSrc; ++k) {
        const ResolvedRef& sk = src(op, k);
        const T* p = reinterpret_cast<const T*>(addr(sk, span(sk).off, false)) + e0;
        for (uint64_t j = 0; j < m; ++j) acc[j] = R::apply(acc[j], p[j]);
      }
      for (uint32_t d = 0; d < nDst; ++d) {
        const ResolvedRef& dd = dst(op, d);
        T* p = reinterpret_cast<T*>(addr(dd, span(dd).off, false)) + e0;
        for (uint64_t j = 0; j < m; ++j) p[j] = acc[j];
      }
    }
  }

  // ---- packets ------------------------------------------------------------------------------------
  // One packet of source refPos, at packetByteOff, for loop index resumeAt.
  template <class Pkt>
  MSCCLPP_HOST_DEVICE_INLINE bool readPkt(const Pkt* p, uint32_t refPos, uint64_t packetByteOff, uint64_t resumeAt,
                                          typename Pkt::Payload* v) {
    uint32_t observed = 0;
    SpinStatus st = readPacket(p, flag_, v, packetDeadline_, recorder_.waitAbort, &observed);
    if (st == SpinStatus::Ok) return true;
    deferFail(st, WaitKind::Packet, refPos, flag_, observed, packetByteOff, resumeAt);
    return false;
  }

  // GPU packet waits spin until packetDeadline_, not deadline_. A packet
  // late by then makes the thread leave the op's loop, noting its index.
  // This waits for that packet, published as a long wait, and the op runs
  // again from that index (docs/cuda-backend.md, "Deadlocks with every rank
  // alive", says why redoing an index is harmless). Returns true when the
  // packet came; false when the deferred failure stands, updated if this
  // wait failed too.
  MSCCLPP_HOST_DEVICE_NOINLINE bool awaitLatePacket() {
    if (ctx_.liveWaits == nullptr || pending_.kind != WaitKind::Packet || pending_.status != SpinStatus::Timeout ||
        clockNs() >= deadline_)
      return false;
    const char* at = src(tb_.ops[opIndex_], pending_.what).base + pending_.detail;
    uint64_t observed = pending_.observed;
    const SpinStatus st = reportedWait(
        WaitKind::Packet, pending_.what, flag_, &observed,
        [&](uint64_t deadline) {
          uint32_t seen = 0;
          const SpinStatus s =
              ll8_ ? awaitPacket<LL8Packet>(at, deadline, &seen) : awaitPacket<LL16Packet>(at, deadline, &seen);
          observed = seen;
          return s;
        },
        pending_.detail);
    if (st != SpinStatus::Ok) {
      pending_.status = st;
      pending_.observed = observed;
      return false;
    }
    pending_.set = false;
    resume_ = pending_.resumeAt;
    packetDeadline_ = minU(deadline_, clockNs() + kReportWaitAfterNs);
    return true;
  }

  // This thread's first loop index in a packet op: its thread index, or
  // once, the index settlePending resumes it at.
  MSCCLPP_HOST_DEVICE_INLINE uint64_t firstIndex() {
    const uint64_t first = resume_;
    resume_ = tid_;
    return first;
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus awaitPacket(const char* at, uint64_t deadline, uint32_t* seen) {
    typename Pkt::Payload v;
    return readPacket(reinterpret_cast<const Pkt*>(at), flag_, &v, deadline, recorder_.waitAbort, seen);
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_INLINE void packetOp(const plan::Op& op) {
    using plan::OpType;
    switch (op.type) {
      case OpType::CopyPackets:
        copyPackets<Pkt>(op);
        return;
      case OpType::UnpackPackets:
        unpackPackets<Pkt>(op);
        return;
      case OpType::PutPackets:
        putPacketsOp<Pkt>(op);
        return;
      case OpType::ReadPutPackets:
        readPutPackets<Pkt>(op);
        return;
      case OpType::GroupStorePackets:
        groupStorePackets<Pkt>(op);
        return;
      default:
        reducePackets<Pkt>(op);
        return;
    }
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void copyPackets(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    putPackets<Pkt>(addr(d, ds.off, true), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_, nthreads_, flag_);
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void unpackPackets(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    PacketWaitInfo info;
    SpinStatus st = getPackets<Pkt>(addr(d, ds.off, false), addr(s, ss.off, true), minU(ss.bytes, ds.bytes),
                                    firstIndex(), nthreads_, flag_, packetDeadline_, recorder_.waitAbort, &info);
    if (st != SpinStatus::Ok)
      deferFail(st, WaitKind::Packet, 0, flag_, info.observedFlag,
                bufferOffset(s, ss.off, true) + info.packetIndex * sizeof(Pkt), info.packetIndex);
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void putPacketsOp(const plan::Op& op) {
    if (op.channelType == plan::ChannelType::Port) {
      // The source is already in packet form, as in MSCCL++: forward it.
      MSCCLPP_NO_UNROLL
      for (uint32_t i = tid_; i < op.nDst; i += nthreads_) {
        const ResolvedRef& s = src(op, op.nSrc == 1 ? 0 : i);
        const ResolvedRef& d = dst(op, i);
        Span ss = span(s), ds = span(d);
        uint32_t c = id(op, i);
        uint64_t pktBytes = 2 * minU(ss.bytes, ds.bytes);
        SpinStatus st = ctx_.portChannels[c].put(d.memoryId, bufferOffset(d, ds.off, true), s.memoryId,
                                                 bufferOffset(s, ss.off, true), pktBytes, deadline_, ctx_.abortFlag);
        if (st != SpinStatus::Ok) {
          deferFail(st, st == SpinStatus::Invalid ? WaitKind::Request : WaitKind::FifoPush, c, 0, 0, pktBytes);
          return;
        }
      }
      return;
    }
    for (uint32_t i = 0; i < op.nDst; ++i) {
      const ResolvedRef& s = src(op, op.nSrc == 1 ? 0 : i);
      const ResolvedRef& d = dst(op, i);
      Span ss = span(s), ds = span(d);
      putPackets<Pkt>(addr(d, ds.off, true), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_, nthreads_, flag_);
    }
  }

  // rppkt: local packets, once their flags match, re-sent to remote packet
  // buffers with the same flag.
  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void readPutPackets(const plan::Op& op) {
    if (op.channelType == plan::ChannelType::Port) {
      MSCCLPP_NO_UNROLL
      for (uint32_t i = static_cast<uint32_t>(firstIndex()); i < op.nDst; i += nthreads_) {
        const ResolvedRef& s = src(op, op.nSrc == 1 ? 0 : i);
        const ResolvedRef& d = dst(op, i);
        Span ss = span(s), ds = span(d);
        uint64_t bytes = minU(ss.bytes, ds.bytes);
        const Pkt* in = reinterpret_cast<const Pkt*>(addr(s, ss.off, true));
        MSCCLPP_NO_UNROLL
        for (uint64_t q = 0; q < packetCount<Pkt>(bytes); ++q) {
          typename Pkt::Payload v;
          if (!readPkt(&in[q], op.nSrc == 1 ? 0 : i, bufferOffset(s, ss.off, true) + q * sizeof(Pkt), i, &v)) return;
        }
        uint32_t c = id(op, i);
        SpinStatus st = ctx_.portChannels[c].put(d.memoryId, bufferOffset(d, ds.off, true), s.memoryId,
                                                 bufferOffset(s, ss.off, true), 2 * bytes, deadline_, ctx_.abortFlag);
        if (st != SpinStatus::Ok) {
          deferFail(st, st == SpinStatus::Invalid ? WaitKind::Request : WaitKind::FifoPush, c, 0, 0, 2 * bytes);
          return;
        }
      }
      return;
    }
    uint64_t bytes = span(src(op, 0)).bytes;
    for (uint32_t i = 0; i < op.nDst; ++i) bytes = minU(bytes, span(dst(op, i)).bytes);
    uint64_t n = packetCount<Pkt>(bytes);
    MSCCLPP_NO_UNROLL
    for (uint64_t q = firstIndex(); q < n; q += nthreads_) {
      for (uint32_t i = 0; i < op.nDst; ++i) {
        uint32_t sp = op.nSrc == 1 ? 0 : i;
        const ResolvedRef& s = src(op, sp);
        const ResolvedRef& d = dst(op, i);
        Span ss = span(s);
        typename Pkt::Payload v;
        const Pkt* in = reinterpret_cast<const Pkt*>(addr(s, ss.off, true)) + q;
        if (!readPkt(in, sp, bufferOffset(s, ss.off, true) + q * sizeof(Pkt), q, &v)) return;
        reinterpret_cast<Pkt*>(addr(d, span(d).off, true))[q].write(v, flag_);
      }
    }
  }

  // repkt, respkt, recpkt, recspkt: dst[0] = src[0] + the packets of
  // src[1..]; every later dst gets the result as packets. A group of packets
  // covers whole elements, so any dtype works with either packet format.
  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void reducePackets(const plan::Op& op) {
    using P = typename Pkt::Payload;
    constexpr uint64_t kP = Pkt::kPayloadBytes;
    constexpr uint64_t kG = sizeof(T) > kP ? sizeof(T) : kP;  // bytes per group (<= 8)
    constexpr uint64_t kPerGroup = kG / kP;
    const ResolvedRef& s0 = src(op, 0);
    Span s0s = span(s0);
    uint64_t bytes = s0s.bytes;
    uint64_t nGroups = (bytes + kG - 1) / kG;
    // Whole aligned groups are reduced as words: no byte loops and nothing
    // in local memory. Partial or unaligned groups go byte by byte.
    const bool aligned = ((reinterpret_cast<uintptr_t>(addr(s0, s0s.off, false)) |
                           reinterpret_cast<uintptr_t>(addr(dst(op, 0), span(dst(op, 0)).off, false))) %
                          kP) == 0;
    MSCCLPP_NO_UNROLL
    for (uint64_t g = firstIndex(); g < nGroups; g += nthreads_) {
      uint64_t gOff = g * kG;
      uint64_t gBytes = minU(kG, bytes - gOff);
      if (aligned && gBytes == kG && kPerGroup == 1 && sizeof(T) <= kP) {
        P acc = *reinterpret_cast<const P*>(addr(s0, s0s.off, false) + gOff);
        for (uint32_t k = 1; k < op.nSrc; ++k) {
          const ResolvedRef& sk = src(op, k);
          Span sks = span(sk);
          P v;
          if (!readPkt(reinterpret_cast<const Pkt*>(addr(sk, sks.off, true)) + g, k,
                       bufferOffset(sk, sks.off, true) + g * sizeof(Pkt), g, &v))
            return;
          acc = reduceWord<T, Op>(acc, v);
        }
        *reinterpret_cast<P*>(addr(dst(op, 0), span(dst(op, 0)).off, false) + gOff) = acc;
        for (uint32_t d = 1; d < op.nDst; ++d)
          (reinterpret_cast<Pkt*>(addr(dst(op, d), span(dst(op, d)).off, true)) + g)->write(acc, flag_);
        continue;
      }
      // A partial or unaligned group, gBytes <= kG <= 8: its bytes are kept
      // in one 64-bit word, little-endian as in memory, and every loop has a
      // constant bound, so nothing is indexed at run time and nothing spills.
      const uint64_t nPk = (gBytes + kP - 1) / kP;
      const char* p0 = addr(s0, s0s.off, false) + gOff;
      uint64_t accW = 0;
#if defined(MSCCLPP_DEVICE_COMPILE)
#pragma unroll
#endif
      for (uint64_t b = 0; b < kG; ++b)
        if (b < gBytes) accW |= uint64_t{static_cast<unsigned char>(p0[b])} << (8 * b);
      for (uint32_t k = 1; k < op.nSrc; ++k) {
        const ResolvedRef& sk = src(op, k);
        Span sks = span(sk);
        const Pkt* pk = reinterpret_cast<const Pkt*>(addr(sk, sks.off, true)) + g * kPerGroup;
        uint64_t inW = 0;
#if defined(MSCCLPP_DEVICE_COMPILE)
#pragma unroll
#endif
        for (uint64_t q = 0; q < kPerGroup; ++q) {
          if (q >= nPk) break;
          P v;
          if (!readPkt(&pk[q], k, bufferOffset(sk, sks.off, true) + (g * kPerGroup + q) * sizeof(Pkt), g, &v)) return;
          inW |= lowBytes(static_cast<uint64_t>(v), minU(kP, gBytes - q * kP)) << (8 * q * kP);
        }
#if defined(MSCCLPP_DEVICE_COMPILE)
#pragma unroll
#endif
        for (uint64_t e = 0; e < kG / sizeof(T); ++e) {
          if ((e + 1) * sizeof(T) > gBytes) break;
          T x, y;
          const uint64_t xb = accW >> (8 * e * sizeof(T)), yb = inW >> (8 * e * sizeof(T));
          std::memcpy(static_cast<void*>(&x), &xb, sizeof(T));
          std::memcpy(static_cast<void*>(&y), &yb, sizeof(T));
          x = R::apply(x, y);
          uint64_t rb = 0;
          std::memcpy(&rb, &x, sizeof(T));
          const uint64_t mask = lowBytes(~uint64_t{0}, sizeof(T)) << (8 * e * sizeof(T));
          accW = (accW & ~mask) | ((rb << (8 * e * sizeof(T))) & mask);
        }
      }
      const ResolvedRef& d0 = dst(op, 0);
      char* out = addr(d0, span(d0).off, false) + gOff;
#if defined(MSCCLPP_DEVICE_COMPILE)
#pragma unroll
#endif
      for (uint64_t b = 0; b < kG; ++b)
        if (b < gBytes) out[b] = static_cast<char>((accW >> (8 * b)) & 0xff);
      for (uint32_t d = 1; d < op.nDst; ++d) {
        const ResolvedRef& dd = dst(op, d);
        Pkt* pk = reinterpret_cast<Pkt*>(addr(dd, span(dd).off, true)) + g * kPerGroup;
        for (uint64_t q = 0; q < nPk; ++q)
          pk[q].write(static_cast<P>(lowBytes(accW >> (8 * q * kP), minU(kP, gBytes - q * kP))), flag_);
      }
    }
  }

  // The low n bytes of w (n <= 8), the rest zero.
  MSCCLPP_HOST_DEVICE_INLINE static uint64_t lowBytes(uint64_t w, uint64_t n) {
    return n >= 8 ? w : w & ((uint64_t{1} << (8 * n)) - 1);
  }

  // ---- switch (NVLS) ops --------------------------------------------------------------------------
  MSCCLPP_HOST_DEVICE_INLINE const SwitchChannelDeviceHandle& switchOf(const ResolvedRef& r) const {
    return ctx_.switchChannels[r.id];
  }

  // glre: the local dst[0] = the group's reduction of src[0].
  // glres: the result is stored to the group through the multicast dst[0].
  MSCCLPP_HOST_DEVICE_NOINLINE void groupReduce(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    const SwitchChannelDeviceHandle& in = switchOf(s);
    uint64_t sOff = bufferOffset(s, ss.off, false);
    uint64_t count = minU(ss.bytes, ds.bytes) / sizeof(T);
    bool toGroup = d.kind == static_cast<uint8_t>(plan::RefKind::Multicast);
    uint64_t dOff = bufferOffset(d, ds.off, false);
    T* local = toGroup ? nullptr : reinterpret_cast<T*>(addr(d, ds.off, false));
#if defined(MSCCLPP_DEVICE_COMPILE) && __CUDA_ARCH__ >= 900
    if constexpr (MultimemOf<T, Op>::kOk) {
      // The switch reduces 16 bytes per access when all is aligned.
      char* outMc = toGroup ? static_cast<char*>(switchOf(d).mcPtr) : nullptr;
      const uint64_t bytes = count * sizeof(T);
      if (in.mcPtr != nullptr && (!toGroup || outMc != nullptr) &&
          ((sOff | dOff | bytes | reinterpret_cast<uintptr_t>(local)) & 15) == 0) {
        const char* inMc = static_cast<const char*>(in.mcPtr) + sOff;
        for (uint64_t i = tid_; i < bytes / 16; i += nthreads_) {
          Vec16 v = SwitchChannelDeviceHandle::multimemLoadReduce16<MultimemOf<T, Op>::kElem, MultimemOf<T, Op>::kOp>(
              inMc + i * 16);
          if (toGroup)
            SwitchChannelDeviceHandle::multimemStore16(outMc + dOff + i * 16, v);
          else
            reinterpret_cast<Vec16*>(local)[i] = v;
        }
        return;
      }
    }
#endif
    // Element by element through the members' pointers. The member loops
    // are not unrolled: unrolled, ptxas spills the 8-bit max and min at sm_90.
    for (uint64_t e = tid_; e < count; e += nthreads_) {
      const uint64_t at = sOff + e * sizeof(T);
      T v = *reinterpret_cast<const T*>(static_cast<const char*>(in.memberPtrs[0]) + at);
      MSCCLPP_NO_UNROLL
      for (uint32_t m = 1; m < in.nMembers; ++m)
        v = R::apply(v, *reinterpret_cast<const T*>(static_cast<const char*>(in.memberPtrs[m]) + at));
      if (!toGroup) {
        local[e] = v;
        continue;
      }
      const SwitchChannelDeviceHandle& out = switchOf(d);
      MSCCLPP_NO_UNROLL
      for (uint32_t m = 0; m < out.nMembers; ++m)
        *reinterpret_cast<T*>(static_cast<char*>(out.memberPtrs[m]) + dOff + e * sizeof(T)) = v;
    }
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void groupStore(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    switchOf(d).broadcastBytes(bufferOffset(d, ds.off, false), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_,
                               nthreads_);
  }

  // gstorepkt: local packets, once their flags match, stored to every
  // member's packet buffer.
  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void groupStorePackets(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    const SwitchChannelDeviceHandle& sw = switchOf(d);
    const Pkt* in = reinterpret_cast<const Pkt*>(addr(s, ss.off, true));
    uint64_t dOff = bufferOffset(d, ds.off, true);
    uint64_t n = packetCount<Pkt>(minU(ss.bytes, ds.bytes));
    MSCCLPP_NO_UNROLL
    for (uint64_t q = firstIndex(); q < n; q += nthreads_) {
      typename Pkt::Payload v;
      if (!readPkt(&in[q], 0, bufferOffset(s, ss.off, true) + q * sizeof(Pkt), q, &v)) return;
      for (uint32_t m = 0; m < sw.nMembers; ++m)
        reinterpret_cast<Pkt*>(static_cast<char*>(sw.memberPtrs[m]) + dOff)[q].write(v, flag_);
    }
  }

  // ---- state -----------------------------------------------------------------------------------
  const ExecContextDevice& ctx_;
  const ThreadblockDevice& tb_;
  uint32_t block_;
  uint32_t tid_;
  uint32_t nthreads_;
  // Waits, stops and the block's end in the launch records. Its waitAbort is
  // the flag the spins poll; FIFO waits, which wait for the host's proxy
  // anyway, read the host's flag itself.
  BlockRecorder recorder_{};
  uint64_t deadline_ = 0;
  // Per thread: packet waits spin until packetDeadline_, then leave their
  // op, which runs again from resume_.
  uint64_t packetDeadline_ = 0;
  uint64_t resume_ = 0;
  uint32_t flag_ = 0;
  uint64_t half_ = 0;
  bool ll8_ = false;
  bool failed_ = false;
  uint32_t opIndex_ = 0;
  // Variable-size plans on the GPU (LaunchArgs): the segments to bind first.
  const DeviceSegment* segments_ = nullptr;
  const uint32_t* segmentBegin_ = nullptr;
  const uint64_t* counts_ = nullptr;
  uint32_t nRanks_ = 0, elementBytes_ = 0;
  uint32_t iteration_ = 0;
  uint64_t pipeOff_ = 0;
  uint64_t scratchPipeOff_ = 0;  // pipeOff_ within a scratch chunk, when the context wraps scratch
  uint64_t unit_ = kNoUnit;
  struct PendingFailure {
    bool set;
    SpinStatus status;
    WaitKind kind;
    uint32_t what;
    uint64_t expected, observed, detail;
    uint64_t resumeAt;  // LL packet waits: this thread's loop index at the packet
  };
  PendingFailure pending_{false, SpinStatus::Ok, WaitKind::None, 0, 0, 0, 0, 0};
  // The op loop: the op to run, and the running pipeline (none: bodyEnd_ 0).
  uint32_t pc_ = 0;
  uint32_t bodyBegin_ = 0, bodyEnd_ = 0;
  uint64_t iterations_ = 0, iterationIndex_ = 0;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_OP_INTERPRETER_HPP_
