// The built-in kernels' entry points: the host blocks, compiled by the host
// compiler for every datatype (builtin_host.cc), and the GPU launchers for
// the datatypes of the meson option gpu_types (builtin_gpu.cu; a stub in
// builds without CUDA).
#ifndef MSCCLPP_ALGORITHM_BUILTIN_BUILTIN_ENTRIES_HPP_
#define MSCCLPP_ALGORITHM_BUILTIN_BUILTIN_ENTRIES_HPP_

#include <cstdint>

#include "executor/native_program.hpp"

namespace mscclpp::algo {

enum class BuiltinKernel {
  AllreducePackets,
  AllreduceReadReduce,
  AllreduceSwitch,
  AllreduceTwoLevel,
  AllgatherMesh,
  ReduceScatterMesh,
  BroadcastCopy,
  AlltoallMesh,
};

exec::NativeHostBlockFn builtinHostBlock(BuiltinKernel kernel);

struct BuiltinGpuEntry {
  exec::NativeGpuLaunchFn launch = nullptr;  // null: no GPU code in this build
  exec::NativeGpuQueryFn query = nullptr;
  uint32_t dtypes = 0;  // bit DataType: the types it has code for
};
BuiltinGpuEntry builtinGpuEntry(BuiltinKernel kernel);

}  // namespace mscclpp::algo

#endif  // MSCCLPP_ALGORITHM_BUILTIN_BUILTIN_ENTRIES_HPP_
