#include "transport/cuda_ipc/connection.hpp"

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp::transport::cuda_ipc {

#if MSCCLPP_HAVE_CUDA

namespace {

class CudaIpcConnection : public Connection {
 public:
  CudaIpcConnection(int localRank, int remoteRank, int device, const TimeoutSetting& timeout)
      : Connection(localRank, remoteRank), device_(device), timeout_(timeout) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~CudaIpcConnection() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
             uint64_t size) override {
    checkWrite(dst, dstOffset, src, srcOffset, size);
    MSCCLPP_ENFORCE(dst.data() != nullptr, ErrorCode::InvalidArgument,
                    "%s: write: rank %d's memory is not mapped here (register it with Transport::CudaIpc)",
                    describe().c_str(), dst.rank());
    if (size == 0) return;
    check(cudaMemcpyAsync(static_cast<char*>(dst.data()) + dstOffset, static_cast<const char*>(src.data()) + srcOffset,
                          size, cudaMemcpyDefault, stream_),
          "write: cudaMemcpyAsync");
  }

  void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) override {
    checkUpdate(dst, dstOffset);
    MSCCLPP_ENFORCE(dst.data() != nullptr, ErrorCode::InvalidArgument,
                    "%s: updateAndSync: rank %d's memory is not mapped here", describe().c_str(), dst.rank());
    *src = newValue;
    // Stream order puts the update after the writes
    // before it; src stays valid until flush.
    check(cudaMemcpyAsync(static_cast<char*>(dst.data()) + dstOffset, src, sizeof(uint64_t), cudaMemcpyHostToDevice,
                          stream_),
          "updateAndSync: cudaMemcpyAsync");
  }

  void flush(int64_t timeoutUsec) override {
    Deadline deadline = timeoutUsec < 0 ? timeout_.start() : Deadline(timeoutUsec * 1e-6, "the flush's timeout");
    cudaError_t last = cudaSuccess;
    waitUntil(
        [&] {
          last = cudaStreamQuery(stream_);
          return last != cudaErrorNotReady;
        },
        deadline, describe() + ": flush (waiting for the copy stream)");
    check(last, "flush: cudaStreamQuery");
  }

  Transport transport() const override { return Transport::CudaIpc; }
  Transport remoteTransport() const override { return Transport::CudaIpc; }

 private:
  void check(cudaError_t e, const char* what) const {
    MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: %s: %s", describe().c_str(), what,
                    cudaGetErrorString(e));
  }
  int device_;
  TimeoutSetting timeout_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::shared_ptr<Connection> makeConnection(int localRank, int remoteRank, int device, const TimeoutSetting& timeout) {
  MSCCLPP_ENFORCE(device >= 0, ErrorCode::InvalidArgument,
                  "rank %d -> rank %d over IPC: this communicator has no CUDA device", localRank, remoteRank);
  return std::make_shared<CudaIpcConnection>(localRank, remoteRank, device, timeout);
}

#else

std::shared_ptr<Connection> makeConnection(int localRank, int remoteRank, int, const TimeoutSetting&) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "rank %d -> rank %d over IPC: this build of MSCCL++ has no CUDA support",
                localRank, remoteRank);
}

#endif

}  // namespace mscclpp::transport::cuda_ipc
