// The host shared-memory transport's Driver (transport.hpp): same-host ranks map each other's
// allocSharedHost memory (memory.hpp) and connect with HostShmConnection (connection.hpp).
#ifndef MSCCLPP_TRANSPORT_HOST_SHM_DRIVER_HPP_
#define MSCCLPP_TRANSPORT_HOST_SHM_DRIVER_HPP_

#include "transport/transport.hpp"

namespace mscclpp::transport::host_shm {

const Driver& driver();

}  // namespace mscclpp::transport::host_shm

#endif  // MSCCLPP_TRANSPORT_HOST_SHM_DRIVER_HPP_
