#include "channel/nvls_binding.hpp"

#include "channel/driver_table.hpp"
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

class Binding : public NvlsBinding {
 public:
  ~Binding() override {
    const DriverTable& d = driverTable();
    if (mapped_) d.memUnmap(mcPtr_, size_);
    if (mcPtr_) d.memAddressFree(mcPtr_, size_);
    if (bound_) d.multicastUnbind(mc_, device_, 0, size_);
    if (mcValid_) d.memRelease(mc_);
    if (memValid_) d.memRelease(mem_);
  }
  void* multicastPointer() const override { return mapped_ ? reinterpret_cast<void*>(mcPtr_) : nullptr; }

  CUmemGenericAllocationHandle mc_{};
  CUmemGenericAllocationHandle mem_{};
  bool mcValid_ = false, memValid_ = false, bound_ = false, mapped_ = false;
  CUdevice device_ = 0;
  CUdeviceptr mcPtr_ = 0;  // reserved
  size_t size_ = 0;
};

// Why this member cannot take part, or "" when it can.
std::string incapability(int deviceOrdinal, void* buffer, size_t bytes, size_t members, size_t* offsetOut,
                         CUmemGenericAllocationHandle* memOut) {
  const DriverTable& d = driverTable();
  if (!d.hasMulticast()) return "the CUDA driver lacks the multicast entry points";
  CUdevice dev;
  if (d.deviceGet(&dev, deviceOrdinal) != CUDA_SUCCESS) return "cuDeviceGet failed";
  int supported = 0;
  d.deviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev);
  if (!supported) return "the device does not support multicast (NVLS needs sm_90 with NVSwitch)";
  CUmemGenericAllocationHandle mem;
  if (d.memRetainAllocationHandle(&mem, buffer) != CUDA_SUCCESS) {
    return "the buffer was not allocated with cuMemCreate (cudaMalloc memory cannot be bound; ncclMemAlloc's can)";
  }
  // A shareable multicast object binds only shareable memory.
  CUmemAllocationProp props{};
  if (d.memGetAllocationPropertiesFromHandle(&props, mem) != CUDA_SUCCESS ||
      (props.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == 0) {
    d.memRelease(mem);
    return "the buffer's allocation has no POSIX file descriptor handle type (cuMemCreate's requestedHandleTypes), "
           "which a shareable multicast object needs";
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

// One message from every other member of the group, in group order (ours
// is `mine`). Collective.
std::vector<std::string> gather(Bootstrap& exchange, const std::vector<int>& ranks, int self, int tag,
                                const std::string& mine) {
  for (int r : ranks)
    if (r != self) exchange.send(mine.data(), mine.size(), r, tag);
  std::vector<std::string> all;
  for (int r : ranks) {
    if (r == self) {
      all.push_back(mine);
      continue;
    }
    std::vector<char> theirs = exchange.recv(r, tag, 4096);
    all.emplace_back(theirs.begin(), theirs.end());
  }
  return all;
}

// Every member's outcome of a step: "" when every member succeeded, else
// the first failing member's rank and reason, the same on every member.
std::string agree(Bootstrap& exchange, const std::vector<int>& ranks, int self, int tag, const std::string& failure) {
  const std::vector<std::string> all = gather(exchange, ranks, self, tag, failure.empty() ? "+" : "-" + failure);
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].empty() || all[i][0] != '+')
      return strFormat("rank %d: %s", ranks[i], all[i].empty() ? "no answer" : all[i].c_str() + 1);
  }
  return "";
}

// The failure of a driver call, or "".
std::string failure(CUresult r, const char* what) {
  return r == CUDA_SUCCESS ? std::string() : strFormat("%s failed (CUresult %d)", what, int(r));
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
  const DriverTable& d = driverTable();
  auto b = std::make_shared<Binding>();
  b->size_ = bytes;
  size_t offset = 0;
  std::string why = ::mscclpp::detail::incapability(m.device, buffer, bytes, ranks.size(), &offset, &b->mem_);
  b->memValid_ = why.empty();
  // Every member learns every verdict and device: the binding is all or
  // nothing, and a team has one member per GPU. Each later step that can
  // fail ends in an exchange of outcomes too, so that every member binds or
  // every member falls back, whichever step failed where.
  std::string mine(16, '\0');
  cudaDeviceProp devProp{};
  if (why.empty() && cudaGetDeviceProperties(&devProp, m.device) != cudaSuccess) {
    (void)cudaGetLastError();
    why = "cudaGetDeviceProperties failed";
  }
  std::memcpy(&mine[0], &devProp.uuid, 16);
  mine += why.empty() ? "+" : "-" + why;
  const std::vector<std::string> verdicts = gather(*exchange, ranks, m.rank, tag, mine);
  std::string refusal;
  for (size_t i = 0; i < verdicts.size() && refusal.empty(); ++i) {
    if (verdicts[i].size() < 17 || verdicts[i][16] != '+') {
      refusal = strFormat("rank %d cannot bind: %s", ranks[i],
                          verdicts[i].size() > 17 ? verdicts[i].c_str() + 17 : "no verdict");
      continue;
    }
    for (size_t j = 0; j < i && refusal.empty(); ++j) {
      if (verdicts[j].compare(0, 16, verdicts[i], 0, 16) == 0)
        refusal =
            strFormat("ranks %d and %d share one GPU, and a multicast team has one member per GPU", ranks[j], ranks[i]);
    }
  }
  if (!refusal.empty()) {
    MSCCLPP_INFO(LogInit, "SwitchChannel rank %d: no NVLS multicast: %s", m.rank, refusal.c_str());
    return nullptr;
  }
  std::string failed;
  if (d.deviceGet(&b->device_, m.device) != CUDA_SUCCESS) failed = "cuDeviceGet failed";
  CUmulticastObjectProp prop{};
  prop.numDevices = static_cast<unsigned>(ranks.size());
  prop.size = bytes;
  prop.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  // The communicator's timeout, like every wait built
  // on it; the exchanges use its bootstrap's.
  const Deadline deadline = timeoutOf(comm).start();
  // The team: the first member creates the object and hands it to the
  // others as a file descriptor; each adds its device.
  if (myIndex == 0) {
    std::vector<std::string> names;
    for (int r : ranks) {
      if (r == m.rank) continue;
      std::vector<char> name = exchange->recv(r, tag + 1, 108);
      names.emplace_back(name.begin(), name.end());
    }
    int fd = -1;
    if (failed.empty()) failed = failure(d.multicastCreate(&b->mc_, &prop), "cuMulticastCreate");
    b->mcValid_ = failed.empty();
    if (failed.empty())
      failed = failure(d.memExport(&fd, b->mc_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                       "cuMemExportToShareableHandle");
    const std::string status = failed.empty() ? "+" : "-";
    size_t k = 0;
    for (int r : ranks) {
      if (r == m.rank) continue;
      exchange->send(status.data(), status.size(), r, tag + 2);
      const std::string& name = names[k++];
      if (!failed.empty()) continue;
      try {
        sendFd(name, fd);
      } catch (const Error& e) {
        failed = e.what();  // that member waits for the descriptor until the communicator's deadline
      }
    }
    if (fd >= 0) ::close(fd);
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
    exchange->send(name.data(), name.size(), ranks[0], tag + 1);
    std::vector<char> status = exchange->recv(ranks[0], tag + 2, 1);
    if (status.size() == 1 && status[0] == '+') {
      int fd = -1;
      try {
        fd = receiveFd(s, deadline);
      } catch (const Error& e) {
        if (failed.empty()) failed = e.what();
      }
      if (fd >= 0) {
        CUresult r = d.memImport(&b->mc_, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        ::close(fd);
        if (failed.empty()) failed = failure(r, "cuMemImportFromShareableHandle");
        b->mcValid_ = r == CUDA_SUCCESS;
      }
    } else if (failed.empty()) {
      failed = "the multicast object was not created";
    }
    ::close(s);
  }
  if (failed.empty()) failed = failure(d.multicastAddDevice(b->mc_, b->device_), "cuMulticastAddDevice");
  // Every device joined before anyone binds memory.
  std::string outcome = agree(*exchange, ranks, m.rank, tag + 3, failed);
  if (outcome.empty()) {
    failed = failure(d.multicastBindMem(b->mc_, 0, b->mem_, offset, bytes, 0), "cuMulticastBindMem");
    b->bound_ = failed.empty();
    size_t granularity = 0;
    if (failed.empty())
      failed = failure(d.multicastGetGranularity(&granularity, &prop, CU_MULTICAST_GRANULARITY_RECOMMENDED),
                       "cuMulticastGetGranularity");
    if (failed.empty())
      failed = failure(d.memAddressReserve(&b->mcPtr_, bytes, granularity, 0, 0), "cuMemAddressReserve");
    if (failed.empty()) failed = failure(d.memMap(b->mcPtr_, bytes, 0, b->mc_, 0), "cuMemMap");
    b->mapped_ = failed.empty();
    if (failed.empty()) {
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = m.device;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      failed = failure(d.memSetAccess(b->mcPtr_, bytes, &access, 1), "cuMemSetAccess");
    }
    outcome = agree(*exchange, ranks, m.rank, tag + 4, failed);
  }
  if (!outcome.empty()) {
    // The members' buffers serve; b releases what this member made.
    MSCCLPP_INFO(LogInit, "SwitchChannel rank %d: no NVLS multicast: %s", m.rank, outcome.c_str());
    return nullptr;
  }
  return b;
}

std::string NvlsBinding::incapability(int device, const void* buffer, size_t bytes, size_t members) {
  size_t offset = 0;
  CUmemGenericAllocationHandle mem{};
  const std::string why =
      ::mscclpp::detail::incapability(device, const_cast<void*>(buffer), bytes, members, &offset, &mem);
  if (why.empty()) driverTable().memRelease(mem);
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
