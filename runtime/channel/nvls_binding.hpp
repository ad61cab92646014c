// The NVLS multicast binding behind a SwitchChannel on sm_90+ GPUs
// with CUDA 12.1 or later. The group's first member creates a
// multicast object and shares it as a file descriptor over a Unix
// socket; every member adds its device and binds its buffer, and
// the multicast range is mapped here. The driver API comes through
// the runtime's entry-point query, so nothing links libcuda.
// Every member must pass the capability check (docs/runtime.md,
// "Channels"), on a GPU of its own; every step after it ends in an
// exchange of outcomes. Any failure anywhere: every member's tryCreate
// returns null, logs why at INFO, and the channel uses the members' buffers.
#ifndef MSCCLPP_CHANNEL_NVLS_BINDING_HPP_
#define MSCCLPP_CHANNEL_NVLS_BINDING_HPP_

#include <memory>
#include <string>
#include <vector>

#include "mscclpp/communicator.hpp"

namespace mscclpp::detail {

class NvlsBinding {
 public:
  // Collective over `ranks`, with the same arguments on every member.
  // Exchanges on the bootstrap namespace "mscclpp.nvls" with tags tag to tag + 4.
  static std::shared_ptr<NvlsBinding> tryCreate(Communicator& comm, const std::vector<int>& ranks, int myIndex,
                                                size_t bytes, int tag, void* buffer = nullptr);
  // Why this process's buffer of `bytes` on `device` cannot join a group
  // of `members`, or "" when it can. Local: no member is asked.
  static std::string incapability(int device, const void* buffer, size_t bytes, size_t members);
  virtual ~NvlsBinding() = default;
  virtual void* multicastPointer() const = 0;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_CHANNEL_NVLS_BINDING_HPP_
