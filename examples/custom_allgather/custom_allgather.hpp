// MSCCL++'s customized-collective example as a native algorithm: an
// all-gather over port channels, written on the public device API. Every
// rank tells each peer it entered the call (its output may be written),
// puts its input into slot `rank` of each peer's output with a signal,
// waits for every peer's, then flushes so its input may be reused. One
// block; on a GPU one thread per peer, on the CPU backend one thread.
#ifndef MSCCLPP_EXAMPLES_CUSTOM_ALLGATHER_CUSTOM_ALLGATHER_HPP_
#define MSCCLPP_EXAMPLES_CUSTOM_ALLGATHER_CUSTOM_ALLGATHER_HPP_

#include "mscclpp/algorithm.hpp"

namespace custom {

enum Step : uint32_t { kEnter, kPut, kWait, kFlush };

struct PortAllgather {
  MSCCLPP_HOST_DEVICE void operator()(mscclpp::AlgorithmBlock& b) const {
    const mscclpp::AlgorithmDeviceContext& c = b.context();
    const uint64_t bytes = c.inputBytes;
    const int first = static_cast<int>(b.thread()), stride = static_cast<int>(b.threads());
    b.step(kEnter);
    for (int p = first; p < c.nRanks; p += stride)
      if (p != c.rank) b.portSignal(p);
    for (int p = first; p < c.nRanks; p += stride)
      if (p != c.rank) b.portWait(p);
    b.step(kPut);
    for (int p = first; p < c.nRanks; p += stride)
      if (p != c.rank) b.put(p, c.peers[p].outputId, c.rank * bytes, mscclpp::kInputMemoryId, 0, bytes, true);
    // Our own slot: in place our input is that slot already.
    char* mine = c.output + c.rank * bytes;
    if (mine != c.input) mscclpp::copy(mine, c.input, bytes, b.thread(), b.threads());
    b.step(kWait);
    for (int p = first; p < c.nRanks; p += stride)
      if (p != c.rank) b.portWait(p);
    b.step(kFlush);
    // One FIFO serves every port channel of the rank: one flush covers all puts.
    if (b.thread() == 0 && c.nRanks > 1) b.portFlush(c.rank == 0 ? 1 : 0);
  }
};

// The description the library registers.
inline mscclpp::NativeAlgorithm describe() {
  mscclpp::NativeAlgorithm a("custom_allgather", "allgather");
  a.resources(MSCCLPP_ALGORITHM_PORT_CHANNELS | MSCCLPP_ALGORITHM_PEER_OUTPUT | MSCCLPP_ALGORITHM_RUNS_IN_PLACE)
      .blocks(1, 1, 256)
      .steps({"enter: signal every peer, wait for each", "put into every peer's output", "wait for every peer's put",
              "flush"})
      .kernel<PortAllgather>();
  return a;
}

}  // namespace custom

#endif  // MSCCLPP_EXAMPLES_CUSTOM_ALLGATHER_CUSTOM_ALLGATHER_HPP_
