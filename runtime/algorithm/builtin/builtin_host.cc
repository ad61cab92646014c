// The built-in kernels on the CPU backend: one host block each, the
// element type chosen by the launch's datatype.
#include "algorithm/builtin/builtin_entries.hpp"
#include "algorithm/builtin/collective_kernels.hpp"
#include "executor/dtypes.hpp"

namespace mscclpp::algo {
namespace {

template <template <class> class Kernel>
void typedHostBlock(const void* context, const void* args, uint32_t block) {
  switch (static_cast<DataType>(static_cast<const AlgorithmLaunchArgs*>(args)->dtype)) {
#define MSCCLPP_X(E, T, S)                               \
  case DataType::E:                                      \
    algorithmHostBlock<Kernel<T>>(context, args, block); \
    return;
    MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
  }
  // The executor checks the datatype before any launch: unreachable.
}

}  // namespace

exec::NativeHostBlockFn builtinHostBlock(BuiltinKernel kernel) {
  switch (kernel) {
    case BuiltinKernel::AllreducePackets:
      return &typedHostBlock<AllreducePackets>;
    case BuiltinKernel::AllreduceReadReduce:
      return &typedHostBlock<AllreduceReadReduce>;
    case BuiltinKernel::AllreduceSwitch:
      return &typedHostBlock<AllreduceSwitch>;
    case BuiltinKernel::AllreduceTwoLevel:
      return &typedHostBlock<AllreduceTwoLevel>;
    case BuiltinKernel::AllgatherMesh:
      return &algorithmHostBlock<AllgatherMesh>;
    case BuiltinKernel::ReduceScatterMesh:
      return &typedHostBlock<ReduceScatterMesh>;
    case BuiltinKernel::BroadcastCopy:
      return &algorithmHostBlock<BroadcastCopy>;
    case BuiltinKernel::AlltoallMesh:
      return &algorithmHostBlock<AlltoallMesh>;
  }
  return nullptr;
}

}  // namespace mscclpp::algo
