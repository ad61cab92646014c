// CUDA driver functions resolved through the runtime's entry-point query, so
// that nothing links libcuda: a machine without a driver still loads us.
#ifndef MSCCLPP_CORE_CUDA_DRIVER_ENTRY_HPP_
#define MSCCLPP_CORE_CUDA_DRIVER_ENTRY_HPP_

#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

namespace mscclpp {

// The driver function `name` with the ABI it had in CUDA `version` (12010 for
// 12.1: the driver keeps old ABIs under the same name); null when the driver
// lacks it. A failed query leaves no error behind for the next runtime call.
template <class Fn>
Fn cudaDriverEntry(const char* name, int version) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &status);
#else
  (void)version;
  cudaError_t e = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &status);
#endif
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess && status == cudaDriverEntryPointSuccess ? reinterpret_cast<Fn>(p) : nullptr;
}

}  // namespace mscclpp

#endif  // MSCCLPP_HAVE_CUDA
#endif  // MSCCLPP_CORE_CUDA_DRIVER_ENTRY_HPP_
