#include "transport/ib_verbs/memory.hpp"

#include <cerrno>
#include <cstring>

#include "core/enforce.hpp"
#include "core/logger.hpp"

namespace mscclpp::transport::ib_verbs {

Device::Device(std::shared_ptr<VerbsLibrary> l, ibv_context* c, ibv_pd* p, std::string n, uint8_t portNum,
               const ibv_port_attr& attr, const ibv_gid& g, int maxWr)
    : lib(std::move(l)), context(c), pd(p), name(std::move(n)), port(portNum), portAttr(attr), gid(g), maxQpWr(maxWr) {}

Device::~Device() {
  if (pd) lib->deallocPd(pd);
  if (context) lib->closeDevice(context);
}

std::string deviceName(const Device& device) { return device.name; }

std::shared_ptr<Device> openDevice(int index, const std::string& libraryName) {
  MSCCLPP_ENFORCE(index >= 0 && index < 8, ErrorCode::InvalidArgument, "InfiniBand: device index %d is not in 0..7",
                  index);
  std::shared_ptr<VerbsLibrary> lib = loadVerbsLibrary(libraryName);
  int n = 0;
  ibv_device** list = lib->getDeviceList(&n);
  if (list == nullptr || n <= 0) {
    int e = errno;
    if (list) lib->freeDeviceList(list);
    std::string how = list ? std::string("returned 0 devices") : std::string("failed: ") + std::strerror(e);
    MSCCLPP_THROW(ErrorCode::NotSupported,
                  "InfiniBand: no device found (%s loaded; ibv_get_device_list %s): IB%d is "
                  "unavailable",
                  libraryName.c_str(), how.c_str(), index);
  }
  std::string names;
  for (int i = 0; i < n; ++i) names += (i ? ", " : "") + std::string(lib->getDeviceName(list[i]));
  if (index >= n) {
    lib->freeDeviceList(list);
    MSCCLPP_THROW(ErrorCode::NotSupported, "InfiniBand: IB%d requested but only %d device(s) exist (%s)", index, n,
                  names.c_str());
  }
  std::string name = lib->getDeviceName(list[index]);
  ibv_context* ctx = lib->openDevice(list[index]);
  int openErr = errno;
  lib->freeDeviceList(list);
  if (ctx == nullptr) throw SystemError("InfiniBand: ibv_open_device(" + name + ")", openErr);
  ibv_device_attr devAttr{};
  if (lib->queryDevice(ctx, &devAttr) != 0) {
    int e = errno;
    lib->closeDevice(ctx);
    throw SystemError("InfiniBand: ibv_query_device(" + name + ")", e);
  }
  uint8_t port = 0;
  ibv_port_attr portAttr{};
  for (uint8_t p = 1; p <= devAttr.phys_port_cnt; ++p) {
    ibv_port_attr a{};
    if (lib->queryPort(ctx, p, &a) == 0 && a.state == IBV_PORT_ACTIVE) {
      port = p;
      portAttr = a;
      break;
    }
  }
  if (port == 0) {
    lib->closeDevice(ctx);
    MSCCLPP_THROW(ErrorCode::NotSupported, "InfiniBand: device %s (IB%d) has no active port among %u", name.c_str(),
                  index, unsigned(devAttr.phys_port_cnt));
  }
  ibv_gid gid{};
  lib->queryGid(ctx, port, 0, &gid);  // RoCE needs it; IB routes by LID
  ibv_pd* pd = lib->allocPd(ctx);
  if (pd == nullptr) {
    int e = errno;
    lib->closeDevice(ctx);
    throw SystemError("InfiniBand: ibv_alloc_pd(" + name + ")", e);
  }
  MSCCLPP_INFO(LogTransport, "InfiniBand: IB%d is %s port %u (lid %u)", index, name.c_str(), unsigned(port),
               unsigned(portAttr.lid));
  return std::make_shared<Device>(lib, ctx, pd, name, port, portAttr, gid, devAttr.max_qp_wr);
}

std::shared_ptr<void> registerRegion(const std::shared_ptr<Device>& device, void* ptr, size_t bytes, IbRecord* out) {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* mr = device->lib->regMr(device->pd, ptr, bytes, access);
  if (mr == nullptr) {
    throw SystemError(strFormat("InfiniBand: ibv_reg_mr(%s, %p, %zu)", device->name.c_str(), ptr, bytes), errno);
  }
  out->address = reinterpret_cast<uint64_t>(ptr);
  out->rkey = mr->rkey;
  out->lkey = mr->lkey;
  std::shared_ptr<Device> keep = device;
  return std::shared_ptr<void>(mr, [keep](void* p) { keep->lib->deregMr(static_cast<ibv_mr*>(p)); });
}

}  // namespace mscclpp::transport::ib_verbs
