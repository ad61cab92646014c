// What the built-in kernels share: contiguous shares of a range per block,
// the reduce op of a launch applied to elements and to LL payload words,
// and the barriers with the other ranks. Host and device code, one source.
#ifndef MSCCLPP_ALGORITHM_BUILTIN_KERNEL_SUPPORT_HPP_
#define MSCCLPP_ALGORITHM_BUILTIN_KERNEL_SUPPORT_HPP_

#include <cstdint>

#include "executor/reduce_ops.hpp"
#include "executor/vector_reduce.hpp"
#include "mscclpp/algorithm_device.hpp"

namespace mscclpp::algo {

struct Span {
  uint64_t begin, end;
};

// Part i of n of [0, total), in units of `unit`: the first (units mod n)
// parts one unit longer, the last part taking any bytes short of a unit.
MSCCLPP_HOST_DEVICE_INLINE Span partOf(uint64_t total, uint64_t unit, uint64_t n, uint64_t i) {
  const uint64_t units = total / unit, base = units / n, extra = units % n;
  const uint64_t b = i * base + (i < extra ? i : extra);
  const uint64_t e = b + base + (i < extra ? 1 : 0);
  return Span{b * unit, i + 1 == n ? total : e * unit};
}

// The launch's reduce op (ReduceOp numbering: Sum 0, Prod 1, Max 2, Min 3).
template <class T>
MSCCLPP_HOST_DEVICE_INLINE T reduceValue(int op, T a, T b) {
  switch (op) {
    case 1:
      return exec::Reducer<T, exec::OpProd>::apply(a, b);
    case 2:
      return exec::Reducer<T, exec::OpMax>::apply(a, b);
    case 3:
      return exec::Reducer<T, exec::OpMin>::apply(a, b);
    default:
      return exec::Reducer<T, exec::OpSum>::apply(a, b);
  }
}

// a (op) b over a whole word W of T elements (packed math where it exists).
template <class T, class W>
MSCCLPP_HOST_DEVICE_INLINE W reduceWords(int op, W a, const W& b) {
  switch (op) {
    case 1:
      return exec::reduceWord<T, exec::OpProd>(a, b);
    case 2:
      return exec::reduceWord<T, exec::OpMax>(a, b);
    case 3:
      return exec::reduceWord<T, exec::OpMin>(a, b);
    default:
      return exec::reduceWord<T, exec::OpSum>(a, b);
  }
}

// Block 0 signals each peer that `takes` selects, then waits for each:
// every rank announces that it entered the call (or left its last write),
// and learns the same of the others. The other blocks learn it at the grid
// barrier that follows the call of every block.
template <class Takes>
MSCCLPP_HOST_DEVICE_INLINE void peerBarrier(AlgorithmBlock& b, Takes takes) {
  const AlgorithmDeviceContext& c = b.context();
  if (b.block() == 0) {
    for (int p = static_cast<int>(b.thread()); p < c.nRanks; p += static_cast<int>(b.threads()))
      if (p != c.rank && takes(p)) b.signal(p);
    for (int p = static_cast<int>(b.thread()); p < c.nRanks; p += static_cast<int>(b.threads()))
      if (p != c.rank && takes(p)) b.wait(p);
  }
  b.gridSync();
}

// Every peer.
MSCCLPP_HOST_DEVICE_INLINE void meshBarrier(AlgorithmBlock& b) {
  peerBarrier(b, [](int) { return true; });
}

// Every peer on this host.
MSCCLPP_HOST_DEVICE_INLINE void localBarrier(AlgorithmBlock& b) {
  const AlgorithmDeviceContext& c = b.context();
  peerBarrier(b, [&](int p) { return c.peers[p].host == c.host; });
}

// This block's contiguous share of [0, total) in units, and its threads' strides in it.
MSCCLPP_HOST_DEVICE_INLINE Span blockShare(const AlgorithmBlock& b, uint64_t total, uint64_t unit) {
  return partOf(total, unit, b.context().nBlocks, b.block());
}

// Element e of every rank's input, reduced in rank order: every rank gets the same bits.
template <class T>
MSCCLPP_HOST_DEVICE_INLINE T reduceOverRanks(const AlgorithmDeviceContext& c, int op, uint64_t e) {
  T acc = reinterpret_cast<const T*>(c.peers[0].input)[e];
  for (int p = 1; p < c.nRanks; ++p) acc = reduceValue<T>(op, acc, reinterpret_cast<const T*>(c.peers[p].input)[e]);
  return acc;
}

// Copies bytes with every thread of every block of the launch.
MSCCLPP_HOST_DEVICE_INLINE void gridCopy(AlgorithmBlock& b, char* dst, const char* src, uint64_t bytes) {
  const Span s = blockShare(b, bytes, 16);
  exec::copyGlobal(dst + s.begin, src + s.begin, s.end - s.begin, b.thread(), b.threads());
}

}  // namespace mscclpp::algo

#endif  // MSCCLPP_ALGORITHM_BUILTIN_KERNEL_SUPPORT_HPP_
