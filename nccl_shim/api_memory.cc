// Entry points for memory: allocation, registration and windows.
//
// ncclMemAlloc gives, as NCCL does, memory NVLS can bind
// on a GPU that offers multicast: cuMemCreate with a
// shareable handle type, at the multicast granularity.
// Other GPUs get cudaMalloc memory, which the runtime
// shares with other processes through CUDA IPC. Without
// a GPU, the CPU backend gets page-aligned host memory,
// since its plans run on host buffers. ncclMemFree
// forwards memory it did not allocate to the real NCCL.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "api_common.hpp"
#include "channel/bindable_memory.hpp"
#include "comm.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "cuda_glue.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

namespace {

// The host blocks ncclMemAlloc handed out, process-wide like the memory.
class HostBlocks {
 public:
  static HostBlocks& instance() {
    // Never destroyed: frees may come during static destruction.
    static HostBlocks* b = new HostBlocks();
    return *b;
  }
  void* allocate(size_t bytes) {
    void* p = nullptr;
    size_t rounded = ((bytes == 0 ? 1 : bytes) + 4095) / 4096 * 4096;
    MSCCLPP_ENFORCE(posix_memalign(&p, 4096, rounded) == 0 && p != nullptr, ErrorCode::SystemError,
                    "MemAlloc : cannot allocate %zu bytes of host memory", bytes);
    std::memset(p, 0, rounded);
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.insert(p);
    return p;
  }
  bool release(void* p) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (blocks_.erase(p) == 0) return false;
    }
    std::free(p);
    return true;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<void*> blocks_;
};

bool cpuBackendWithoutDevice(std::string* why) {
  *why = cudaUnavailableReason();
  if (why->empty()) return false;
  std::string backend = params::backend();
  return backend == "cpu" || backend == "auto";
}

}  // namespace

MSCCLPP_NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclMemAlloc, ptr, size);
  return guarded([&] {
    MSCCLPP_ENFORCE(ptr != nullptr, ErrorCode::InvalidArgument, "MemAlloc : ptr argument is NULL");
    *ptr = nullptr;
    std::string noDevice;
    if (cpuBackendWithoutDevice(&noDevice)) {
      *ptr = HostBlocks::instance().allocate(size);
      MSCCLPP_INFO(LogShim, "ncclMemAlloc(%zu): host memory %p (no CUDA device: %s; CPU backend)", size, *ptr,
                   noDevice.c_str());
      return ncclSuccess;
    }
    MSCCLPP_ENFORCE(noDevice.empty(), ErrorCode::CudaError,
                    "MemAlloc : cannot allocate %zu bytes: no CUDA device (%s) and MSCCLPP_BACKEND=%s", size,
                    noDevice.c_str(), params::backend().c_str());
    std::string noMulticast;
    *ptr = mscclpp::detail::allocateBindable(size, currentCudaDevice(), &noMulticast);
    if (*ptr != nullptr) {
      MSCCLPP_INFO(LogShim, "ncclMemAlloc(%zu): %p, multicast-capable (cuMemCreate)", size, *ptr);
      return ncclSuccess;
    }
    *ptr = cudaAllocate(size);
    MSCCLPP_INFO(LogShim, "ncclMemAlloc(%zu): %p from cudaMalloc (%s: NVLS cannot bind it)", size, *ptr,
                 noMulticast.c_str());
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t pncclMemFree(void* ptr) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclMemFree, ptr);
  return guarded([&] {
    if (ptr == nullptr) return ncclSuccess;
    if (HostBlocks::instance().release(ptr)) return ncclSuccess;
    if (mscclpp::detail::releaseBindable(ptr)) return ncclSuccess;
    if (isCudaPointer(ptr)) {
      cudaRelease(ptr);
      return ncclSuccess;
    }
    // Memory the application got from the real NCCL before the shim.
    MSCCLPP_ENFORCE(RealNccl::instance().ensureLoaded(), ErrorCode::InvalidArgument,
                    "MemFree : %p was not allocated by ncclMemAlloc", ptr);
    ncclResult_t rc = callReal<NcclFn::ncclMemFree>(ptr);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclMemFree");
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommRegister, comm, buff, size, handle);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommRegister>(comm, buff, size, handle);
  return guarded([&] {
    Comm* c = checkComm(comm, "CommRegister");
    MSCCLPP_ENFORCE(buff != nullptr, ErrorCode::InvalidArgument, "CommRegister : buff argument is NULL");
    MSCCLPP_ENFORCE(handle != nullptr, ErrorCode::InvalidArgument, "CommRegister : handle argument is NULL");
    c->ensureReady("CommRegister");
    if (c->fallback().available()) {
      ncclResult_t rc = callReal<NcclFn::ncclCommRegister>(c->fallback().real(), buff, size, handle);
      if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommRegister");
      return ncclSuccess;
    }
    *handle = c->registrations().add(buff, size, /*window=*/false, 0);
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommDeregister, comm, handle);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommDeregister>(comm, handle);
  return guarded([&] {
    Comm* c = checkComm(comm, "CommDeregister");
    MSCCLPP_ENFORCE(handle != nullptr, ErrorCode::InvalidArgument, "CommDeregister : handle argument is NULL");
    if (c->registrations().remove(handle, /*window=*/false)) return ncclSuccess;
    MSCCLPP_ENFORCE(c->fallback().available(), ErrorCode::InvalidArgument,
                    "CommDeregister : handle %p is not a registration of this communicator", handle);
    ncclResult_t rc = callReal<NcclFn::ncclCommDeregister>(c->fallback().real(), handle);
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommDeregister");
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                 int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommWindowRegister, comm, buff, size, win, winFlags);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommWindowRegister>(comm, buff, size, win, winFlags);
  return guarded([&] {
    Comm* c = checkComm(comm, "CommWindowRegister");
    MSCCLPP_ENFORCE(buff != nullptr, ErrorCode::InvalidArgument, "CommWindowRegister : buff argument is NULL");
    MSCCLPP_ENFORCE(win != nullptr, ErrorCode::InvalidArgument, "CommWindowRegister : win argument is NULL");
    MSCCLPP_ENFORCE(winFlags == NCCL_WIN_DEFAULT || winFlags == NCCL_WIN_COLL_SYMMETRIC, ErrorCode::InvalidArgument,
                    "CommWindowRegister : invalid winFlags 0x%x", winFlags);
    c->ensureReady("CommWindowRegister");
    if (c->fallback().available()) {
      // Device code dereferences window handles: they must be real ones.
      ncclResult_t rc = callReal<NcclFn::ncclCommWindowRegister>(c->fallback().real(), buff, size, win, winFlags);
      rc = rc == ncclInProgress ? waitRealComm(c->fallback().real(), "ncclCommWindowRegister") : rc;
      if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommWindowRegister");
      return ncclSuccess;
    }
    *win = reinterpret_cast<ncclWindow_t>(c->registrations().add(buff, size, /*window=*/true, winFlags));
    return ncclSuccess;
  });
}

MSCCLPP_NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclCommWindowDeregister, comm, win);
  if (isRealNcclComm(comm)) return passThrough<NcclFn::ncclCommWindowDeregister>(comm, win);
  return guarded([&] {
    Comm* c = checkComm(comm, "CommWindowDeregister");
    MSCCLPP_ENFORCE(win != nullptr, ErrorCode::InvalidArgument, "CommWindowDeregister : win argument is NULL");
    if (c->registrations().remove(win, /*window=*/true)) return ncclSuccess;
    MSCCLPP_ENFORCE(c->fallback().available(), ErrorCode::InvalidArgument,
                    "CommWindowDeregister : window %p is not a window of this communicator", static_cast<void*>(win));
    ncclResult_t rc = callReal<NcclFn::ncclCommWindowDeregister>(c->fallback().real(), win);
    rc = rc == ncclInProgress ? waitRealComm(c->fallback().real(), "ncclCommWindowDeregister") : rc;
    if (rc != ncclSuccess) throwRealFailure(rc, "ncclCommWindowDeregister");
    return ncclSuccess;
  });
}
