#include "executor/cuda/gpu_memory.hpp"

#include <cstring>

#include "core/cuda_driver_entry.hpp"
#include "core/logger.hpp"
#include "executor/cuda/cuda_check.hpp"
#include "transport/device_memory.hpp"

namespace mscclpp::exec {

namespace {

template <class Fn>
Fn driverFunction(const char* name) {
  return cudaDriverEntry<Fn>(name, 12000);
}

}  // namespace

void* resolveStreamWriteValue64(int device) {
  using DeviceGetFn = CUresult (*)(CUdevice*, int);
  using DeviceGetAttributeFn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  void* write = driverFunction<void*>("cuStreamWriteValue64");
  auto deviceGet = driverFunction<DeviceGetFn>("cuDeviceGet");
  auto getAttribute = driverFunction<DeviceGetAttributeFn>("cuDeviceGetAttribute");
  if (write == nullptr || deviceGet == nullptr || getAttribute == nullptr) return nullptr;
  CUdevice dev = 0;
  int supported = 0;
  if (deviceGet(&dev, device) != CUDA_SUCCESS ||
      getAttribute(&supported, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev) != CUDA_SUCCESS)
    return nullptr;
  return supported ? write : nullptr;
}

DeviceAllocation::DeviceAllocation(size_t bytes, const std::string& what) : bytes_(bytes == 0 ? 1 : bytes) {
  MSCCLPP_CUDA_CHECK(cudaGetDevice(&device_), "%s: the current device", what.c_str());
  void* p = nullptr;
  MSCCLPP_CUDA_CHECK(cudaMalloc(&p, bytes_), "%s: allocating %zu bytes of device memory", what.c_str(), bytes_);
  ptr_ = static_cast<char*>(p);
  try {
    zero(what);
  } catch (...) {
    cudaFree(p);
    ptr_ = nullptr;
    throw;
  }
}

DeviceAllocation::~DeviceAllocation() {
  if (ptr_ == nullptr) return;
  cudaError_t e = cudaFree(ptr_);
  if (e != cudaSuccess) MSCCLPP_WARN(LogExec, "cudaFree(%p) of an execution context: %s", ptr_, cudaGetErrorString(e));
}

void DeviceAllocation::zero(const std::string& what) {
  transport::zeroDeviceMemory(device_, ptr_, bytes_, what.c_str());
}

PinnedAllocation::PinnedAllocation(size_t bytes, const std::string& what) : bytes_(bytes == 0 ? 1 : bytes) {
  MSCCLPP_CUDA_CHECK(cudaHostAlloc(&host_, bytes_, cudaHostAllocMapped),
                     "%s: allocating %zu bytes of mapped host memory", what.c_str(), bytes_);
  std::memset(host_, 0, bytes_);
  cudaError_t e = cudaHostGetDevicePointer(&device_, host_, 0);
  if (e != cudaSuccess) {
    cudaFreeHost(host_);
    host_ = nullptr;
    MSCCLPP_CUDA_CHECK(e, "%s: mapping host memory for the device", what.c_str());
  }
}

PinnedAllocation::~PinnedAllocation() {
  if (host_ == nullptr) return;
  cudaError_t e = cudaFreeHost(host_);
  if (e != cudaSuccess)
    MSCCLPP_WARN(LogExec, "cudaFreeHost(%p) of an execution context: %s", host_, cudaGetErrorString(e));
}

OwnedStream::OwnedStream(const std::string& what) {
  MSCCLPP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "%s: creating a stream", what.c_str());
}

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

DeviceGuard::DeviceGuard(int device) {
  MSCCLPP_CUDA_CHECK(cudaGetDevice(&previous_), "selecting CUDA device %d", device);
  if (previous_ != device) {
    MSCCLPP_CUDA_CHECK(cudaSetDevice(device), "selecting CUDA device %d", device);
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace mscclpp::exec
