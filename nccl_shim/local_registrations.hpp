// Buffers a communicator's user registered (ncclCommRegister) or made windows of (ncclCommWindowRegister) while
// the communicator has no real-NCCL twin. With a twin, the real NCCL's own handles are returned instead (device
// code dereferences window handles, so they must be the real ones); these records are what ours look like.
// Our plans need no registration (the executor registers and caches buffers itself), so a record only has to
// make the matching deregistration valid.
#ifndef MSCCLPP_NCCL_SHIM_LOCAL_REGISTRATIONS_HPP_
#define MSCCLPP_NCCL_SHIM_LOCAL_REGISTRATIONS_HPP_

#include <cstddef>
#include <memory>
#include <vector>

namespace mscclpp::shim {

struct LocalRegistration {
  void* buff = nullptr;
  size_t size = 0;
  bool window = false;
  int winFlags = 0;
};

class LocalRegistrations {
 public:
  LocalRegistration* add(void* buff, size_t size, bool window, int winFlags);
  // True when handle is one of ours of the given kind (and removes it).
  bool remove(const void* handle, bool window);
  bool contains(const void* handle) const;

 private:
  std::vector<std::unique_ptr<LocalRegistration>> records_;
};

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_LOCAL_REGISTRATIONS_HPP_
