// The CUDA IPC Connection (same-host GPUs): writes are cudaMemcpyAsync into the peer's mapped
// allocation on a stream of this connection (the proxy stream), counter updates a 8-byte copy on
// the same stream after them, flush waits for the stream (polling, with a deadline).
#ifndef MSCCLPP_TRANSPORT_CUDA_IPC_CONNECTION_HPP_
#define MSCCLPP_TRANSPORT_CUDA_IPC_CONNECTION_HPP_

#include <memory>

#include "core/deadline.hpp"
#include "mscclpp/connection.hpp"

namespace mscclpp::transport::cuda_ipc {

// Throws NotSupported in builds without CUDA, CudaError when the stream cannot be created. timeout bounds
// flush() without an argument.
std::shared_ptr<Connection> makeConnection(int localRank, int remoteRank, int device, const TimeoutSetting& timeout);

}  // namespace mscclpp::transport::cuda_ipc

#endif  // MSCCLPP_TRANSPORT_CUDA_IPC_CONNECTION_HPP_
