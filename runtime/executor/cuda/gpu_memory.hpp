// Owners of the CUDA resources a context holds: device memory (zeroed),
// host memory mapped into the device, a non-blocking stream, and a scoped
// current-device switch; and the driver's stream write, if the device has it.
// Destructors never throw; teardown errors are logged.
// Thread-safety: each object has one owner, who synchronises any sharing.
#ifndef MSCCLPP_EXECUTOR_CUDA_GPU_MEMORY_HPP_
#define MSCCLPP_EXECUTOR_CUDA_GPU_MEMORY_HPP_

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace mscclpp::exec {

using WriteValue64Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

// cuStreamWriteValue64 through the runtime's entry-point query, when
// `device` supports 64-bit stream memory operations; else null. The
// attribute that says so is the driver's: asked of cuDeviceGetAttribute
// (the runtime's cudaDeviceGetAttribute does not know it).
void* resolveStreamWriteValue64(int device);

class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  // cudaMalloc(bytes) (at least 1 byte) on the current device, then zero().
  // Not inside a capture.
  DeviceAllocation(size_t bytes, const std::string& what);
  ~DeviceAllocation();
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  char* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  // Zeroes it on a stream of ours and waits: zero when this returns.
  void zero(const std::string& what);

 private:
  char* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
};

class PinnedAllocation {
 public:
  PinnedAllocation() = default;
  // cudaHostAlloc(bytes, mapped), zeroed; host() and device() name the same memory.
  PinnedAllocation(size_t bytes, const std::string& what);
  ~PinnedAllocation();
  PinnedAllocation(const PinnedAllocation&) = delete;
  PinnedAllocation& operator=(const PinnedAllocation&) = delete;
  void* host() const { return host_; }
  void* device() const { return device_; }
  size_t bytes() const { return bytes_; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  size_t bytes_ = 0;
};

class OwnedStream {
 public:
  OwnedStream() = default;
  explicit OwnedStream(const std::string& what);  // cudaStreamNonBlocking
  ~OwnedStream();
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Makes `device` current for the scope, then restores the caller's: the
// current device is per host thread and belongs to the user.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CUDA_GPU_MEMORY_HPP_
