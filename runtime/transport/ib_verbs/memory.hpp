// InfiniBand devices and memory regions, through rdma-core
// loaded at run time from MSCCLPP_IBVERBS_LIBRARY. The build
// needs only the headers, and a machine without rdma-core or
// an HCA gets a precise error instead of a crash.
// Thread-safety: a Device may be shared by
// threads; rdma-core serialises registrations.
#ifndef MSCCLPP_TRANSPORT_IB_VERBS_MEMORY_HPP_
#define MSCCLPP_TRANSPORT_IB_VERBS_MEMORY_HPP_

#include <memory>
#include <string>

#include "transport/ib_verbs/hca_list.hpp"
#include "transport/ib_verbs/verbs_library.hpp"
#include "transport/transport.hpp"

namespace mscclpp::transport::ib_verbs {

// An InfiniBand memory region: the IB<n> record of a registration.
struct IbRecord : ExportRecord {
  uint64_t address = 0;
  uint32_t rkey = 0;
  uint32_t lkey = 0;  // meaningful on the owner only (not serialised)

  void serialize(ByteWriter& w) const override;
  static std::shared_ptr<const IbRecord> read(ByteReader& r);
};

// An opened HCA port: context, protection domain, the port's
// attributes and the GID this rank's queue pairs use.
class Device {
 public:
  Device(std::shared_ptr<VerbsLibrary> lib, ibv_context* context, ibv_pd* pd, int index, const HcaPort& port);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::shared_ptr<VerbsLibrary> lib;
  ibv_context* const context;
  ibv_pd* const pd;
  const int index;         // n of IBn
  const std::string name;  // "mlx5_0:1"
  const uint8_t port;
  ibv_port_attr portAttr{};
  ibv_gid gid{};
  int gidIndex = 0;
  int maxQpWr = 0;
  bool atomics = false;  // the HCA executes RDMA atomics (atomic_cap is not NONE)
};

// Opens IBn: port `index` of hcaList(). Errors name what is missing: the
// library, a symbol, any device, an active port, IBn. They are
// NotSupported, or SystemError for a failing verbs call.
std::shared_ptr<Device> openDevice(int index);
std::string deviceName(const Device& device);

// The GID index a RoCE port's queue pairs use (MSCCLPP_IB_GID_INDEX,
// else the first RoCE v2 GID with an IPv4-mapped address, else the first
// RoCE v2 one, else 0); 0 on InfiniBand ports. *why: how it was chosen.
int chooseGidIndex(VerbsLibrary& lib, ibv_context* ctx, const HcaPort& port, int tableLength, std::string* why);

// Registers [ptr, +bytes) for local and remote RDMA access on the
// device; device memory through a dma-buf where the CUDA driver gives
// one. The handle deregisters it and keeps the device open until then.
std::shared_ptr<void> registerRegion(const std::shared_ptr<Device>& device, void* ptr, size_t bytes, bool deviceMemory,
                                     IbRecord* out);

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_MEMORY_HPP_
