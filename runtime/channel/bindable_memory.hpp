// Device memory a switch channel can bind to NVLS multicast, as NCCL's
// ncclMemAlloc gives it: a cuMemCreate allocation with a POSIX file
// descriptor handle type (a shareable multicast object binds only
// shareable memory), its size rounded to the multicast granularity, mapped
// read-write for its device and every device with peer access to it.
// cudaMalloc memory can never be bound. Thread-safety: any thread.
#ifndef MSCCLPP_CHANNEL_BINDABLE_MEMORY_HPP_
#define MSCCLPP_CHANNEL_BINDABLE_MEMORY_HPP_

#include <cstddef>
#include <string>

namespace mscclpp::detail {

// At least `bytes` of such memory on `device`; null, with *why, when the
// device offers no multicast (or this build has no CUDA 12.1), so the
// caller allocates as it otherwise would. Throws Error(CudaError) naming
// the driver call that failed.
void* allocateBindable(size_t bytes, int device, std::string* why);
// Frees what allocateBindable returned; false, doing nothing, for any other pointer.
bool releaseBindable(void* ptr);

}  // namespace mscclpp::detail

#endif  // MSCCLPP_CHANNEL_BINDABLE_MEMORY_HPP_
