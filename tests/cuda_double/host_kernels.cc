// The host bodies of the executor's device kernels, registered with the CUDA
// double at load time; link this library whole. Each body runs the REAL
// kernel logic compiled for the host: the op interpreter's block, as the CPU
// backend's hostBlockFunction instantiates it, on one host thread per block,
// and the premulsum / avg steps of gpu_launch.cu for each thread in turn;
// the built-in native algorithms' kernels as the CPU backend runs them, and
// the user kernel of examples/custom_allgather (its library registers it).
// Kernels are matched by the demangled names nvcc registers, so the names
// below spell the same templates with the same arguments.
#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <typeinfo>

#include "algorithm/builtin/allreduce_kernels.hpp"
#include "algorithm/builtin/collective_kernels.hpp"
#include "cuda_double.h"
#include "custom_allgather.hpp"
#include "executor/cpu/host_block_runner.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/dtypes.hpp"
#include "executor/exec_layout.hpp"
#include "executor/reduce_ops.hpp"
#include "mscclpp/algorithm_device.hpp"

// Spells mscclpp::algorithmKernel<K> as the demangler does, from a class of
// the same shape, so nested template arguments come out alike.
namespace kernel_name {
template <class K>
struct algorithmKernel {};
}  // namespace kernel_name

namespace {

using namespace mscclpp;
using namespace mscclpp::exec;

template <class T>
std::string nameOf() {
  int status = 0;
  char* d = abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status);
  std::string s = status == 0 && d != nullptr ? d : typeid(T).name();
  std::free(d);
  return s;
}

struct ExecutorKernel {
  HostBlockFn fn;
};

void executorBlock(void* const* args, dim3, dim3, unsigned blockIndex, size_t, const void* user) {
  const ExecContextDevice* ctx = *static_cast<const ExecContextDevice* const*>(args[0]);
  const LaunchArgs& launch = *static_cast<const LaunchArgs*>(args[1]);
  static_cast<const ExecutorKernel*>(user)->fn(*ctx, blockIndex, launch);
}

template <class T>
void preMultiplyBlock(void* const* args, dim3 grid, dim3 block, unsigned blockIndex, size_t, const void*) {
  T* dst = *static_cast<T* const*>(args[0]);
  const T* src = *static_cast<const T* const*>(args[1]);
  const uint64_t count = *static_cast<const uint64_t*>(args[2]);
  const T scalar = *static_cast<const T*>(args[3]);
  for (uint32_t t = 0; t < block.x; ++t)
    preMultiplyElements<T>(dst, src, count, scalar, blockIndex * block.x + t, grid.x * block.x);
}

template <class T>
void divideBlock(void* const* args, dim3 grid, dim3 block, unsigned blockIndex, size_t, const void*) {
  T* data = *static_cast<T* const*>(args[0]);
  const uint64_t count = *static_cast<const uint64_t*>(args[1]);
  const uint32_t n = *static_cast<const uint32_t*>(args[2]);
  for (uint32_t t = 0; t < block.x; ++t) divideElements<T>(data, count, n, blockIndex * block.x + t, grid.x * block.x);
}

void storeCountsBlock(void* const* args, dim3, dim3, unsigned, size_t, const void*) {
  const InlineCounts& counts = *static_cast<const InlineCounts*>(args[0]);
  const uint32_t n = *static_cast<const uint32_t*>(args[1]);
  uint64_t* dst = *static_cast<uint64_t* const*>(args[2]);
  for (uint32_t i = 0; i < n; ++i) dst[i] = counts.values[i];
}

template <class T, class Op>
void registerExecutor(DataType dtype, ReduceOp op, const char* opName) {
  static ExecutorKernel user;  // one per instantiation: the template's static
  user.fn = hostBlockFunction(dtype, op);
  cudadouble::HostKernel k;
  k.body = &executorBlock;
  k.user = &user;
  k.argSizes = {sizeof(const ExecContextDevice*), sizeof(LaunchArgs), sizeof(uint32_t)};
  k.maxThreadsPerBlock = 1024;  // __launch_bounds__(1024)
  k.numRegs = 64;               // the most __launch_bounds__(1024) allows
  k.staticSharedBytes = sizeof(ThreadblockDevice);
  cudadouble::registerHostKernel("mscclpp::exec::executorKernel<" + nameOf<T>() + ", mscclpp::exec::" + opName + ">",
                                 k);
}

// A native algorithm's kernel: its block as the CPU backend runs it.
template <class K>
void nativeBlock(void* const* args, dim3, dim3, unsigned blockIndex, size_t, const void*) {
  const AlgorithmDeviceContext* ctx = *static_cast<const AlgorithmDeviceContext* const*>(args[0]);
  const AlgorithmLaunchArgs& launch = *static_cast<const AlgorithmLaunchArgs*>(args[1]);
  algorithmHostBlock<K>(ctx, &launch, blockIndex);
}

template <class K>
void registerNative() {
  cudadouble::HostKernel k;
  k.body = &nativeBlock<K>;
  k.argSizes = {sizeof(const AlgorithmDeviceContext*), sizeof(AlgorithmLaunchArgs)};
  std::string name = nameOf<kernel_name::algorithmKernel<K>>();
  const std::string prefix = "kernel_name::";
  if (name.compare(0, prefix.size(), prefix) == 0) name.replace(0, prefix.size(), "mscclpp::");
  cudadouble::registerHostKernel(name, k);
}

template <class T>
void registerType(DataType dtype) {
  registerNative<algo::AllreducePackets<T>>();
  registerNative<algo::AllreduceReadReduce<T>>();
  registerNative<algo::AllreduceSwitch<T>>();
  registerNative<algo::AllreduceTwoLevel<T>>();
  registerNative<algo::ReduceScatterMesh<T>>();
  registerExecutor<T, OpSum>(dtype, ReduceOp::Sum, "OpSum");
  registerExecutor<T, OpProd>(dtype, ReduceOp::Prod, "OpProd");
  registerExecutor<T, OpMax>(dtype, ReduceOp::Max, "OpMax");
  registerExecutor<T, OpMin>(dtype, ReduceOp::Min, "OpMin");
  cudadouble::HostKernel pre;
  pre.body = &preMultiplyBlock<T>;
  pre.argSizes = {sizeof(T*), sizeof(const T*), sizeof(uint64_t), sizeof(T)};
  cudadouble::registerHostKernel("mscclpp::exec::(anonymous namespace)::preMultiplyKernel<" + nameOf<T>() + ">", pre);
  cudadouble::HostKernel div;
  div.body = &divideBlock<T>;
  div.argSizes = {sizeof(T*), sizeof(uint64_t), sizeof(uint32_t)};
  cudadouble::registerHostKernel("mscclpp::exec::(anonymous namespace)::divideKernel<" + nameOf<T>() + ">", div);
}

struct Registration {
  Registration() {
#define MSCCLPP_X(E, T, S) registerType<T>(DataType::E);
    MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
    cudadouble::HostKernel store;
    store.body = &storeCountsBlock;
    store.argSizes = {sizeof(InlineCounts), sizeof(uint32_t), sizeof(uint64_t*)};
    cudadouble::registerHostKernel("mscclpp::exec::(anonymous namespace)::storeCountsKernel", store);
    registerNative<algo::AllgatherMesh>();
    registerNative<algo::BroadcastCopy>();
    registerNative<algo::AlltoallMesh>();
    registerNative<custom::PortAllgather>();
  }
} registration;

}  // namespace
