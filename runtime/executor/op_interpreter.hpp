// THE op interpreter: the semantics of every plan operation (plan-format.md), written once as
// __host__ __device__ code. The GPU kernel (cuda/executor_kernel.cuh) runs one BlockInterpreter per CUDA
// block with all its threads cooperating; the CPU backend runs one per host thread with
// threadId 0 of 1 thread. Nothing here knows which backend it runs on except where the hardware
// differs (multimem, vector widths), marked with MSCCLPP_DEVICE_COMPILE.
//
// Synchronisation rules the code keeps:
//  * Block-wide barriers (syncBlockThreads) appear only where every thread of the block reaches
//    them: in nop, barrier, the memory-channel pws/pwsf, and at the end of the block. A thread
//    whose wait failed still walks the op list (its waits return at once), so barriers match.
//  * Every wait is bounded by the block's deadline (start + LaunchArgs::timeoutNs) and stops when
//    the context's abort flag is set. The first thread of a block to fail fills the block's record
//    (what it waited for) and, for a timeout, sets the abort flag so every block stops promptly.
//  * The LL flag is read from context memory at block start and advanced by the launch's last
//    block (ExecState): graph replays and back-to-back launches advance it without the host.
#ifndef MSCCLPP_EXECUTOR_OP_INTERPRETER_HPP_
#define MSCCLPP_EXECUTOR_OP_INTERPRETER_HPP_

#include <cstdint>

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

// Which (dtype, op) pairs the switch reduces natively (multimem.ld_reduce); others use the
// members' pointers.
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
      : ctx_(ctx), tb_(tb), block_(blockIndex), tid_(threadId), nthreads_(numThreads), call_(args.call) {
    deadline_ = deadlineAfter(args.timeoutNs);
    packetDeadline_ = ctx.liveWaits == nullptr ? deadline_ : minU(deadline_, clockNs() + kReportWaitAfterNs);
    resume_ = threadId;
    ll8_ = args.packetType == static_cast<uint32_t>(PacketType::LL8);
    // Acquire: pairs with the previous launch's last block, which released the advanced flag.
    flag_ = atomicLoad<uint32_t, scopeDevice>(&ctx.state->flag, memoryOrderAcquire);
    half_ = (ctx.doubleScratch && (flag_ & 1u) == 0) ? ctx.scratchHalfBytes : 0;
  }

  MSCCLPP_HOST_DEVICE_INLINE void run() {
    // One flat loop over the ops, pipelines included (a pipeline op sets the unit and jumps back to
    // its body until its iterations are done), dispatching to out-of-line handlers. The loop's state
    // lives in the object, not in registers a handler call would have to save (ptxas -v: no spills).
    for (pc_ = 0; pc_ < tb_.nOps;) {
      if (stopped()) {
        markStopped(pc_);
        break;
      }
      // The op each block is at, for the wait-for report of a failed or long call (host builds only).
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
  // The part of a reference this pipeline iteration covers (the whole slice outside pipelines).
  MSCCLPP_HOST_DEVICE_INLINE Span span(const ResolvedRef& r) const {
    if (unit_ == kNoUnit) return Span{r.offset, r.bytes};
    if (pipeOff_ >= r.bytes) return Span{r.offset, 0};
    uint64_t b = r.bytes - pipeOff_ < unit_ ? r.bytes - pipeOff_ : unit_;
    uint64_t p = (r.scratch && ctx_.wrapScratch) ? pipeOff_ % ctx_.scratchChunkBytes : pipeOff_;
    return Span{r.offset + p, b};
  }
  // Byte offset inside the target buffer (scratch half included; packets at twice the data offset).
  MSCCLPP_HOST_DEVICE_INLINE uint64_t bufferOffset(const ResolvedRef& r, uint64_t dataOff, bool packet) const {
    return (r.scratch ? half_ : 0) + (packet ? 2 * dataOff : dataOff);
  }
  MSCCLPP_HOST_DEVICE_INLINE char* addr(const ResolvedRef& r, uint64_t dataOff, bool packet) const {
    return r.base + bufferOffset(r, dataOff, packet);
  }
  MSCCLPP_HOST_DEVICE_INLINE static uint64_t minU(uint64_t a, uint64_t b) { return a < b ? a : b; }

  // ---- control -----------------------------------------------------------------------------------
  // The CPU backend stops a block once the context is aborted (one thread per block: no barrier to
  // keep matched). On the GPU, threads keep walking the ops (their waits return at once).
  MSCCLPP_HOST_DEVICE_INLINE bool stopped() const {
#if defined(MSCCLPP_DEVICE_COMPILE)
    return false;
#else
    return failed_ || atomicLoad<uint32_t>(ctx_.abortFlag, memoryOrderRelaxed) != 0;
#endif
  }

  // CPU backend: the op a block is at, readable while it runs (relaxed: a diagnostic, no data), so
  // that a long wait can be described before it ends (diagnostics.hpp, describeLiveBlocks). Not on
  // the GPU, where the records are device memory the host reads only after a launch (its long waits
  // publish themselves instead: reportedWait).
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

  // GPU contexts have live-wait slots (exec_layout.hpp LiveWaitSlot; CPU contexts: none): a wait
  // that has not ended after kReportWaitAfterNs publishes what it waits for in its block's
  // host-mapped slot, for the call monitor, then goes on waiting (`spin(deadline)` spins for the
  // same claimed signal) and clears the slot when it ends. Several threads of a block may wait at
  // once, one slot shows one of them, and the one shown may end first and clear it: every
  // kRepublishWaitNs a wait that goes on fills the slot again if it is empty, so a block whose
  // threads still wait does not stay shown as running. A wait that ends within kReportWaitAfterNs
  // costs one clock read. CPU contexts wait in one go: the host reads their records and counters
  // live (describeLiveBlocks).
  template <class Spin>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus reportedWait(WaitKind kind, uint32_t what, uint64_t expected,
                                                     const uint64_t* observed, Spin&& spin, uint64_t detail = 0) {
    if (ctx_.liveWaits != nullptr) {
      const uint64_t early = clockNs() + kReportWaitAfterNs;
      if (early < deadline_) {
        SpinStatus st = spin(early);
        if (st != SpinStatus::Timeout) return st;
        publishWait(kind, what, expected, *observed, detail);
        for (;;) {
          const uint64_t round = clockNs() + kRepublishWaitNs;
          st = spin(round < deadline_ ? round : deadline_);
          if (st != SpinStatus::Timeout || round >= deadline_) break;
          republishWait(kind, what, expected, *observed, detail);
        }
        clearWait();
        return st;
      }
    }
    return spin(deadline_);
  }

  // Relaxed system-scope stores into host-mapped memory, the fields between two system-scope fences
  // while the sequence count is odd: the host sees them while the kernel runs (docs/cuda-backend.md,
  // "Design points and the CUDA rules they follow"). The threads of a block that publish or clear
  // at once take turns (lockSlot), so the host never reads a slot mixed from two waits. Cold: only a
  // wait that already waited long.
  MSCCLPP_HOST_DEVICE_NOINLINE void publishWait(WaitKind kind, uint32_t what, uint64_t expected, uint64_t observed,
                                                uint64_t detail) {
    if (!lockSlot()) return;
    LiveWaitSlot* s = &ctx_.liveWaits[block_];
    const uint32_t seq = beginSlotWrite(s);
    atomicStore<uint32_t>(&s->launchFlag, flag_, memoryOrderRelaxed);
    atomicStore<uint32_t>(&s->opIndex, opIndex_, memoryOrderRelaxed);
    atomicStore<uint32_t>(&s->pipelineIteration, unit_ == kNoUnit ? UINT32_MAX : iteration_, memoryOrderRelaxed);
    atomicStore<uint32_t>(&s->waitKind, static_cast<uint32_t>(kind), memoryOrderRelaxed);
    atomicStore<uint32_t>(&s->id, what, memoryOrderRelaxed);
    atomicStore<uint32_t>(&s->call, call_, memoryOrderRelaxed);
    atomicStore<uint64_t>(&s->expected, expected, memoryOrderRelaxed);
    atomicStore<uint64_t>(&s->observed, observed, memoryOrderRelaxed);
    atomicStore<uint64_t>(&s->detail, detail, memoryOrderRelaxed);
    atomicStore<uint32_t>(&s->waiting, tid_ + 1, memoryOrderRelaxed);
    endSlotWrite(s, seq);
    unlockSlot();
  }
  // publishWait when the slot shows no wait (the one it showed ended).
  MSCCLPP_HOST_DEVICE_NOINLINE void republishWait(WaitKind kind, uint32_t what, uint64_t expected, uint64_t observed,
                                                  uint64_t detail) {
    if (atomicLoad<uint32_t>(&ctx_.liveWaits[block_].waiting, memoryOrderRelaxed) == 0)
      publishWait(kind, what, expected, observed, detail);
  }
  // Only the thread whose wait the slot shows clears it (another thread of the block may have
  // published since).
  MSCCLPP_HOST_DEVICE_NOINLINE void clearWait() {
    LiveWaitSlot* s = &ctx_.liveWaits[block_];
    if (atomicLoad<uint32_t>(&s->waiting, memoryOrderRelaxed) != tid_ + 1 || !lockSlot()) return;
    if (atomicLoad<uint32_t>(&s->waiting, memoryOrderRelaxed) == tid_ + 1) {
      const uint32_t seq = beginSlotWrite(s);
      atomicStore<uint32_t>(&s->waiting, 0u, memoryOrderRelaxed);
      endSlotWrite(s, seq);
    }
    unlockSlot();
  }
  // The block's writers of its slot take turns through a word of its record, in device memory (a
  // read-modify-write on host-mapped memory would depend on the PCIe link's atomics). A writer holds
  // it for a few stores and nothing can stop it in between, so a plain loop suffices (spinUntil
  // here made ptxas spill in the kernel's entry and in reducePackets); false (nothing written) on
  // an abort.
  MSCCLPP_HOST_DEVICE_INLINE bool lockSlot() {
    uint32_t* lock = &ctx_.blockRecords[block_].slotLock;
    for (;;) {
      uint32_t free = 0;
      if (atomicCompareExchange<uint32_t, scopeDevice>(lock, &free, 1u, memoryOrderAcquire)) return true;
      if (ctx_.abortFlag != nullptr && atomicLoad<uint32_t>(ctx_.abortFlag, memoryOrderRelaxed) != 0) return false;
    }
  }
  MSCCLPP_HOST_DEVICE_INLINE void unlockSlot() {
    atomicStore<uint32_t, scopeDevice>(&ctx_.blockRecords[block_].slotLock, 0u, memoryOrderRelease);
  }
  // The sequence count odd (returns the even value before it), then the fields, then even again.
  MSCCLPP_HOST_DEVICE_INLINE static uint32_t beginSlotWrite(LiveWaitSlot* s) {
    const uint32_t seq = atomicLoad<uint32_t>(&s->sequence, memoryOrderRelaxed) & ~1u;
    atomicStore<uint32_t>(&s->sequence, seq + 1, memoryOrderRelaxed);
    cuda::atomic_thread_fence(memoryOrderSeqCst, scopeSystem);
    return seq;
  }
  MSCCLPP_HOST_DEVICE_INLINE static void endSlotWrite(LiveWaitSlot* s, uint32_t seq) {
    cuda::atomic_thread_fence(memoryOrderSeqCst, scopeSystem);
    atomicStore<uint32_t>(&s->sequence, seq + 2, memoryOrderRelaxed);
  }

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
    BlockRecord* r = &ctx_.blockRecords[block_];
    uint32_t s = atomicLoad<uint32_t, scopeDevice>(&r->state, memoryOrderRelaxed);
    while (s == kBlockRunning || s == kBlockFinished) {
      if (atomicCompareExchange<uint32_t, scopeDevice>(&r->state, &s, kBlockWriting, memoryOrderRelaxed)) {
        // Atomic where a live reader may look (publishProgress); the rest is read after the launch.
        atomicStore<uint32_t, scopeDevice>(&r->opIndex, opIndex_, memoryOrderRelaxed);
        r->opType = static_cast<uint32_t>(op.type);
        r->waitKind = static_cast<uint32_t>(kind);
        r->id = what;
        atomicStore<uint32_t, scopeDevice>(&r->pipelineIteration, unit_ == kNoUnit ? UINT32_MAX : iteration_,
                                           memoryOrderRelaxed);
        atomicStore<uint32_t, scopeDevice>(&r->launchFlag, flag_, memoryOrderRelaxed);
        r->expected = expected;
        r->observed = observed;
        r->detail = detail;
        uint32_t finalState = st == SpinStatus::Timeout   ? kBlockTimedOut
                              : st == SpinStatus::Aborted ? kBlockAborted
                                                          : kBlockInvalid;
        // Release: the fields above are complete when the state says so (the host reads them
        // after the launch ended, which orders them anyway; this keeps concurrent readers safe).
        atomicStore<uint32_t, scopeSystem>(&r->state, finalState, memoryOrderRelease);
        break;
      }
    }
    if (st != SpinStatus::Aborted) {
      uint32_t none = UINT32_MAX;
      atomicCompareExchange<uint32_t, scopeDevice>(&ctx_.state->firstFailedBlock, &none, block_, memoryOrderRelaxed);
      // Relaxed: the flag only makes other spins give up; it publishes no data.
      atomicStore<uint32_t, scopeSystem>(ctx_.abortFlag, 1u, memoryOrderRelaxed);
    }
  }

  MSCCLPP_HOST_DEVICE_INLINE void finishBlock() {
    syncBlockThreads();
    if (tid_ != 0) return;
    BlockRecord* r = &ctx_.blockRecords[block_];
    uint32_t s = atomicLoad<uint32_t, scopeDevice>(&r->state, memoryOrderRelaxed);
    if ((s == kBlockRunning || s == kBlockFinished) &&
        atomicCompareExchange<uint32_t, scopeDevice>(&r->state, &s, kBlockWriting, memoryOrderRelaxed)) {
      atomicStore<uint32_t, scopeDevice>(&r->launchFlag, flag_, memoryOrderRelaxed);
      atomicStore<uint32_t, scopeSystem>(&r->state, static_cast<uint32_t>(kBlockFinished), memoryOrderRelease);
    }
    // The live-wait slot says the block finished this launch (one store per block and launch).
    if (ctx_.liveWaits != nullptr)
      atomicStore<uint32_t>(&ctx_.liveWaits[block_].finishedFlag, flag_, memoryOrderRelaxed);
#if defined(MSCCLPP_DEVICE_COMPILE)
    // The block's writes (all threads, ordered by the barrier above) before our completion count.
    __threadfence();
#endif
    // acq_rel: the last block acquires every block's completion before advancing the flag.
    uint32_t done = atomicFetchAdd<uint32_t, scopeDevice>(&ctx_.state->doneBlocks, 1u, memoryOrderAcqRel) + 1;
    if (done == ctx_.nBlocks) {
      atomicStore<uint32_t, scopeDevice>(&ctx_.state->doneBlocks, 0u, memoryOrderRelaxed);
      // Release: the next launch (stream-ordered after this one) reads the new flag.
      atomicStore<uint32_t, scopeDevice>(&ctx_.state->flag, nextFlag(flag_), memoryOrderRelease);
    }
  }

  // A pipeline op: its body [pc_ + 1, pc_ + 1 + bodyCount) runs once per unit of its chunks.
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
    iteration_ = 0;
    bodyBegin_ = pc_ + 1;
    bodyEnd_ = pc_ + 1 + op.bodyCount;
    pc_ = bodyBegin_;
  }

  // After the last op of a pipeline body: the next unit, or past the pipeline. Not in a pipeline
  // (bodyEnd_ 0: pc_ is 0 again after settlePending stepped back from op 0): nothing.
  MSCCLPP_HOST_DEVICE_NOINLINE void nextIteration() {
    if (bodyEnd_ == 0) return;
    if (++iterationIndex_ < iterations_) {
      pipeOff_ = iterationIndex_ * unit_;
      iteration_ = static_cast<uint32_t>(iterationIndex_);
      pc_ = bodyBegin_;
    } else {
      pipeOff_ = 0;
      unit_ = kNoUnit;
      bodyEnd_ = 0;
    }
  }

  // The dispatch: every handler below is out of line on the GPU, so each gets the whole register
  // file of its own (the kernel's 64 registers per thread at 1024 threads) and none spills.
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
    // The op is looked up again rather than kept: a reference live across the handler call is a
    // register the call must preserve (ptxas spilled it in the int8/uint8 min/max and fp8 kernels).
    if (pending_.set) settlePending();
  }

  // A handler deferred a failure (deferFail), for op opIndex_. On the GPU a packet op's early leave
  // (packet ops, below) is waited out here and the op runs again: pc_ steps back to it, and run()
  // dispatches it anew from the thread's loop index (resume_). Whatever else stands fills the
  // block's record. The op is not called from here: a second caller of the handlers made ptxas
  // spill in the kernel's entry, as did any loop or call added to the dispatch.
  MSCCLPP_HOST_DEVICE_NOINLINE void settlePending() {
    if (awaitLatePacket()) {
      --pc_;  // run() steps it forward again (unsigned: 0 - 1 + 1 is 0; see nextIteration)
      return;
    }
    pending_.set = false;
    fail(pending_.status, tb_.ops[opIndex_], pending_.kind, pending_.what, pending_.expected, pending_.observed,
         pending_.detail);
  }

  // A wait that fails inside a packet loop only notes what it waited for and leaves the loop; the
  // dispatch fills the block's record once the handler returned. The loops then have no cold path
  // of their own to keep registers for.
  MSCCLPP_HOST_DEVICE_INLINE void deferFail(SpinStatus st, WaitKind kind, uint32_t what, uint64_t expected,
                                            uint64_t observed, uint64_t detail, uint64_t resumeAt = 0) {
    pending_ = PendingFailure{true, st, kind, what, expected, observed, detail, resumeAt};
  }

  // ---- synchronisation ops ----------------------------------------------------------------------
  MSCCLPP_HOST_DEVICE_NOINLINE void barrier(const plan::Op& op) {
    // A long wait at a barrier is published too: its blocks wait on this rank's other blocks, which
    // the monitor's wait-for analysis follows (a block at a barrier no longer counts as running).
    const uint64_t none = 0;
    SpinStatus st = ctx_.barriers[op.barrierId].syncWith(op.numThreadblocks, ctx_.abortFlag, [&](auto&& spin) {
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
          return relaxed ? sem.relaxedWaitClaimed(expected, deadline, ctx_.abortFlag, &observed)
                         : sem.waitClaimed(expected, deadline, ctx_.abortFlag, &observed);
        });
      } else {
        kind = WaitKind::PortChannel;
        auto& sem = ctx_.portChannels[c].semaphore_;
        expected = sem.claimNextExpected();
        st = reportedWait(kind, c, expected, &observed, [&](uint64_t deadline) {
          return sem.waitClaimed(expected, deadline, ctx_.abortFlag, &observed);
        });
      }
      if (st != SpinStatus::Ok) {
        fail(st, op, kind, c, expected, observed, 0);
        return;
      }
    }
  }

  // Defect 1 fixed: one thread per listed port channel pushes a flush and waits for it.
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
            deadline, ctx_.abortFlag);
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

  // Defect 2 fixed: the remote source uses its own offset, the local destination its own.
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

  // re / res / rre / rres: dst[*] = src[0] (+) src[1] (+) ...; res/rres also store to dst[1..]
  // (remote). Tiles: each thread reads all sources of a tile before writing any destination, so a
  // destination may alias a source; any number of sources and destinations.
  MSCCLPP_HOST_DEVICE_NOINLINE void reduce(const plan::Op& op) {
    uint64_t count = span(src(op, 0)).bytes / sizeof(T);
    uint32_t nDst = (op.type == plan::OpType::Reduce || op.type == plan::OpType::ReadReduce) ? 1 : op.nDst;
    uint64_t done = 0;  // elements reduced by the vector path
#if defined(MSCCLPP_DEVICE_COMPILE)
    // 16-byte vectors (ld.global.v4 / st.global.v4, packed half and bfloat16 math) when every source
    // and destination is 16-aligned; each thread reads all sources of a vector before writing, so a
    // destination may alias a source.
    uintptr_t phase = 0;
    for (uint32_t k = 0; k < op.nSrc; ++k)
      phase |= reinterpret_cast<uintptr_t>(addr(src(op, k), span(src(op, k)).off, false));
    for (uint32_t d = 0; d < nDst; ++d)
      phase |= reinterpret_cast<uintptr_t>(addr(dst(op, d), span(dst(op, d)).off, false));
    if ((phase & 15) == 0 && sizeof(T) <= 16) {
      const uint64_t nVec = count * sizeof(T) / 16;
      for (uint64_t v = tid_; v < nVec; v += nthreads_) {
        Vec16 acc = loadVec16(addr(src(op, 0), span(src(op, 0)).off, false) + v * 16);
        for (uint32_t k = 1; k < op.nSrc; ++k)
          acc = reduceWord<T, Op>(acc, loadVec16(addr(src(op, k), span(src(op, k)).off, false) + v * 16));
        for (uint32_t d = 0; d < nDst; ++d) storeVec16(addr(dst(op, d), span(dst(op, d)).off, false) + v * 16, acc);
      }
      done = nVec * 16 / sizeof(T);
    }
    constexpr uint64_t kTile = 1;  // the rest: one element per thread and step
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
  // One packet of src_buff[refPos] (at packetByteOff in its buffer), for loop index resumeAt.
  template <class Pkt>
  MSCCLPP_HOST_DEVICE_INLINE bool readPkt(const Pkt* p, uint32_t refPos, uint64_t packetByteOff, uint64_t resumeAt,
                                          typename Pkt::Payload* v) {
    uint32_t observed = 0;
    SpinStatus st = readPacket(p, flag_, v, packetDeadline_, ctx_.abortFlag, &observed);
    if (st == SpinStatus::Ok) return true;
    deferFail(st, WaitKind::Packet, refPos, flag_, observed, packetByteOff, resumeAt);
    return false;
  }

  // LL packet waits on the GPU spin until packetDeadline_ (kReportWaitAfterNs into the launch, or
  // after this thread's last long packet wait), not deadline_: a packet that has not come by then makes
  // the thread leave the op's loop (deferFail with its loop index). settlePending waits for that
  // packet out of the loop, published once it waited long (reportedWait), and has the op run again
  // from the index the thread left. Redoing an index is harmless: it reads the same packets again
  // and writes the same values to the same places. Only rppkt's memory path writes part of an index
  // (a destination's packet) before it read all of it, and writes it again: the same payload and
  // flag, into a slot no synchronised plan reuses before this op is done. The loops carry no
  // publishing code of their own: every way of putting it there made ptxas spill in them.
  //
  // awaitLatePacket: true when the packet a loop left for has come (the op resumes); false when the
  // failure it deferred stands (a real timeout, an abort, not a packet wait), updated if this wait
  // failed.
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

  // This thread's first loop index in a packet op: its thread index, or the index settlePending
  // resumes it at (once).
  MSCCLPP_HOST_DEVICE_INLINE uint64_t firstIndex() {
    const uint64_t first = resume_;
    resume_ = tid_;
    return first;
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus awaitPacket(const char* at, uint64_t deadline, uint32_t* seen) {
    typename Pkt::Payload v;
    return readPacket(reinterpret_cast<const Pkt*>(at), flag_, &v, deadline, ctx_.abortFlag, seen);
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
                                    firstIndex(), nthreads_, flag_, packetDeadline_, ctx_.abortFlag, &info);
    if (st != SpinStatus::Ok)
      deferFail(st, WaitKind::Packet, 0, flag_, info.observedFlag,
                bufferOffset(s, ss.off, true) + info.packetIndex * sizeof(Pkt), info.packetIndex);
  }

  template <class Pkt>
  MSCCLPP_HOST_DEVICE_NOINLINE void putPacketsOp(const plan::Op& op) {
    if (op.channelType == plan::ChannelType::Port) {
      // The source is already in packet form (as in MSCCL++): forward the packet bytes.
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

  // rppkt: local packets (wait for their flags) re-sent to remote packet buffers with the same flag.
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

  // repkt / respkt / recpkt / recspkt: dst[0] = src[0] (+) packets(src[1..]); every later dst
  // (local or remote packet buffer) receives the result as packets. A group of packets covers
  // whole elements (two LL8 packets per 8-byte element), so any dtype works with either format.
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
    // Whole groups of whole payloads whose plain data is aligned are reduced as words (packed half
    // and bfloat16 math on the GPU): no byte loops, nothing in local memory. Partial or unaligned
    // groups go byte by byte.
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
      uint64_t nPk = (gBytes + kP - 1) / kP;
      alignas(16) unsigned char accBuf[16];
      alignas(16) unsigned char inBuf[16];
      T* acc = reinterpret_cast<T*>(accBuf);
      const T* in = reinterpret_cast<const T*>(inBuf);
      const char* p0 = addr(s0, s0s.off, false) + gOff;
      for (uint64_t b = 0; b < gBytes; ++b) accBuf[b] = static_cast<unsigned char>(p0[b]);
      for (uint32_t k = 1; k < op.nSrc; ++k) {
        const ResolvedRef& sk = src(op, k);
        Span sks = span(sk);
        const Pkt* pk = reinterpret_cast<const Pkt*>(addr(sk, sks.off, true)) + g * kPerGroup;
        for (uint64_t q = 0; q < nPk; ++q) {
          P v;
          if (!readPkt(&pk[q], k, bufferOffset(sk, sks.off, true) + (g * kPerGroup + q) * sizeof(Pkt), g, &v)) return;
          detail::storePayload<P>(reinterpret_cast<char*>(inBuf) + q * kP, v, minU(kP, gBytes - q * kP));
        }
        for (uint64_t e = 0; e < gBytes / sizeof(T); ++e) acc[e] = R::apply(acc[e], in[e]);
      }
      const ResolvedRef& d0 = dst(op, 0);
      char* out = addr(d0, span(d0).off, false) + gOff;
      for (uint64_t b = 0; b < gBytes; ++b) out[b] = static_cast<char>(accBuf[b]);
      for (uint32_t d = 1; d < op.nDst; ++d) {
        const ResolvedRef& dd = dst(op, d);
        Pkt* pk = reinterpret_cast<Pkt*>(addr(dd, span(dd).off, true)) + g * kPerGroup;
        for (uint64_t q = 0; q < nPk; ++q)
          pk[q].write(detail::loadPayload<P>(reinterpret_cast<const char*>(accBuf) + q * kP, minU(kP, gBytes - q * kP)),
                      flag_);
      }
    }
  }

  // ---- switch (NVLS) ops --------------------------------------------------------------------------
  MSCCLPP_HOST_DEVICE_INLINE const SwitchChannelDeviceHandle& switchOf(const ResolvedRef& r) const {
    return ctx_.switchChannels[r.id];
  }

  // glre: dst[0] (local) = reduction over the group of src[0]; glres: the result stored to the
  // group through dst[0] (multicast). Defect 4 fixed: glre executes.
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
      // The switch reduces 16 bytes per access when it can reach every piece (aligned, whole vectors).
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
    for (uint64_t e = tid_; e < count; e += nthreads_) {
      T v = in.template reduceMembers<T>(sOff + e * sizeof(T), [](T a, T b) { return R::apply(a, b); });
      if (toGroup)
        switchOf(d).template storeMembers<T>(dOff + e * sizeof(T), v);
      else
        local[e] = v;
    }
  }

  MSCCLPP_HOST_DEVICE_NOINLINE void groupStore(const plan::Op& op) {
    const ResolvedRef& s = src(op, 0);
    const ResolvedRef& d = dst(op, 0);
    Span ss = span(s), ds = span(d);
    switchOf(d).broadcastBytes(bufferOffset(d, ds.off, false), addr(s, ss.off, false), minU(ss.bytes, ds.bytes), tid_,
                               nthreads_);
  }

  // gstorepkt: local packets (wait for their flags) stored to every member's packet buffer.
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
  uint32_t call_;  // LaunchArgs::call, for the live-wait slot
  uint64_t deadline_ = 0;
  // LL packet waits spin until this (not deadline_) and then leave their op, which runs again from
  // resume_ (settlePending). Both per thread.
  uint64_t packetDeadline_ = 0;
  uint64_t resume_ = 0;
  uint32_t flag_ = 0;
  uint64_t half_ = 0;
  bool ll8_ = false;
  bool failed_ = false;
  uint32_t opIndex_ = 0;
  uint32_t iteration_ = 0;
  uint64_t pipeOff_ = 0;
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
  // The op loop: the op to run, and the running pipeline (bodyEnd_ 0: none).
  uint32_t pc_ = 0;
  uint32_t bodyBegin_ = 0, bodyEnd_ = 0;
  uint64_t iterations_ = 0, iterationIndex_ = 0;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_OP_INTERPRETER_HPP_
