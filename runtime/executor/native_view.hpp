// What a native kernel receives (mscclpp::AlgorithmDeviceContext), made
// from a built context image: the channel to each peer indexed by rank,
// the peers' mapped buffers and proxy memory ids, and the launch state the
// image owns. The CPU backend hands the host copy to its blocks; the CUDA
// backend packs it, relocated, next to its device image.
// Thread-safety: immutable after construction.
#ifndef MSCCLPP_EXECUTOR_NATIVE_VIEW_HPP_
#define MSCCLPP_EXECUTOR_NATIVE_VIEW_HPP_

#include <cstdint>
#include <vector>

#include "executor/context_image.hpp"
#include "executor/native_program.hpp"
#include "mscclpp/algorithm_device.hpp"

namespace mscclpp::exec {

class NativeView {
 public:
  // dev: the image's root as the kernel sees it (for the GPU the relocated
  // one, its pointers device addresses); memoryHandles and portHandles: the
  // handles of dev's arrays, readable here.
  NativeView(const NativeProgram& program, const ContextImage& image, const ExecContextDevice& dev,
             const MemoryChannelDeviceHandle* memoryHandles, const PortChannelDeviceHandle* portHandles);

  // The host copy: its arrays are this object's.
  const AlgorithmDeviceContext& context() const { return ctx_; }

  // The bytes of the view relocated to `base`, and their size for nRanks.
  static uint64_t packedBytes(int nRanks);
  std::vector<char> pack(uint64_t base) const;

 private:
  AlgorithmDeviceContext ctx_{};
  std::vector<MemoryChannelDeviceHandle> memory_;
  std::vector<PortChannelDeviceHandle> port_;
  std::vector<AlgorithmPeer> peers_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_NATIVE_VIEW_HPP_
