// The driver's virtual memory management and multicast API in the CUDA double
// (vmm.cc): the entry points cudaGetDriverEntryPoint hands out, and what
// stats() reports of them.
#ifndef CUDA_DOUBLE_VMM_HPP_
#define CUDA_DOUBLE_VMM_HPP_

#include <cuda.h>

#include <cstdint>
#include <map>
#include <string>

namespace cudadouble {

// cuMemCreate ... cuMulticastUnbind by name.
const std::map<std::string, void*>& vmmEntryPoints();
// Physical allocations and multicast objects not yet released.
uint64_t vmmLiveHandles();
// Successful cuMulticastBindMem calls in this process.
uint64_t multicastBinds();

}  // namespace cudadouble

#endif  // CUDA_DOUBLE_VMM_HPP_
