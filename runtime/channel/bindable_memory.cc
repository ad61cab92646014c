#include "channel/bindable_memory.hpp"

#include <map>
#include <mutex>
#include <vector>

#include "channel/driver_table.hpp"
#include "core/enforce.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace mscclpp::detail {

#if MSCCLPP_HAVE_CUDA && CUDA_VERSION >= 12010

namespace {

struct Block {
  size_t bytes;
  CUmemGenericAllocationHandle handle;
};

// Process-wide, like the memory; never destroyed: frees may come during static destruction.
struct Blocks {
  std::mutex mutex;
  std::map<void*, Block> live;
};
Blocks& blocks() {
  static Blocks* b = new Blocks();
  return *b;
}

void check(CUresult r, const char* what, size_t bytes, int device) {
  MSCCLPP_ENFORCE(r == CUDA_SUCCESS, ErrorCode::CudaError,
                  "allocating %zu bytes of multicast-capable memory on device %d: %s failed (CUresult %d)", bytes,
                  device, what, int(r));
}

}  // namespace

void* allocateBindable(size_t bytes, int device, std::string* why) {
  const DriverTable& d = driverTable();
  if (!d.hasBindableMemory()) {
    *why = "the CUDA driver lacks the virtual memory or multicast entry points";
    return nullptr;
  }
  CUdevice dev;
  int multicast = 0;
  if (d.deviceGet(&dev, device) != CUDA_SUCCESS ||
      d.deviceGetAttribute(&multicast, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev) != CUDA_SUCCESS || !multicast) {
    *why = "the device does not support multicast";
    return nullptr;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t memGranularity = 0, mcGranularity = 0;
  check(d.memGetAllocationGranularity(&memGranularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "cuMemGetAllocationGranularity", bytes, device);
  CUmulticastObjectProp mc{};
  mc.numDevices = 1;
  mc.size = bytes == 0 ? 1 : bytes;
  mc.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  check(d.multicastGetGranularity(&mcGranularity, &mc, CU_MULTICAST_GRANULARITY_RECOMMENDED),
        "cuMulticastGetGranularity", bytes, device);
  const size_t granularity = memGranularity > mcGranularity ? memGranularity : mcGranularity;
  MSCCLPP_ENFORCE(granularity > 0, ErrorCode::CudaError, "device %d reports a granularity of 0", device);
  const size_t size = ((bytes == 0 ? 1 : bytes) + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle{};
  check(d.memCreate(&handle, size, &prop, 0), "cuMemCreate", bytes, device);
  CUdeviceptr ptr = 0;
  CUresult r = d.memAddressReserve(&ptr, size, granularity, 0, 0);
  if (r == CUDA_SUCCESS) {
    r = d.memMap(ptr, size, 0, handle, 0);
    if (r != CUDA_SUCCESS) d.memAddressFree(ptr, size);
  }
  if (r != CUDA_SUCCESS) {
    d.memRelease(handle);
    check(r, "reserving and mapping the address range", bytes, device);
  }
  // Our device, and every device that can reach it directly: ranks on other
  // GPUs of this process read and write the buffer through raw pointers.
  std::vector<CUmemAccessDesc> access;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) (void)cudaGetLastError();
  for (int other = 0; other < count; ++other) {
    int can = other == device ? 1 : 0;
    if (other != device && cudaDeviceCanAccessPeer(&can, other, device) != cudaSuccess) {
      (void)cudaGetLastError();
      can = 0;
    }
    if (!can) continue;
    CUmemAccessDesc a{};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = other;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(a);
  }
  r = d.memSetAccess(ptr, size, access.data(), access.size());
  if (r != CUDA_SUCCESS) {
    d.memUnmap(ptr, size);
    d.memAddressFree(ptr, size);
    d.memRelease(handle);
    check(r, "cuMemSetAccess", bytes, device);
  }
  void* p = reinterpret_cast<void*>(ptr);
  Blocks& b = blocks();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.live[p] = Block{size, handle};
  return p;
}

bool releaseBindable(void* ptr) {
  Block block{};
  {
    Blocks& b = blocks();
    std::lock_guard<std::mutex> lock(b.mutex);
    auto it = b.live.find(ptr);
    if (it == b.live.end()) return false;
    block = it->second;
    b.live.erase(it);
  }
  const DriverTable& d = driverTable();
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  CUresult r = d.memUnmap(p, block.bytes);
  if (r == CUDA_SUCCESS) r = d.memAddressFree(p, block.bytes);
  const CUresult released = d.memRelease(block.handle);
  if (r == CUDA_SUCCESS) r = released;
  MSCCLPP_ENFORCE(r == CUDA_SUCCESS, ErrorCode::CudaError, "freeing multicast-capable memory %p (CUresult %d)", ptr,
                  int(r));
  return true;
}

#else

void* allocateBindable(size_t, int, std::string* why) {
  *why = "this build has no CUDA 12.1 or later";
  return nullptr;
}

bool releaseBindable(void*) { return false; }

#endif

}  // namespace mscclpp::detail
