// The built-in allreduce kernels (docs/algorithms.md), templated on the
// element type; the launch's reduce op is a runtime argument. Every rank
// reduces the ranks' values in rank order, so all ranks get the same bits.
//   AllreducePackets:   one shot: LL packets to every peer's scratch, read back and reduced (small calls).
//   AllreduceReadReduce: each rank reduces its slice from every peer's input and writes it to every output.
//   AllreduceSwitch:    the same through switch channels: NVLS multicast where the buffers allow it.
//   AllreduceTwoLevel:  within a host as AllreduceReadReduce, across hosts over port channels.
#ifndef MSCCLPP_ALGORITHM_BUILTIN_ALLREDUCE_KERNELS_HPP_
#define MSCCLPP_ALGORITHM_BUILTIN_ALLREDUCE_KERNELS_HPP_

#include "algorithm/builtin/kernel_support.hpp"

namespace mscclpp::algo {

// Steps, as the descriptions name them (builtin_algorithms.cc).
enum : uint32_t { kStepEnter = 0, kStepExchange = 1, kStepReduce = 2, kStepLeave = 3, kStepAcross = 4 };

// Buffers in LL16 packets of 8 payload bytes: the executor pads the call to
// whole payloads, so every packet is full. Scratch slot s holds rank s's.
template <class T>
struct AllreducePackets {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const int op = b.op();
    const uint64_t nPackets = c.inputBytes / 8;
    const uint64_t slotBytes = nPackets * sizeof(LL16Packet);
    const uint64_t stride = uint64_t{c.nBlocks} * b.threads();
    const uint64_t first = uint64_t{b.block()} * b.threads() + b.thread();
    b.step(kStepExchange);
    for (uint64_t i = first; i < nPackets; i += stride) {
      const uint64_t v = detail::loadPayload<uint64_t>(c.input + 8 * i, 8);
      for (int p = 0; p < c.nRanks; ++p) {
        if (p == c.rank) continue;
        LL16Packet* slot = reinterpret_cast<LL16Packet*>(b.peerScratch(p) + c.rank * slotBytes);
        slot[i].write(v, b.flag());
      }
    }
    b.step(kStepReduce);
    for (uint64_t i = first; i < nPackets; i += stride) {
      uint64_t acc = 0;
      for (int p = 0; p < c.nRanks; ++p) {
        uint64_t v = 0;
        if (p == c.rank) {
          v = detail::loadPayload<uint64_t>(c.input + 8 * i, 8);
        } else {
          const uint64_t at = b.scratchOffset() + p * slotBytes + i * sizeof(LL16Packet);
          const LL16Packet* slot = reinterpret_cast<const LL16Packet*>(c.scratch + at);
          if (!b.readPacket(slot, p, at, &v)) break;
        }
        acc = p == 0 ? v : reduceWords<T>(op, acc, v);
      }
      detail::storePayload<uint64_t>(c.output + 8 * i, acc, 8);
    }
  }
};

// Rank r's slice r of the elements: reduced from every rank's input,
// written to every rank's output. Only rank r touches slice r anywhere, so
// input and output may be the same buffer.
template <class T>
struct AllreduceReadReduce {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const int op = b.op();
    b.step(kStepEnter);
    meshBarrier(b);
    b.step(kStepReduce);
    const uint64_t count = c.inputBytes / sizeof(T);
    const Span slice = partOf(count, 1, c.nRanks, c.rank);
    const Span mine = blockShare(b, slice.end - slice.begin, 1);
    for (uint64_t e = slice.begin + mine.begin + b.thread(); e < slice.begin + mine.end; e += b.threads()) {
      const T acc = reduceOverRanks<T>(c, op, e);
      for (int p = 0; p < c.nRanks; ++p) reinterpret_cast<T*>(c.peers[p].output)[e] = acc;
    }
    b.step(kStepLeave);
    b.gridSync();
    meshBarrier(b);
  }
};

// AllreduceReadReduce through switch channels 0 (inputs) and 1 (outputs):
// on sm_90 with a multicast binding the switch reduces and stores 16 bytes
// at once where it can; elsewhere the members' buffers are used.
template <class T>
struct AllreduceSwitch {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const int op = b.op();
    b.step(kStepEnter);
    meshBarrier(b);
    b.step(kStepReduce);
    const SwitchChannelDeviceHandle& in = c.switchChannels[0];
    const SwitchChannelDeviceHandle& out = c.switchChannels[1];
    const uint64_t count = c.inputBytes / sizeof(T);
    const Span slice = partOf(count, 1, c.nRanks, c.rank);
    const Span mine = blockShare(b, slice.end - slice.begin, 1);
    uint64_t e = slice.begin + mine.begin;
    const uint64_t end = slice.begin + mine.end;
    e = multimemRun(in, out, op, e, end, b.thread(), b.threads());
    for (e += b.thread(); e < end; e += b.threads()) {
      const T v = in.reduceMembers<T>(e * sizeof(T), [op](T x, T y) { return reduceValue<T>(op, x, y); });
      out.storeMembers<T>(e * sizeof(T), v);
    }
    b.step(kStepLeave);
    b.gridSync();
    meshBarrier(b);
  }

  // The elements [e, end) the switch reduces itself, 16 bytes at a time from
  // the first 16-byte boundary; returns where the element loop goes on.
  MSCCLPP_HOST_DEVICE_INLINE static uint64_t multimemRun(const SwitchChannelDeviceHandle& in,
                                                         const SwitchChannelDeviceHandle& out, int op, uint64_t e,
                                                         uint64_t end, uint32_t tid, uint32_t nThreads) {
#if defined(MSCCLPP_DEVICE_COMPILE) && __CUDA_ARCH__ >= 900
    if (in.mcPtr == nullptr || out.mcPtr == nullptr || (e * sizeof(T)) % 16 != 0) return e;
    const uint64_t nVec = (end - e) * sizeof(T) / 16;
    if (nVec == 0) return e;
    const char* src = static_cast<const char*>(in.mcPtr) + e * sizeof(T);
    char* dst = static_cast<char*>(out.mcPtr) + e * sizeof(T);
    bool done = true;
    if constexpr (std::is_same<T, float>::value) {
      if (op == 0) {
        for (uint64_t i = tid; i < nVec; i += nThreads)
          out.multimemStore16(dst + 16 * i, in.multimemLoadReduce16<MultimemElem::F32, MultimemOp::Sum>(src + 16 * i));
      } else {
        done = false;
      }
    } else {
      done = false;
    }
    // The barrier after the kernel's step orders these stores; a thread's
    // own part needs nothing more.
    return done ? e + nVec * 16 / sizeof(T) : e;
#else
    (void)in, (void)out, (void)op, (void)end, (void)tid, (void)nThreads;
    return e;
#endif
  }
};

// Hosts of L ranks each: local rank l reduces slice l of L over its host's
// inputs into scratch slot h (its host), sends it to the rank of local
// index l on every other host, which puts it in that host's slot; each then
// reduces the slots in host order and writes the slice to every output of
// its host. The scratch is double-buffered: a fast host's next call writes
// the other half.
template <class T>
struct AllreduceTwoLevel {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const int op = b.op();
    const uint64_t count = c.inputBytes / sizeof(T);
    const uint64_t slotBytes = (count + c.nLocalRanks - 1) / c.nLocalRanks * sizeof(T);
    const Span slice = partOf(count, 1, c.nLocalRanks, c.localRank);
    const Span mine = blockShare(b, slice.end - slice.begin, 1);
    T* slots = reinterpret_cast<T*>(b.scratch());
    const uint64_t slotElems = slotBytes / sizeof(T);
    b.step(kStepEnter);
    localBarrier(b);
    b.step(kStepReduce);
    for (uint64_t e = slice.begin + mine.begin + b.thread(); e < slice.begin + mine.end; e += b.threads()) {
      bool first = true;
      T acc{};
      for (int p = 0; p < c.nRanks; ++p) {
        if (c.peers[p].host != c.host) continue;
        const T v = reinterpret_cast<const T*>(c.peers[p].input)[e];
        acc = first ? v : reduceValue<T>(op, acc, v);
        first = false;
      }
      slots[c.host * slotElems + (e - slice.begin)] = acc;
    }
    b.gridSync();
    b.step(kStepAcross);
    if (b.block() == 0 && b.thread() == 0 && c.nHosts > 1) {
      const uint64_t bytes = (slice.end - slice.begin) * sizeof(T);
      const uint64_t at = b.scratchOffset() + c.host * slotBytes;
      for (int p = 0; p < c.nRanks; ++p)
        if (c.peers[p].host != c.host && c.peers[p].scratchId != kNoMemoryId)
          b.put(p, c.peers[p].scratchId, at, kScratchMemoryId, at, bytes, true);
      for (int p = 0; p < c.nRanks; ++p)
        if (c.peers[p].host != c.host && c.peers[p].scratchId != kNoMemoryId) b.portWait(p);
      // Our slot may be written again two calls later: the puts must have read it.
      for (int p = 0; p < c.nRanks; ++p) {
        if (c.peers[p].host != c.host && c.peers[p].scratchId != kNoMemoryId) {
          b.portFlush(p);
          break;
        }
      }
    }
    b.gridSync();
    b.step(kStepReduce);
    for (uint64_t e = slice.begin + mine.begin + b.thread(); e < slice.begin + mine.end; e += b.threads()) {
      T acc = slots[e - slice.begin];
      for (int h = 1; h < c.nHosts; ++h) acc = reduceValue<T>(op, acc, slots[h * slotElems + (e - slice.begin)]);
      for (int p = 0; p < c.nRanks; ++p)
        if (c.peers[p].host == c.host) reinterpret_cast<T*>(c.peers[p].output)[e] = acc;
    }
    b.step(kStepLeave);
    b.gridSync();
    localBarrier(b);
  }
};

}  // namespace mscclpp::algo

#endif  // MSCCLPP_ALGORITHM_BUILTIN_ALLREDUCE_KERNELS_HPP_
