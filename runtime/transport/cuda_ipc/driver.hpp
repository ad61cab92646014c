// The CUDA IPC transport's Driver (transport.hpp): same-host GPUs map each other's device memory
// through IPC handles (memory.hpp) and copy with cudaMemcpyAsync (connection.hpp). Builds without
// CUDA keep the driver, which refuses with NotSupported.
#ifndef MSCCLPP_TRANSPORT_CUDA_IPC_DRIVER_HPP_
#define MSCCLPP_TRANSPORT_CUDA_IPC_DRIVER_HPP_

#include "transport/transport.hpp"

namespace mscclpp::transport::cuda_ipc {

const Driver& driver();

}  // namespace mscclpp::transport::cuda_ipc

#endif  // MSCCLPP_TRANSPORT_CUDA_IPC_DRIVER_HPP_
