// Dispatch from datatype and op to the kernels this build compiled
// (meson option gpu_types), and the elementwise avg and premulsum steps.
#include "executor/cuda/gpu_launch.hpp"

#include <cuda_runtime.h>

#include <cstring>

#include "core/enforce.hpp"
#include "executor/dtypes.hpp"
#include "executor/reduce_ops.hpp"
#include "executor_gpu_types.h"  // generated (runtime/executor/meson.build): MSCCLPP_FOR_EACH_GPU_TYPE

namespace mscclpp::exec {

// The kernels of the compiled types. The references must be strong: a weak
// one does not make the linker take an object out of a static library.
#define MSCCLPP_GPU_TYPE(S)                                       \
  void launchExecutorKernel_##S(ReduceOp op, const GpuLaunch& l); \
  GpuKernelQuery queryExecutorKernel_##S(ReduceOp op, int threads, uint32_t sharedBytes);
MSCCLPP_FOR_EACH_GPU_TYPE
#undef MSCCLPP_GPU_TYPE

namespace {

using LaunchFn = void (*)(ReduceOp, const GpuLaunch&);
using QueryFn = GpuKernelQuery (*)(ReduceOp, int, uint32_t);

struct Entry {
  LaunchFn launch;
  QueryFn query;
};

// The datatype of each short name, for the case labels below.
#define MSCCLPP_X(E, T, S) [[maybe_unused]] constexpr DataType kDataType_##S = DataType::E;
MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X

Entry entryOf(DataType dtype) {
  switch (dtype) {
#define MSCCLPP_GPU_TYPE(S) \
  case kDataType_##S:       \
    return Entry{&launchExecutorKernel_##S, &queryExecutorKernel_##S};
    MSCCLPP_FOR_EACH_GPU_TYPE
#undef MSCCLPP_GPU_TYPE
    default:
      break;
  }
  return Entry{nullptr, nullptr};
}

Entry requireEntry(DataType dtype) {
  if (Refusal r = gpuDtypeRefusal(dtype)) throw Error(ErrorCode::NotSupported, *r);
  return entryOf(dtype);
}

void checkLaunch(const char* what, uint64_t bytes) {
  cudaError_t err = cudaGetLastError();
  MSCCLPP_ENFORCE(err == cudaSuccess, ErrorCode::CudaError, "launching %s over %llu bytes: %s", what,
                  static_cast<unsigned long long>(bytes), cudaGetErrorString(err));
}

// Grid of an elementwise pass: 256 threads per block, a grid-stride loop, at most 1024 blocks.
dim3 gridFor(uint64_t count) {
  uint64_t blocks = (count + 255) / 256;
  return dim3(static_cast<unsigned>(blocks == 0 ? 1 : (blocks > 1024 ? 1024 : blocks)));
}

template <class T>
__global__ void preMultiplyKernel(T* dst, const T* src, uint64_t count, T scalar) {
  preMultiplyElements<T>(dst, src, count, scalar, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

template <class T>
__global__ void divideKernel(T* data, uint64_t count, uint32_t n) {
  divideElements<T>(data, count, n, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

__global__ void storeCountsKernel(InlineCounts counts, uint32_t n, uint64_t* dst) {
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = counts.values[i];
}

}  // namespace

bool cudaDeviceVisible() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // "no driver" and friends count as no device
    return false;
  }
  return n > 0;
}

bool gpuHasDtype(DataType dtype) { return entryOf(dtype).launch != nullptr; }

Refusal gpuDtypeRefusal(DataType dtype) {
  if (gpuHasDtype(dtype)) return std::nullopt;
  return strFormat("this build has no GPU code for %s (meson option gpu_types)",
                   dataTypeName(dtype) ? dataTypeName(dtype) : "?");
}

void launchExecutorKernel(DataType dtype, ReduceOp op, const GpuLaunch& launch) {
  requireEntry(dtype).launch(op, launch);
}

GpuKernelQuery queryExecutorKernel(DataType dtype, ReduceOp op, int threadsPerBlock, uint32_t sharedBytes) {
  return requireEntry(dtype).query(op, threadsPerBlock, sharedBytes);
}

namespace {

// A kernel is loaded at its first use, which a query of its attributes is
// (Programming Guide, "Lazy Loading").
void loadKernel(const void* kernel, const char* what) {
  cudaFuncAttributes attr{};
  cudaError_t err = cudaFuncGetAttributes(&attr, kernel);
  MSCCLPP_ENFORCE(err == cudaSuccess, ErrorCode::CudaError, "loading %s: %s", what, cudaGetErrorString(err));
}

void loadDtypeKernels(DataType dtype) {
  const Entry entry = entryOf(dtype);
  for (int op = 0; entry.query != nullptr && op < kNumNativeOps; ++op) entry.query(static_cast<ReduceOp>(op), 32, 0);
  dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto tag, auto) {
    using T = typename decltype(tag)::type;
    loadKernel(reinterpret_cast<const void*>(&preMultiplyKernel<T>), "the premulsum pre-scale kernel");
    loadKernel(reinterpret_cast<const void*>(&divideKernel<T>), "the avg post-divide kernel");
  });
}

}  // namespace

void loadGpuKernels() {
#define MSCCLPP_X(E, T, S) loadDtypeKernels(DataType::E);
  MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
  loadKernel(reinterpret_cast<const void*>(&storeCountsKernel), "the count matrix's store kernel");
}

void launchPreMultiply(DataType dtype, void* dst, const void* src, uint64_t bytes, const void* scalar, void* stream) {
  MSCCLPP_ENFORCE(scalar != nullptr, ErrorCode::InvalidArgument, "premulsum: no scalar");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  bool known = dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto tag, auto) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, scalar, sizeof(T));
    const uint64_t count = bytes / sizeof(T);
    if (count == 0) return;
    preMultiplyKernel<T><<<gridFor(count), 256, 0, s>>>(static_cast<T*>(dst), static_cast<const T*>(src), count, v);
    checkLaunch("the premulsum pre-scale kernel", bytes);
  });
  MSCCLPP_ENFORCE(known, ErrorCode::InvalidArgument, "premulsum: datatype %d is not valid", static_cast<int>(dtype));
}

void launchDivide(DataType dtype, void* data, uint64_t bytes, uint32_t n, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  bool known = dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto tag, auto) {
    using T = typename decltype(tag)::type;
    const uint64_t count = bytes / sizeof(T);
    if (count == 0) return;
    divideKernel<T><<<gridFor(count), 256, 0, s>>>(static_cast<T*>(data), count, n);
    checkLaunch("the avg post-divide kernel", bytes);
  });
  MSCCLPP_ENFORCE(known, ErrorCode::InvalidArgument, "avg: datatype %d is not valid", static_cast<int>(dtype));
}

void launchStoreCounts(const uint64_t* counts, uint32_t n, uint64_t* dst, void* stream) {
  MSCCLPP_ENFORCE(n <= kInlineCounts, ErrorCode::InternalError, "%u counts exceed the %u a launch passes", n,
                  kInlineCounts);
  InlineCounts c;
  std::memcpy(c.values, counts, n * sizeof(uint64_t));
  storeCountsKernel<<<1, 64, 0, static_cast<cudaStream_t>(stream)>>>(c, n, dst);
  checkLaunch("the count matrix's store kernel", n * sizeof(uint64_t));
}

}  // namespace mscclpp::exec
