// The CUDA IPC Connection between GPUs of one host. A write is a
// cudaMemcpyAsync into the peer's mapped allocation, on the
// connection's own stream. A counter update is an 8-byte copy on that
// stream after them, and flush polls the stream until its deadline.
#ifndef MSCCLPP_TRANSPORT_CUDA_IPC_CONNECTION_HPP_
#define MSCCLPP_TRANSPORT_CUDA_IPC_CONNECTION_HPP_

#include <memory>

#include "core/deadline.hpp"
#include "mscclpp/connection.hpp"

namespace mscclpp::transport::cuda_ipc {

// Throws NotSupported without CUDA, and CudaError when the stream
// cannot be created. timeout bounds flush() without an argument.
std::shared_ptr<Connection> makeConnection(int localRank, int remoteRank, int device, const TimeoutSetting& timeout);

}  // namespace mscclpp::transport::cuda_ipc

#endif  // MSCCLPP_TRANSPORT_CUDA_IPC_CONNECTION_HPP_
