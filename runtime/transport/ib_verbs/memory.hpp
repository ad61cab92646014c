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

// An opened HCA: context, protection domain and the port we use.
class Device {
 public:
  Device(std::shared_ptr<VerbsLibrary> lib, ibv_context* context, ibv_pd* pd, std::string name, uint8_t port,
         const ibv_port_attr& portAttr, const ibv_gid& gid, int maxQpWr);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::shared_ptr<VerbsLibrary> lib;
  ibv_context* const context;
  ibv_pd* const pd;
  const std::string name;
  const uint8_t port;
  const ibv_port_attr portAttr;
  const ibv_gid gid;
  const int maxQpWr;
};

// Opens HCA number `index`, IB0..IB7 being 0..7 in ibv_get_device_list
// order, on its first active port. Errors name what is missing: the
// library, a symbol, any device, device `index`, an active port. They
// are NotSupported, or SystemError for a failing verbs call.
std::shared_ptr<Device> openDevice(int index, const std::string& libraryName);
std::string deviceName(const Device& device);

// Registers [ptr, +bytes) for local and remote RDMA
// access on the device. The handle deregisters it
// and keeps the device open until then.
std::shared_ptr<void> registerRegion(const std::shared_ptr<Device>& device, void* ptr, size_t bytes, IbRecord* out);

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_MEMORY_HPP_
