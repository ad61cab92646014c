// The shared-memory Connection within one host. The peer's
// memory is mapped here, so a write is a memcpy and a
// counter update a release store. Both complete before the
// call returns, so flush only orders, with a fence.
#ifndef MSCCLPP_TRANSPORT_HOST_SHM_CONNECTION_HPP_
#define MSCCLPP_TRANSPORT_HOST_SHM_CONNECTION_HPP_

#include "mscclpp/connection.hpp"

namespace mscclpp::transport::host_shm {

class HostShmConnection : public Connection {
 public:
  HostShmConnection(int localRank, int remoteRank) : Connection(localRank, remoteRank) {}

  void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
             uint64_t size) override;
  void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) override;
  void flush(int64_t timeoutUsec = -1) override;
  Transport transport() const override { return Transport::HostShm; }
  Transport remoteTransport() const override { return Transport::HostShm; }

 private:
  char* mapped(const RegisteredMemory& dst, const char* op) const;
};

}  // namespace mscclpp::transport::host_shm

#endif  // MSCCLPP_TRANSPORT_HOST_SHM_CONNECTION_HPP_
