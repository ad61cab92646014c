// The GPU entry of the op interpreter: one CUDA block per plan threadblock,
// all its threads cooperating on each op. A block's ops, references and ids
// are copied to dynamic shared memory when they fit, else read from global
// memory, so a plan's size has no fixed limit.
#ifndef MSCCLPP_EXECUTOR_CUDA_EXECUTOR_KERNEL_CUH_
#define MSCCLPP_EXECUTOR_CUDA_EXECUTOR_KERNEL_CUH_

#include "executor/op_interpreter.hpp"

namespace mscclpp::exec {

// Copies n bytes (a multiple of 16, 16-aligned on both sides) with the whole block.
__device__ __forceinline__ void blockCopy16(void* dst, const void* src, size_t n) {
  Vec16* d = static_cast<Vec16*>(dst);
  const Vec16* s = static_cast<const Vec16*>(src);
  for (size_t i = threadIdx.x; i < n / 16; i += blockDim.x) d[i] = s[i];
}

__device__ __forceinline__ size_t roundUp16(size_t n) { return (n + 15) / 16 * 16; }

// The block's record, its op list moved into shared memory when it fits.
// Out of line, so its registers are free again for the op loop.
static __device__ __noinline__ void stageBlock(const ExecContextDevice* ctx, uint32_t sharedBytes, char* smem,
                                               ThreadblockDevice* tbOut) {
  ThreadblockDevice& tb = *tbOut;
  const ThreadblockDevice& g = ctx->blocks[blockIdx.x];
  const size_t opsBytes = roundUp16(g.nOps * sizeof(plan::Op));
  const size_t refsBytes = roundUp16(g.nRefs * sizeof(ResolvedRef));
  const size_t idsBytes = roundUp16(g.nIds * sizeof(uint32_t));
  // The host 16-aligns every array it uploads and pads it to a multiple of 16 bytes.
  const bool fits = opsBytes + refsBytes + idsBytes <= sharedBytes;
  if (threadIdx.x == 0) {
    tb = g;
    if (fits) {
      tb.ops = reinterpret_cast<const plan::Op*>(smem);
      tb.refs = reinterpret_cast<const ResolvedRef*>(smem + opsBytes);
      tb.ids = reinterpret_cast<const uint32_t*>(smem + opsBytes + refsBytes);
    }
  }
  if (fits) {
    blockCopy16(smem, g.ops, opsBytes);
    blockCopy16(smem + opsBytes, g.refs, refsBytes);
    blockCopy16(smem + opsBytes + refsBytes, g.ids, idsBytes);
  }
}

template <class T, class Op>
__global__ void __launch_bounds__(1024)
    executorKernel(const ExecContextDevice* ctx, LaunchArgs args, uint32_t sharedBytes) {
  extern __shared__ __align__(16) char smem[];
  __shared__ ThreadblockDevice tb;
  stageBlock(ctx, sharedBytes, smem, &tb);
  __syncthreads();
  BlockInterpreter<T, Op> interpreter(*ctx, tb, blockIdx.x, threadIdx.x, blockDim.x, args);
  interpreter.run();
}

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_EXECUTOR_KERNEL_CUH_
