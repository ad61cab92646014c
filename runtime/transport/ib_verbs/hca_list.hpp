// Which HCA ports IB0..IB7 name. Every active port of every device
// counts, as NCCL counts its NICs; MSCCLPP_HCA_DEVICES selects among
// them with NCCL_IB_HCA's syntax. The list is made once per process.
#ifndef MSCCLPP_TRANSPORT_IB_VERBS_HCA_LIST_HPP_
#define MSCCLPP_TRANSPORT_IB_VERBS_HCA_LIST_HPP_

#include <string>
#include <vector>

#include "transport/ib_verbs/verbs_library.hpp"

namespace mscclpp::transport::ib_verbs {

// One usable port.
struct HcaPort {
  std::string device;     // "mlx5_0"
  int port = 1;           // 1-based
  std::string sysfsPath;  // the device's ibdev_path, /sys/class/infiniband/<device>
  uint8_t linkLayer = IBV_LINK_LAYER_INFINIBAND;
  // "mlx5_0:1"
  std::string name() const { return device + ":" + std::to_string(port); }
};

// MSCCLPP_HCA_DEVICES: "[^][=]name[:port][,name[:port]]...". A name is a
// prefix unless '=' makes every name exact; '^' selects all but the listed.
struct HcaFilter {
  struct Entry {
    std::string name;
    int port = -1;  // any
  };
  bool exclude = false, exact = false;
  std::vector<Entry> entries;  // empty: every port
};
// Throws InvalidArgument naming the variable and the bad entry.
HcaFilter parseHcaFilter(const std::string& text);

// The selected ports in IB order: for an inclusion list, the order of
// its entries (MSCCL++'s: IB0 is the first device named), each entry's
// matches in device-list order; otherwise device-list order. Only ports
// in the active state count.
std::vector<HcaPort> selectPorts(const std::vector<HcaPort>& active, const HcaFilter& filter);

// Every active port of this host, through `lib`, in ibv_get_device_list
// order, then port order. Empty without devices (see *why).
std::vector<HcaPort> activePorts(VerbsLibrary& lib, std::string* why);

// selectPorts(activePorts(), MSCCLPP_HCA_DEVICES) for the library
// MSCCLPP_IBVERBS_LIBRARY names; cached. Throws what loading throws.
struct HcaList {
  std::shared_ptr<VerbsLibrary> lib;
  std::vector<HcaPort> ports;
  std::string why;  // when ports is empty: what is missing
};
const HcaList& hcaList();

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_HCA_LIST_HPP_
