// Devices of the CUDA double, with their properties, attributes and peer
// access, and the driver functions the runtime gets through
// cudaGetDriverEntryPoint[ByVersion]: cuMemGetAddressRange,
// cuPointerGetAttribute, cuStreamWriteValue64, cuDeviceGet and
// cuDeviceGetAttribute here, virtual memory and multicast in vmm.cc.
#include <cuda.h>

#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "core.hpp"
#include "memory.hpp"
#include "streams.hpp"
#include "vmm.hpp"

namespace cudadouble {
namespace {

int attributeOf(int attr, int device) {
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      return kMaxThreadsPerBlock;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      return static_cast<int>(kSharedPerBlockDefault);
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      return static_cast<int>(kSharedPerBlockOptin);
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      return static_cast<int>(kSharedPerSm);
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      return kMaxThreadsPerSm;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      return kMaxBlocksPerSm;
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      return kRegistersPerSm;
    case cudaDevAttrMultiProcessorCount:
      return config().sms;
    case cudaDevAttrComputeCapabilityMajor:
      return 9;
    case cudaDevAttrComputeCapabilityMinor:
      return 0;
    case cudaDevAttrWarpSize:
      return 32;
    case cudaDevAttrUnifiedAddressing:
      return 1;
    case cudaDevAttrCanMapHostMemory:
      return 1;
    case cudaDevAttrConcurrentKernels:
      return 1;
    case cudaDevAttrCooperativeLaunch:
      return config().cooperative ? 1 : 0;
    case cudaDevAttrMemoryPoolsSupported:
      return 1;
    case cudaDevAttrPciBusId:
      return device;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
      return config().streamMemOps ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
      return config().multicast ? 1 : 0;
    default:
      return 0;
  }
}

// Runtime API, cudaDeviceGetAttribute: an attribute the runtime does not
// define is cudaErrorInvalidValue. The runtime's header reserves the values
// the driver uses for its own attributes (the stream memory operations'
// among them: CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS is 122,
// cudaDevAttrReserved122) and skips withdrawn ones: those are asked of the
// driver, cuDeviceGetAttribute.
bool runtimeKnows(int attr) {
  static const std::set<int> unknown = {44,  92,  93,  94,  96,  102, 103, 104, 105, 107, 110, 122,
                                        123, 124, 127, 128, 129, 132, 136, 137, 141, 145, 146};
  return attr > 0 && attr < cudaDevAttrMax && unknown.count(attr) == 0;
}

struct Peers {
  std::mutex m;
  std::set<std::pair<int, int>> enabled;  // (from, to)
};
Peers& peers() {
  static Peers* p = new Peers();
  return *p;
}

// ---- driver functions ---------------------------------------------------------------------------
CUresult driverEnter() { return stickyOf(currentDevice()) != cudaSuccess ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS; }

CUresult memGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  CD_TALLY_AS("cuMemGetAddressRange");
  if (CUresult r = driverEnter(); r != CUDA_SUCCESS) return r;
  Allocation a;
  if (!lookup(reinterpret_cast<const void*>(ptr), &a) || a.kind == MemKind::Host) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = static_cast<CUdeviceptr>(a.base);
  if (size) *size = a.size;
  return CUDA_SUCCESS;
}

CUresult pointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  CD_TALLY_AS("cuPointerGetAttribute");
  if (CUresult r = driverEnter(); r != CUDA_SUCCESS) return r;
  Allocation a;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!lookup(reinterpret_cast<const void*>(ptr), &a)) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = a.bufferId;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = a.base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = a.size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = a.device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = a.kind == MemKind::Host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult streamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
  CD_TALLY_AS("cuStreamWriteValue64");
  if (CUresult r = driverEnter(); r != CUDA_SUCCESS) return r;
  CUstream_st* s = nullptr;
  if (flags != 0 || (addr & 7) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (resolveStream(stream, &s) != cudaSuccess) return CUDA_ERROR_INVALID_HANDLE;
  const int device = s->device;
  auto* target = reinterpret_cast<uint64_t*>(addr);
  cudaError_t e = enqueue(
      s,
      [device, target, value] {
        if (!deviceAccessible(target, sizeof(uint64_t))) {
          fault(device, "cuStreamWriteValue64 to memory that is not live device memory");
          return;
        }
        // With the default flags the write is a release: earlier work of the stream is visible first.
        guarded(device, "cuStreamWriteValue64", [&] { __atomic_store_n(target, value, __ATOMIC_RELEASE); });
      },
      false);
  return e == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult deviceGet(CUdevice* device, int ordinal) {
  CD_TALLY_AS("cuDeviceGet");
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult deviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice device) {
  CD_TALLY_AS("cuDeviceGetAttribute");
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *value = attributeOf(static_cast<int>(attr), device);
  return CUDA_SUCCESS;
}

const std::map<std::string, void*>& entryPoints() {
  static const std::map<std::string, void*> table = {
      {"cuMemGetAddressRange", reinterpret_cast<void*>(&memGetAddressRange)},
      {"cuPointerGetAttribute", reinterpret_cast<void*>(&pointerGetAttribute)},
      {"cuStreamWriteValue64", reinterpret_cast<void*>(&streamWriteValue64)},
      {"cuDeviceGet", reinterpret_cast<void*>(&deviceGet)},
      {"cuDeviceGetAttribute", reinterpret_cast<void*>(&deviceGetAttribute)},
  };
  return table;
}

cudaError_t entryPoint(const char* symbol, void** funcPtr, cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || funcPtr == nullptr) return fail(cudaErrorInvalidValue);
  void* fn = nullptr;
  for (const auto* table : {&entryPoints(), &vmmEntryPoints()}) {
    auto it = table->find(symbol);
    if (it != table->end()) fn = it->second;
  }
  const bool found = fn != nullptr;
  *funcPtr = fn;
  if (status) *status = found ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

}  // namespace
}  // namespace cudadouble

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

extern "C" {

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  if (!validDevice(device)) return fail(cudaErrorInvalidDevice);
  CD_ENTER();
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "CUDA double %d (H100-like, host threads)", device);
  // The same ordinal is the same "physical GPU" in every process (the topology compares UUIDs).
  std::memcpy(prop->uuid.bytes, "cuda-double-gpu", 15);
  prop->uuid.bytes[15] = static_cast<char>(device);
  prop->totalGlobalMem = size_t{80} << 30;
  prop->sharedMemPerBlock = kSharedPerBlockDefault;
  prop->sharedMemPerBlockOptin = kSharedPerBlockOptin;
  prop->sharedMemPerMultiprocessor = kSharedPerSm;
  prop->regsPerBlock = kRegistersPerSm;
  prop->regsPerMultiprocessor = kRegistersPerSm;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = kMaxThreadsPerBlock;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->multiProcessorCount = config().sms;
  prop->maxThreadsPerMultiProcessor = kMaxThreadsPerSm;
  prop->maxBlocksPerMultiProcessor = kMaxBlocksPerSm;
  prop->major = 9;
  prop->minor = 0;
  prop->unifiedAddressing = 1;
  prop->canMapHostMemory = 1;
  prop->concurrentKernels = 1;
  prop->cooperativeLaunch = config().cooperative ? 1 : 0;
  prop->asyncEngineCount = 2;
  prop->pciBusID = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  if (!validDevice(device)) return fail(cudaErrorInvalidDevice);
  CD_ENTER();
  if (!runtimeKnows(static_cast<int>(attr))) return fail(cudaErrorInvalidValue);
  *value = attributeOf(static_cast<int>(attr), device);
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  CD_TALLY();
  if (canAccessPeer == nullptr) return fail(cudaErrorInvalidValue);
  if (!validDevice(device) || !validDevice(peerDevice)) return fail(cudaErrorInvalidDevice);
  *canAccessPeer = device != peerDevice ? 1 : 0;  // every pair is connected (NVLink-like)
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  CD_ENTER();
  if (flags != 0) return fail(cudaErrorInvalidValue);
  if (!validDevice(peerDevice) || peerDevice == currentDevice()) return fail(cudaErrorInvalidDevice);
  Peers& p = peers();
  std::lock_guard<std::mutex> lock(p.m);
  if (!p.enabled.insert({currentDevice(), peerDevice}).second) return fail(cudaErrorPeerAccessAlreadyEnabled);
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  CD_ENTER();
  Peers& p = peers();
  std::lock_guard<std::mutex> lock(p.m);
  if (p.enabled.erase({currentDevice(), peerDevice}) == 0) return fail(cudaErrorPeerAccessNotEnabled);
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** funcPtr, unsigned int /*cudaVersion*/,
                                             unsigned long long /*flags*/,
                                             cudaDriverEntryPointQueryResult* driverStatus) {
  CD_TALLY();
  return entryPoint(symbol, funcPtr, driverStatus);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr, unsigned long long /*flags*/,
                                    cudaDriverEntryPointQueryResult* driverStatus) {
  CD_TALLY();
  return entryPoint(symbol, funcPtr, driverStatus);
}
#pragma GCC diagnostic pop

cudaError_t cudaDriverGetVersion(int* version) {
  CD_TALLY();
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  CD_TALLY();
  if (version == nullptr) return fail(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

}  // extern "C"
