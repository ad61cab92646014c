// The NVLS multicast binding behind a SwitchChannel on sm_90+ GPUs (CUDA >= 12.1): a multicast
// object created by the group's first member, shared with the others as a POSIX file descriptor
// (passed over a Unix socket with SCM_RIGHTS), every member's device added, every member's buffer
// bound, and the multicast range mapped here. The driver API is reached through the runtime's
// entry-point query, so nothing links libcuda directly.
//
// Capability check first: the build (CUDA >= 12.1), the driver entry points, the device attribute
// CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, and a buffer allocated with cuMemCreate (cudaMalloc
// memory cannot be bound) whose offset and size are multiples of the multicast granularity. The
// members agree (every one must be capable); otherwise tryCreate returns nullptr and logs why at
// INFO, and the channel uses the members' buffers only.
#ifndef MSCCLPP_CHANNEL_NVLS_BINDING_HPP_
#define MSCCLPP_CHANNEL_NVLS_BINDING_HPP_

#include <memory>
#include <vector>

#include "mscclpp/communicator.hpp"

namespace mscclpp::detail {

class NvlsBinding {
 public:
  // Collective over `ranks` (same arguments on every member).
  static std::shared_ptr<NvlsBinding> tryCreate(Communicator& comm, const std::vector<int>& ranks, int myIndex,
                                                size_t bytes, int tag, void* buffer = nullptr);
  virtual ~NvlsBinding() = default;
  virtual void* multicastPointer() const = 0;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_CHANNEL_NVLS_BINDING_HPP_
