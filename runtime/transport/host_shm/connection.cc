#include "transport/host_shm/connection.hpp"

#include <atomic>
#include <cstring>

#include "core/enforce.hpp"

namespace mscclpp::transport::host_shm {

char* HostShmConnection::mapped(const RegisteredMemory& dst, const char* op) const {
  MSCCLPP_ENFORCE(dst.data() != nullptr && !dst.isDeviceMemory(), ErrorCode::InvalidArgument,
                  "%s: %s: rank %d's destination memory is not mapped in this process (register it with "
                  "Transport::HostShm from allocSharedHost memory and import it on this host)",
                  describe().c_str(), op, dst.rank());
  return static_cast<char*>(dst.data());
}

void HostShmConnection::write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
                              uint64_t size) {
  checkWrite(dst, dstOffset, src, srcOffset, size);
  MSCCLPP_ENFORCE(!src.isDeviceMemory(), ErrorCode::InvalidArgument,
                  "%s: write: the source is device memory; use a CUDA IPC connection", describe().c_str());
  char* to = mapped(dst, "write");
  if (size) std::memcpy(to + dstOffset, static_cast<const char*>(src.data()) + srcOffset, size);
}

void HostShmConnection::updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) {
  checkUpdate(dst, dstOffset);
  char* to = mapped(dst, "updateAndSync");
  *src = newValue;
  // Release: this thread's earlier writes are visible to a peer that acquires it.
  __atomic_store_n(reinterpret_cast<uint64_t*>(to + dstOffset), newValue, __ATOMIC_RELEASE);
}

void HostShmConnection::flush(int64_t) {
  // Writes completed synchronously; the fence orders
  // them before whatever the caller does next.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace mscclpp::transport::host_shm
