#include "transport/device_memory.hpp"

#include "core/enforce.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#endif

namespace mscclpp::transport {

#if MSCCLPP_HAVE_CUDA

bool isDevicePointer(const void* ptr) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice;
}

namespace {

// Makes `device` current for the scope, then restores the caller's: the
// current device is per host thread and belongs to the caller.
class CurrentDevice {
 public:
  CurrentDevice(int device, const char* what) {
    cudaError_t e = cudaGetDevice(&previous_);
    if (e == cudaSuccess && previous_ != device) {
      e = cudaSetDevice(device);
      switched_ = e == cudaSuccess;
    }
    MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: selecting CUDA device %d: %s", what, device,
                    cudaGetErrorString(e));
  }
  ~CurrentDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// The device of a CUDA allocation; the current one for other memory.
int deviceOf(const void* ptr) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) == cudaSuccess && attr.type != cudaMemoryTypeUnregistered &&
      attr.device >= 0)
    return attr.device;
  (void)cudaGetLastError();
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) (void)cudaGetLastError();
  return d;
}

// The process's non-blocking stream on `device`, created at its first use.
cudaStream_t streamOf(int device, const char* what) {
  static std::mutex mutex;
  static std::map<int, cudaStream_t>* streams = new std::map<int, cudaStream_t>();  // kept for the process
  std::lock_guard<std::mutex> lock(mutex);
  auto it = streams->find(device);
  if (it != streams->end()) return it->second;
  CurrentDevice current(device, what);
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: creating the runtime's stream on CUDA device %d: %s",
                  what, device, cudaGetErrorString(e));
  (*streams)[device] = s;
  return s;
}

// Runs `enqueue` on the device's runtime stream and waits for the stream.
template <class F>
void runAndWait(int device, const char* what, const char* call, F enqueue) {
  CurrentDevice current(device, what);
  cudaStream_t s = streamOf(device, what);
  cudaError_t e = enqueue(s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) (void)cudaGetLastError();
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: %s on CUDA device %d: %s", what, call, device,
                  cudaGetErrorString(e));
}

}  // namespace

void copyHostToDevice(void* dst, const void* src, size_t bytes, const char* what) {
  if (bytes == 0) return;
  runAndWait(deviceOf(dst), what, "copy host->device",
             [&](cudaStream_t s) { return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s); });
}

void copyDeviceToHost(void* dst, const void* src, size_t bytes, const char* what) {
  if (bytes == 0) return;
  runAndWait(deviceOf(src), what, "copy device->host",
             [&](cudaStream_t s) { return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s); });
}

void zeroDeviceMemory(int device, void* ptr, size_t bytes, const char* what) {
  if (bytes == 0) return;
  runAndWait(device, what, "zeroing device memory", [&](cudaStream_t s) { return cudaMemsetAsync(ptr, 0, bytes, s); });
}

void createDeviceStream(int device) { streamOf(device, "the runtime's copy stream"); }

int cudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

int currentCudaDevice() {
  int d = -1;
  if (cudaDeviceCount() == 0 || cudaGetDevice(&d) != cudaSuccess) return -1;
  return d;
}

#else

bool isDevicePointer(const void*) { return false; }

void copyHostToDevice(void*, const void*, size_t, const char* what) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s: device memory needs a CUDA build of MSCCL++", what);
}

void copyDeviceToHost(void*, const void*, size_t, const char* what) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s: device memory needs a CUDA build of MSCCL++", what);
}

void zeroDeviceMemory(int, void*, size_t, const char* what) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s: device memory needs a CUDA build of MSCCL++", what);
}

void createDeviceStream(int) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "a device stream needs a CUDA build of MSCCL++");
}

int cudaDeviceCount() { return 0; }
int currentCudaDevice() { return -1; }

#endif

}  // namespace mscclpp::transport
