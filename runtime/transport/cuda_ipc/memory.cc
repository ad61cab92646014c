#include "transport/cuda_ipc/memory.hpp"

#include <cstring>
#include <map>
#include <mutex>

#include "core/cuda_driver_entry.hpp"
#include "core/enforce.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace mscclpp::transport::cuda_ipc {

#if MSCCLPP_HAVE_CUDA

namespace {

template <class Fn>
Fn driverFunction(const char* name) {
  return cudaDriverEntry<Fn>(name, 12000);
}

using MemGetAddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
using PointerGetAttributeFn = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);

MemGetAddressRangeFn memGetAddressRange() {
  static MemGetAddressRangeFn fn = driverFunction<MemGetAddressRangeFn>("cuMemGetAddressRange");
  return fn;
}

PointerGetAttributeFn pointerGetAttribute() {
  static PointerGetAttributeFn fn = driverFunction<PointerGetAttributeFn>("cuPointerGetAttribute");
  return fn;
}

struct Opened {
  void* base = nullptr;
  ~Opened() {
    if (base) cudaIpcCloseMemHandle(base);
  }
};

struct ImportCache {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<Opened>> byHandle;
};

ImportCache& imports() {
  static ImportCache* c = new ImportCache();  // process-wide: an IPC handle opens once per process
  return *c;
}

}  // namespace

bool compiledIn() { return true; }

uint64_t allocationId(const void* ptr) {
  PointerGetAttributeFn fn = pointerGetAttribute();
  if (fn == nullptr || ptr == nullptr) return 0;
  unsigned long long id = 0;
  // Host memory answers CUDA_ERROR_INVALID_VALUE: no allocation of CUDA's, id 0.
  return fn(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, reinterpret_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS ? id : 0;
}

void exportRange(const void* ptr, size_t bytes, CudaIpcRecord* out) {
  auto fn = memGetAddressRange();
  MSCCLPP_ENFORCE(fn != nullptr, ErrorCode::CudaError,
                  "registerMemory(CudaIpc): cannot resolve cuMemGetAddressRange from the CUDA driver");
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = fn(&base, &size, reinterpret_cast<CUdeviceptr>(ptr));
  MSCCLPP_ENFORCE(r == CUDA_SUCCESS, ErrorCode::InvalidArgument,
                  "registerMemory(CudaIpc): %p is not CUDA device memory (cuMemGetAddressRange error %d)", ptr, int(r));
  uint64_t offset = reinterpret_cast<uint64_t>(ptr) - static_cast<uint64_t>(base);
  MSCCLPP_ENFORCE(offset + bytes <= size, ErrorCode::InvalidArgument,
                  "registerMemory(CudaIpc): [%p, +%zu) crosses the end of its %zu-byte allocation", ptr, bytes, size);
  cudaIpcMemHandle_t handle;
  cudaError_t e = cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base));
  // A caller may go on without the export (the executor stages the buffer):
  // the error must not stay for its next cudaGetLastError.
  if (e != cudaSuccess) (void)cudaGetLastError();
  MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "registerMemory(CudaIpc): cudaIpcGetMemHandle(%p): %s",
                  reinterpret_cast<void*>(base), cudaGetErrorString(e));
  static_assert(sizeof(handle) == 64, "cudaIpcMemHandle_t is 64 bytes");
  std::memcpy(out->handle.data(), &handle, sizeof(handle));
  out->baseOffset = offset;
  out->allocationSize = size;
  int device = -1;
  cudaGetDevice(&device);
  out->device = device;
}

std::shared_ptr<void> importRange(const CudaIpcRecord& e, size_t bytes, void** data, const std::string& what) {
  MSCCLPP_ENFORCE(e.baseOffset <= e.allocationSize && bytes <= e.allocationSize - e.baseOffset,
                  ErrorCode::InvalidArgument, "%s: range [%llu, +%zu) is outside its %llu-byte CUDA allocation",
                  what.c_str(), (unsigned long long)e.baseOffset, bytes, (unsigned long long)e.allocationSize);
  std::string key(reinterpret_cast<const char*>(e.handle.data()), e.handle.size());
  ImportCache& cache = imports();
  std::lock_guard<std::mutex> lock(cache.mutex);
  std::shared_ptr<Opened> o = cache.byHandle[key].lock();
  if (!o) {
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, e.handle.data(), sizeof(handle));
    o = std::make_shared<Opened>();
    cudaError_t err = cudaIpcOpenMemHandle(&o->base, handle, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      o->base = nullptr;
      MSCCLPP_THROW(ErrorCode::CudaError, "%s: cudaIpcOpenMemHandle: %s", what.c_str(), cudaGetErrorString(err));
    }
    cache.byHandle[key] = o;
  }
  *data = static_cast<char*>(o->base) + e.baseOffset;
  return o;
}

#else

bool compiledIn() { return false; }

uint64_t allocationId(const void*) { return 0; }

void exportRange(const void*, size_t, CudaIpcRecord*) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "registerMemory(CudaIpc): this build of MSCCL++ has no CUDA support");
}

std::shared_ptr<void> importRange(const CudaIpcRecord&, size_t, void**, const std::string& what) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "%s: CUDA IPC memory cannot be imported: this build has no CUDA support",
                what.c_str());
}

#endif

}  // namespace mscclpp::transport::cuda_ipc
