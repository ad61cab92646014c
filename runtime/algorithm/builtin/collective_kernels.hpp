// The built-in all-gather, reduce-scatter, broadcast and all-to-all kernels
// (docs/algorithms.md): full mesh over memory channels, every rank reading
// or writing its peers' buffers directly, between a barrier on entry (every
// rank's buffers are ready) and one on leaving (every write has landed).
#ifndef MSCCLPP_ALGORITHM_BUILTIN_COLLECTIVE_KERNELS_HPP_
#define MSCCLPP_ALGORITHM_BUILTIN_COLLECTIVE_KERNELS_HPP_

#include "algorithm/builtin/allreduce_kernels.hpp"

namespace mscclpp::algo {

// Our input into slot `rank` of every rank's output. In place our input is
// that slot of ours already; peers write only their own slots.
struct AllgatherMesh {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const uint64_t bytes = c.inputBytes;
    b.step(kStepEnter);
    meshBarrier(b);
    b.step(kStepExchange);
    for (int k = 0; k < c.nRanks; ++k) {
      const int p = (c.rank + k) % c.nRanks;  // every rank starts with a different peer
      char* dst = c.peers[p].output + c.rank * bytes;
      if (dst != c.input) gridCopy(b, dst, c.input, bytes);
    }
    b.step(kStepLeave);
    b.gridSync();
    meshBarrier(b);
  }
};

// Our output: slot `rank` of every rank's input, reduced in rank order.
template <class T>
struct ReduceScatterMesh {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const int op = b.op();
    b.step(kStepEnter);
    meshBarrier(b);
    b.step(kStepReduce);
    const uint64_t count = c.outputBytes / sizeof(T);
    const uint64_t base = c.rank * count;
    const Span mine = blockShare(b, count, 1);
    T* out = reinterpret_cast<T*>(c.output);
    for (uint64_t e = mine.begin + b.thread(); e < mine.end; e += b.threads())
      out[e] = reduceOverRanks<T>(c, op, base + e);
    b.step(kStepLeave);
    b.gridSync();
    meshBarrier(b);
  }
};

// Every rank copies the root's input into its output: the root tells the
// others its input is ready, they tell it when they have read it.
struct BroadcastCopy {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const int root = c.root;
    b.step(kStepEnter);
    if (c.rank == root) {
      peerBarrierHalf(b, true);
    } else if (b.block() == 0 && b.thread() == 0) {
      b.wait(root);
    }
    b.gridSync();
    b.step(kStepExchange);
    const char* src = c.peers[root].input;
    if (c.output != src) gridCopy(b, c.output, src, c.outputBytes);
    b.step(kStepLeave);
    b.gridSync();
    if (c.rank == root) {
      peerBarrierHalf(b, false);
    } else if (b.block() == 0 && b.thread() == 0) {
      b.signal(root);
    }
  }

  // The root's side: signal every peer, or wait for every peer.
  MSCCLPP_HOST_DEVICE_INLINE static void peerBarrierHalf(AlgorithmBlock& b, bool signal) {
    const AlgorithmDeviceContext& c = b.context();
    if (b.block() != 0) return;
    for (int p = static_cast<int>(b.thread()); p < c.nRanks; p += static_cast<int>(b.threads())) {
      if (p == c.rank) continue;
      if (signal) {
        b.signal(p);
      } else {
        b.wait(p);
      }
    }
  }
};

// Part p of our input into part `rank` of rank p's output.
struct AlltoallMesh {
  MSCCLPP_HOST_DEVICE void operator()(AlgorithmBlock& b) const {
    const AlgorithmDeviceContext& c = b.context();
    const uint64_t part = c.inputBytes / c.nRanks;
    b.step(kStepEnter);
    meshBarrier(b);
    b.step(kStepExchange);
    for (int k = 0; k < c.nRanks; ++k) {
      const int p = (c.rank + k) % c.nRanks;
      gridCopy(b, c.peers[p].output + c.rank * part, c.input + p * part, part);
    }
    b.step(kStepLeave);
    b.gridSync();
    meshBarrier(b);
  }
};

}  // namespace mscclpp::algo

#endif  // MSCCLPP_ALGORITHM_BUILTIN_COLLECTIVE_KERNELS_HPP_
