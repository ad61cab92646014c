// Checked CUDA runtime calls for the GPU backend's host code. A failure
// becomes Error(CudaError) naming what we did, the call and CUDA's text.
// Included only by sources compiled in CUDA builds.
#ifndef MSCCLPP_EXECUTOR_CUDA_CUDA_CHECK_HPP_
#define MSCCLPP_EXECUTOR_CUDA_CUDA_CHECK_HPP_

#include <cuda_runtime.h>

#include <string>

#include "core/enforce.hpp"

// MSCCLPP_CUDA_CHECK(cudaMalloc(&p, n), "plan %s rank %d: scratch", name, rank)
#define MSCCLPP_CUDA_CHECK(call, ...)                                                                                \
  do {                                                                                                               \
    cudaError_t mscclppErr_ = (call);                                                                                \
    if (mscclppErr_ != cudaSuccess) {                                                                                \
      (void)cudaGetLastError(); /* clear a non-sticky error so later calls do not report it again */                 \
      throw ::mscclpp::Error(::mscclpp::ErrorCode::CudaError,                                                        \
                             ::mscclpp::strFormat(__VA_ARGS__) + ": " #call ": " + cudaGetErrorString(mscclppErr_)); \
    }                                                                                                                \
  } while (0)

#endif  // MSCCLPP_EXECUTOR_CUDA_CUDA_CHECK_HPP_
