#include "channel/nvls_binding.hpp"

#include "comm/communicator_impl.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/random.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "core/net/socket.hpp"
#endif

namespace mscclpp::detail {

#if MSCCLPP_HAVE_CUDA && CUDA_VERSION >= 12010

namespace {

template <class Fn>
Fn driverEntry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, 12010, cudaEnableDefault, &status);
#else
  cudaError_t e = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &status);
#endif
  return (e == cudaSuccess && status == cudaDriverEntryPointSuccess) ? reinterpret_cast<Fn>(p) : nullptr;
}

struct Driver {
  decltype(&cuDeviceGet) deviceGet = driverEntry<decltype(&cuDeviceGet)>("cuDeviceGet");
  decltype(&cuDeviceGetAttribute) deviceGetAttribute =
      driverEntry<decltype(&cuDeviceGetAttribute)>("cuDeviceGetAttribute");
  decltype(&cuMulticastCreate) multicastCreate = driverEntry<decltype(&cuMulticastCreate)>("cuMulticastCreate");
  decltype(&cuMulticastAddDevice) multicastAddDevice =
      driverEntry<decltype(&cuMulticastAddDevice)>("cuMulticastAddDevice");
  decltype(&cuMulticastBindMem) multicastBindMem = driverEntry<decltype(&cuMulticastBindMem)>("cuMulticastBindMem");
  decltype(&cuMulticastUnbind) multicastUnbind = driverEntry<decltype(&cuMulticastUnbind)>("cuMulticastUnbind");
  decltype(&cuMulticastGetGranularity) multicastGetGranularity =
      driverEntry<decltype(&cuMulticastGetGranularity)>("cuMulticastGetGranularity");
  decltype(&cuMemRetainAllocationHandle) memRetainAllocationHandle =
      driverEntry<decltype(&cuMemRetainAllocationHandle)>("cuMemRetainAllocationHandle");
  decltype(&cuMemGetAddressRange) memGetAddressRange =
      driverEntry<decltype(&cuMemGetAddressRange)>("cuMemGetAddressRange");
  decltype(&cuMemExportToShareableHandle) memExport =
      driverEntry<decltype(&cuMemExportToShareableHandle)>("cuMemExportToShareableHandle");
  decltype(&cuMemImportFromShareableHandle) memImport =
      driverEntry<decltype(&cuMemImportFromShareableHandle)>("cuMemImportFromShareableHandle");
  decltype(&cuMemAddressReserve) memAddressReserve = driverEntry<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  decltype(&cuMemAddressFree) memAddressFree = driverEntry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  decltype(&cuMemMap) memMap = driverEntry<decltype(&cuMemMap)>("cuMemMap");
  decltype(&cuMemUnmap) memUnmap = driverEntry<decltype(&cuMemUnmap)>("cuMemUnmap");
  decltype(&cuMemSetAccess) memSetAccess = driverEntry<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  decltype(&cuMemRelease) memRelease = driverEntry<decltype(&cuMemRelease)>("cuMemRelease");

  bool complete() const {
    return deviceGet && deviceGetAttribute && multicastCreate && multicastAddDevice && multicastBindMem &&
           multicastUnbind && multicastGetGranularity && memRetainAllocationHandle && memGetAddressRange && memExport &&
           memImport && memAddressReserve && memAddressFree && memMap && memUnmap && memSetAccess && memRelease;
  }
};

const Driver& driver() {
  static const Driver d;
  return d;
}

void check(CUresult r, const char* what) {
  MSCCLPP_ENFORCE(r == CUDA_SUCCESS, ErrorCode::CudaError, "NVLS: %s failed (CUresult %d)", what, int(r));
}

class Binding : public NvlsBinding {
 public:
  ~Binding() override {
    const Driver& d = driver();
    if (mcPtr_) {
      d.memUnmap(mcPtr_, size_);
      d.memAddressFree(mcPtr_, size_);
    }
    if (bound_) d.multicastUnbind(mc_, device_, 0, size_);
    if (mcValid_) d.memRelease(mc_);
    if (memValid_) d.memRelease(mem_);
  }
  void* multicastPointer() const override { return reinterpret_cast<void*>(mcPtr_); }

  CUmemGenericAllocationHandle mc_{};
  CUmemGenericAllocationHandle mem_{};
  bool mcValid_ = false, memValid_ = false, bound_ = false;
  CUdevice device_ = 0;
  CUdeviceptr mcPtr_ = 0;
  size_t size_ = 0;
};

// Why this member cannot take part, or "" when it can.
std::string incapability(int deviceOrdinal, void* buffer, size_t bytes, size_t members, size_t* offsetOut,
                         CUmemGenericAllocationHandle* memOut) {
  const Driver& d = driver();
  if (!d.complete()) return "the CUDA driver lacks the multicast entry points";
  CUdevice dev;
  if (d.deviceGet(&dev, deviceOrdinal) != CUDA_SUCCESS) return "cuDeviceGet failed";
  int supported = 0;
  d.deviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev);
  if (!supported) return "the device does not support multicast (NVLS needs sm_90 with NVSwitch)";
  CUmemGenericAllocationHandle mem;
  if (d.memRetainAllocationHandle(&mem, buffer) != CUDA_SUCCESS) {
    return "the buffer was not allocated with cuMemCreate (cudaMalloc memory cannot be bound)";
  }
  CUdeviceptr base = 0;
  size_t allocSize = 0;
  d.memGetAddressRange(&base, &allocSize, reinterpret_cast<CUdeviceptr>(buffer));
  CUmulticastObjectProp prop{};
  prop.numDevices = static_cast<unsigned>(members);
  prop.size = bytes;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  d.multicastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_MINIMUM);
  size_t offset = reinterpret_cast<CUdeviceptr>(buffer) - base;
  if (granularity == 0 || bytes % granularity || offset % granularity) {
    d.memRelease(mem);
    return strFormat("size %zu or offset %zu is not a multiple of the multicast granularity %zu", bytes, offset,
                     granularity);
  }
  *offsetOut = offset;
  *memOut = mem;
  return "";
}

// File descriptors cross processes only through a Unix socket, with SCM_RIGHTS.
int receiveFd(int listenFd, const Deadline& deadline) {
  pollfd p{listenFd, POLLIN, 0};
  int rc = ::poll(&p, 1, deadline.remainingMs());
  MSCCLPP_ENFORCE(rc > 0, ErrorCode::Timeout, "NVLS: the multicast handle did not arrive within %.3g s (%s)",
                  deadline.seconds(), deadline.source());
  int conn = ::accept(listenFd, nullptr, nullptr);
  if (conn < 0) throw SystemError("NVLS: accept on the handle socket", errno);
  char dummy;
  iovec iov{&dummy, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = ::recvmsg(conn, &msg, 0);
  ::close(conn);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  MSCCLPP_ENFORCE(n == 1 && c && c->cmsg_type == SCM_RIGHTS, ErrorCode::RemoteError,
                  "NVLS: no file descriptor in the handle message");
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

void sendFd(const std::string& abstractName, int fd) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw SystemError("NVLS: socket(AF_UNIX)", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, abstractName.data(), abstractName.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + abstractName.size());
  if (::connect(s, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int e = errno;
    ::close(s);
    throw SystemError("NVLS: connect to a member's handle socket", e);
  }
  char dummy = 0;
  iovec iov{&dummy, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ssize_t n = ::sendmsg(s, &msg, MSG_NOSIGNAL);
  int e = errno;
  ::close(s);
  if (n != 1) throw SystemError("NVLS: sendmsg of the multicast handle", e);
}

}  // namespace

std::shared_ptr<NvlsBinding> NvlsBinding::tryCreate(Communicator& comm, const std::vector<int>& ranks, int myIndex,
                                                    size_t bytes, int tag, void* buffer) {
  auto& m = CommunicatorAccess::impl(comm);
  auto exchange = m.bootstrap->withNamespace("mscclpp.nvls");
  size_t offset = 0;
  CUmemGenericAllocationHandle mem{};
  std::string why = incapability(m.device, buffer, bytes, ranks.size(), &offset, &mem);
  // Everyone learns everyone's verdict: the binding is all or nothing.
  char mine = why.empty() ? 1 : 0;
  bool all = mine;
  for (int r : ranks)
    if (r != m.rank) exchange->send(&mine, 1, r, tag);
  for (int r : ranks) {
    if (r == m.rank) continue;
    char theirs = 0;
    exchange->recv(&theirs, 1, r, tag);
    if (!theirs && why.empty()) why = "rank " + std::to_string(r) + " cannot bind";
    all = all && theirs;
  }
  if (!all) {
    if (mine) driver().memRelease(mem);
    MSCCLPP_INFO(LogInit, "SwitchChannel rank %d: no NVLS multicast: %s", m.rank, why.c_str());
    return nullptr;
  }
  const Driver& d = driver();
  auto b = std::make_shared<Binding>();
  b->mem_ = mem;
  b->memValid_ = true;
  b->size_ = bytes;
  check(d.deviceGet(&b->device_, m.device), "cuDeviceGet");
  CUmulticastObjectProp prop{};
  prop.numDevices = static_cast<unsigned>(ranks.size());
  prop.size = bytes;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  // The communicator's timeout, like every wait built
  // on it; the exchanges above use its bootstrap's.
  const Deadline deadline = timeoutOf(comm).start();
  if (myIndex == 0) {
    check(d.multicastCreate(&b->mc_, &prop), "cuMulticastCreate");
    b->mcValid_ = true;
    int fd = -1;
    check(d.memExport(&fd, b->mc_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "cuMemExportToShareableHandle");
    for (int r : ranks) {
      if (r == m.rank) continue;
      std::vector<char> name = exchange->recv(r, tag, 108);
      sendFd(std::string(name.begin(), name.end()), fd);
    }
    ::close(fd);
  } else {
    uint32_t rnd = static_cast<uint32_t>(randomU64("an NVLS socket name"));
    std::string name = strFormat("%cmscclpp-nvls-%d-%08x", '\0', int(getpid()), rnd);
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) throw SystemError("NVLS: socket(AF_UNIX)", errno);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    if (::bind(s, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(s, 1) != 0) {
      int e = errno;
      ::close(s);
      throw SystemError("NVLS: bind/listen of the handle socket", e);
    }
    exchange->send(name.data(), name.size(), ranks[0], tag);
    int fd;
    try {
      fd = receiveFd(s, deadline);
    } catch (...) {
      ::close(s);
      throw;
    }
    ::close(s);
    CUresult r = d.memImport(&b->mc_, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ::close(fd);
    check(r, "cuMemImportFromShareableHandle");
    b->mcValid_ = true;
  }
  check(d.multicastAddDevice(b->mc_, b->device_), "cuMulticastAddDevice");
  // Every device must be added before anyone binds memory.
  for (int r : ranks)
    if (r != m.rank) exchange->send(&mine, 1, r, tag + 1);
  for (int r : ranks) {
    if (r == m.rank) continue;
    char ok;
    exchange->recv(&ok, 1, r, tag + 1);
  }
  check(d.multicastBindMem(b->mc_, 0, b->mem_, offset, bytes, 0), "cuMulticastBindMem");
  b->bound_ = true;
  size_t granularity = 0;
  check(d.multicastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED),
        "cuMulticastGetGranularity");
  check(d.memAddressReserve(&b->mcPtr_, bytes, granularity, 0, 0), "cuMemAddressReserve");
  CUresult r = d.memMap(b->mcPtr_, bytes, 0, b->mc_, 0);
  if (r != CUDA_SUCCESS) {
    d.memAddressFree(b->mcPtr_, bytes);
    b->mcPtr_ = 0;
    check(r, "cuMemMap");
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = m.device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  check(d.memSetAccess(b->mcPtr_, bytes, &access, 1), "cuMemSetAccess");
  return b;
}

std::string NvlsBinding::incapability(int device, const void* buffer, size_t bytes, size_t members) {
  size_t offset = 0;
  CUmemGenericAllocationHandle mem{};
  const std::string why =
      ::mscclpp::detail::incapability(device, const_cast<void*>(buffer), bytes, members, &offset, &mem);
  if (why.empty()) driver().memRelease(mem);
  return why;
}

#else

std::string NvlsBinding::incapability(int, const void*, size_t, size_t) {
  return "this build has no CUDA >= 12.1 for NVLS multicast";
}

std::shared_ptr<NvlsBinding> NvlsBinding::tryCreate(Communicator& comm, const std::vector<int>&, int, size_t, int,
                                                    void*) {
  MSCCLPP_INFO(LogInit, "SwitchChannel rank %d: no NVLS multicast: this build has no CUDA >= 12.1", comm.rank());
  return nullptr;
}

#endif

}  // namespace mscclpp::detail
