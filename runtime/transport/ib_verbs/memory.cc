#include "transport/ib_verbs/memory.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

#include "core/cuda_driver_entry.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace mscclpp::transport::ib_verbs {

Device::Device(std::shared_ptr<VerbsLibrary> l, ibv_context* c, ibv_pd* p, int i, const HcaPort& hca)
    : lib(std::move(l)), context(c), pd(p), index(i), name(hca.name()), port(static_cast<uint8_t>(hca.port)) {}

Device::~Device() {
  if (pd) lib->deallocPd(pd);
  if (context) lib->closeDevice(context);
}

std::string deviceName(const Device& device) { return device.name; }

namespace {

// A GID entry's type: ibv_query_gid_ex where rdma-core has it, else the
// kernel's sysfs file, as NCCL reads it. -1: unknown or no entry.
int gidType(VerbsLibrary& lib, ibv_context* ctx, const HcaPort& port, int index) {
  if (lib.queryGidEx) {
    ibv_gid_entry e{};
    if (lib.queryGidEx(ctx, static_cast<uint32_t>(port.port), static_cast<uint32_t>(index), &e, 0, sizeof(e)) != 0)
      return -1;
    return static_cast<int>(e.gid_type);
  }
  std::ifstream in(port.sysfsPath + "/ports/" + std::to_string(port.port) + "/gid_attrs/types/" +
                   std::to_string(index));
  std::string type;
  std::getline(in, type);
  if (type == "RoCE v2") return IBV_GID_TYPE_ROCE_V2;
  if (type == "IB/RoCE v1") return IBV_GID_TYPE_ROCE_V1;
  return -1;
}

bool ipv4Mapped(const ibv_gid& g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, prefix, sizeof(prefix)) == 0;
}

bool zeroGid(const ibv_gid& g) {
  for (uint8_t b : g.raw)
    if (b != 0) return false;
  return true;
}

}  // namespace

// RoCE v2 with an IPv4-mapped address is what NCCL picks by default
// (NCCL_IB_ROCE_VERSION_NUM=2, NCCL_IB_ADDR_FAMILY=AF_INET): it is routed
// over IP. Index 0, a RoCE v1 link-local GID, reaches only its L2 segment.
int chooseGidIndex(VerbsLibrary& lib, ibv_context* ctx, const HcaPort& port, int tableLength, std::string* why) {
  const int64_t forced = params::ibGidIndex();
  if (forced >= 0) {
    MSCCLPP_ENFORCE(forced < tableLength, ErrorCode::InvalidArgument,
                    "MSCCLPP_IB_GID_INDEX=%lld: %s has %d GID table entries", static_cast<long long>(forced),
                    port.name().c_str(), tableLength);
    *why = "MSCCLPP_IB_GID_INDEX";
    return static_cast<int>(forced);
  }
  if (port.linkLayer != IBV_LINK_LAYER_ETHERNET) {
    *why = "InfiniBand port";
    return 0;
  }
  int v2 = -1, v2Ipv4 = -1;
  for (int i = 0; i < tableLength && v2Ipv4 < 0; ++i) {
    ibv_gid g{};
    if (lib.queryGid(ctx, static_cast<uint8_t>(port.port), i, &g) != 0 || zeroGid(g)) continue;
    if (gidType(lib, ctx, port, i) != IBV_GID_TYPE_ROCE_V2) continue;
    if (v2 < 0) v2 = i;
    if (ipv4Mapped(g)) v2Ipv4 = i;
  }
  if (v2Ipv4 >= 0) {
    *why = "the first RoCE v2 GID with an IPv4 address";
    return v2Ipv4;
  }
  if (v2 >= 0) {
    *why = "the first RoCE v2 GID (none has an IPv4 address)";
    return v2;
  }
  *why = "no RoCE v2 GID found: index 0, which is not routed between subnets";
  return 0;
}

std::shared_ptr<Device> openDevice(int index) {
  MSCCLPP_ENFORCE(index >= 0 && index < 8, ErrorCode::InvalidArgument, "InfiniBand: device index %d is not in 0..7",
                  index);
  const HcaList& hcas = hcaList();
  const std::string library = hcas.lib->name;
  if (hcas.ports.empty()) {
    MSCCLPP_THROW(ErrorCode::NotSupported, "InfiniBand: no device found (%s loaded; %s): IB%d is unavailable",
                  library.c_str(), hcas.why.c_str(), index);
  }
  if (index >= static_cast<int>(hcas.ports.size())) {
    std::string names;
    for (size_t i = 0; i < hcas.ports.size(); ++i)
      names += strFormat("%sIB%zu=%s", i ? ", " : "", i, hcas.ports[i].name().c_str());
    MSCCLPP_THROW(ErrorCode::NotSupported,
                  "InfiniBand: IB%d requested but this host has %zu HCA port(s) (%s); use "
                  "Communicator::nearestIbTransport(), or MSCCLPP_HCA_DEVICES to choose them",
                  index, hcas.ports.size(), names.c_str());
  }
  VerbsLibrary& lib = *hcas.lib;
  const HcaPort& hca = hcas.ports[static_cast<size_t>(index)];
  int n = 0;
  ibv_device** list = lib.getDeviceList(&n);
  ibv_context* ctx = nullptr;
  int openErr = ENODEV;
  for (int i = 0; list != nullptr && i < n && ctx == nullptr; ++i) {
    if (hca.device == lib.getDeviceName(list[i])) {
      ctx = lib.openDevice(list[i]);
      openErr = errno;
    }
  }
  if (list) lib.freeDeviceList(list);
  if (ctx == nullptr) throw SystemError("InfiniBand: ibv_open_device(" + hca.device + ")", openErr);
  ibv_device_attr devAttr{};
  ibv_pd* pd = nullptr;
  if (lib.queryDevice(ctx, &devAttr) != 0 || (pd = lib.allocPd(ctx)) == nullptr) {
    int e = errno;
    lib.closeDevice(ctx);
    throw SystemError("InfiniBand: ibv_query_device or ibv_alloc_pd(" + hca.device + ")", e);
  }
  auto device = std::make_shared<Device>(hcas.lib, ctx, pd, index, hca);
  if (lib.queryPort(ctx, device->port, &device->portAttr) != 0 || device->portAttr.state != IBV_PORT_ACTIVE) {
    MSCCLPP_THROW(ErrorCode::NotSupported, "InfiniBand: %s (IB%d) is no longer active", hca.name().c_str(), index);
  }
  std::string how;
  device->gidIndex = chooseGidIndex(lib, ctx, hca, device->portAttr.gid_tbl_len, &how);
  if (lib.queryGid(ctx, device->port, device->gidIndex, &device->gid) != 0)
    throw SystemError(strFormat("InfiniBand: ibv_query_gid(%s, %d)", hca.name().c_str(), device->gidIndex), errno);
  device->maxQpWr = devAttr.max_qp_wr;
  device->atomics = devAttr.atomic_cap != IBV_ATOMIC_NONE;
  MSCCLPP_INFO(LogTransport, "InfiniBand: IB%d is %s (%s, lid %u, GID index %d: %s, atomics %s)", index,
               hca.name().c_str(), device->portAttr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
               unsigned(device->portAttr.lid), device->gidIndex, how.c_str(), device->atomics ? "yes" : "no");
  return device;
}

namespace {

#if MSCCLPP_HAVE_CUDA
// A dma-buf of the device memory [base, +bytes), as GPUDirect RDMA takes it
// without the nvidia-peermem module (cuMemGetHandleForAddressRange, CUDA
// 11.7); -1 where the driver or the GPU cannot export one.
int deviceMemoryDmabuf(uint64_t base, size_t bytes) {
  using Fn = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
  static Fn fn = cudaDriverEntry<Fn>("cuMemGetHandleForAddressRange", 11070);
  int fd = -1;
  if (fn == nullptr || fn(&fd, static_cast<CUdeviceptr>(base), bytes, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) != 0)
    return -1;
  return fd;
}
#else
int deviceMemoryDmabuf(uint64_t, size_t) { return -1; }
#endif

}  // namespace

std::shared_ptr<void> registerRegion(const std::shared_ptr<Device>& device, void* ptr, size_t bytes, bool deviceMemory,
                                     IbRecord* out) {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (device->atomics) access |= IBV_ACCESS_REMOTE_ATOMIC;
  VerbsLibrary& lib = *device->lib;
  ibv_mr* mr = nullptr;
  const char* how = "ibv_reg_mr";
  if (deviceMemory && lib.regDmabufMr) {
    // The dma-buf covers whole pages; the region starts at ptr's offset in it.
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t addr = reinterpret_cast<uint64_t>(ptr);
    const uint64_t base = addr & ~(page - 1), end = (addr + bytes + page - 1) & ~(page - 1);
    int fd = deviceMemoryDmabuf(base, end - base);
    if (fd >= 0) {
      how = "ibv_reg_dmabuf_mr";
      mr = lib.regDmabufMr(device->pd, addr - base, bytes, addr, fd, access);
      int e = errno;
      close(fd);  // the region holds its own reference
      errno = e;
    }
  }
  // Host memory, or device memory through nvidia-peermem.
  if (mr == nullptr && std::strcmp(how, "ibv_reg_mr") == 0) mr = lib.regMr(device->pd, ptr, bytes, access);
  if (mr == nullptr) {
    throw SystemError(strFormat("InfiniBand: %s(%s, %p, %zu%s)", how, device->name.c_str(), ptr, bytes,
                                deviceMemory ? ", device memory" : ""),
                      errno);
  }
  if (deviceMemory) {
    static std::once_flag said;
    std::call_once(said, [&] {
      MSCCLPP_INFO(LogTransport, "InfiniBand: GPU memory registered on %s through %s (GPUDirect RDMA)",
                   device->name.c_str(),
                   std::strcmp(how, "ibv_reg_mr") == 0 ? "ibv_reg_mr, which needs nvidia-peermem" : "a dma-buf");
    });
  }
  out->address = reinterpret_cast<uint64_t>(ptr);
  out->rkey = mr->rkey;
  out->lkey = mr->lkey;
  std::shared_ptr<Device> keep = device;
  return std::shared_ptr<void>(mr, [keep](void* p) { keep->lib->deregMr(static_cast<ibv_mr*>(p)); });
}

}  // namespace mscclpp::transport::ib_verbs
