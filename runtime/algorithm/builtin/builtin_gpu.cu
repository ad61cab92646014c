// The built-in kernels on the CUDA backend: one kernel per datatype of the
// meson option gpu_types for those that reduce, one for the others.
#include <cuda_runtime.h>

#include "algorithm/builtin/builtin_entries.hpp"
#include "algorithm/builtin/collective_kernels.hpp"
#include "executor/dtypes.hpp"
#include "executor_gpu_types.h"  // generated (runtime/executor/meson.build): MSCCLPP_FOR_EACH_GPU_TYPE

namespace mscclpp::algo {
namespace {

#define MSCCLPP_X(E, T, S) \
  using GpuType_##S = T;   \
  [[maybe_unused]] constexpr DataType kGpuDtype_##S = DataType::E;
MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X

DataType dtypeOfArgs(const void* args) {
  return static_cast<DataType>(static_cast<const AlgorithmLaunchArgs*>(args)->dtype);
}

template <template <class> class Kernel>
int typedLaunch(const void* context, const void* args, uint32_t nBlocks, uint32_t threads, void* stream) {
  switch (dtypeOfArgs(args)) {
#define MSCCLPP_GPU_TYPE(S) \
  case kGpuDtype_##S:       \
    return algorithmGpuLaunch<Kernel<GpuType_##S>>(context, args, nBlocks, threads, stream);
    MSCCLPP_FOR_EACH_GPU_TYPE
#undef MSCCLPP_GPU_TYPE
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

template <template <class> class Kernel>
int typedQuery(int dtype, int threads, int* maxThreads, int* blocksPerSm) {
  switch (static_cast<DataType>(dtype)) {
#define MSCCLPP_GPU_TYPE(S) \
  case kGpuDtype_##S:       \
    return algorithmGpuQuery<Kernel<GpuType_##S>>(threads, maxThreads, blocksPerSm);
    MSCCLPP_FOR_EACH_GPU_TYPE
#undef MSCCLPP_GPU_TYPE
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

template <class Kernel>
int untypedQuery(int, int threads, int* maxThreads, int* blocksPerSm) {
  return algorithmGpuQuery<Kernel>(threads, maxThreads, blocksPerSm);
}

uint32_t compiledDtypes() {
  uint32_t mask = 0;
#define MSCCLPP_GPU_TYPE(S) mask |= 1u << static_cast<int>(kGpuDtype_##S);
  MSCCLPP_FOR_EACH_GPU_TYPE
#undef MSCCLPP_GPU_TYPE
  return mask;
}

template <template <class> class Kernel>
BuiltinGpuEntry typed() {
  return BuiltinGpuEntry{&typedLaunch<Kernel>, &typedQuery<Kernel>, compiledDtypes()};
}

template <class Kernel>
BuiltinGpuEntry untyped() {
  return BuiltinGpuEntry{&algorithmGpuLaunch<Kernel>, &untypedQuery<Kernel>, (1u << kNumDataTypes) - 1};
}

}  // namespace

BuiltinGpuEntry builtinGpuEntry(BuiltinKernel kernel) {
  switch (kernel) {
    case BuiltinKernel::AllreducePackets:
      return typed<AllreducePackets>();
    case BuiltinKernel::AllreduceReadReduce:
      return typed<AllreduceReadReduce>();
    case BuiltinKernel::AllreduceSwitch:
      return typed<AllreduceSwitch>();
    case BuiltinKernel::AllreduceTwoLevel:
      return typed<AllreduceTwoLevel>();
    case BuiltinKernel::AllgatherMesh:
      return untyped<AllgatherMesh>();
    case BuiltinKernel::ReduceScatterMesh:
      return typed<ReduceScatterMesh>();
    case BuiltinKernel::BroadcastCopy:
      return untyped<BroadcastCopy>();
    case BuiltinKernel::AlltoallMesh:
      return untyped<AlltoallMesh>();
  }
  return BuiltinGpuEntry{};
}

}  // namespace mscclpp::algo
