// The HCA port nearest a rank, as NCCL picks a GPU's NIC: the fewest
// PCIe links between the GPU and the HCA through their closest common
// bridge, an HCA under another root complex being farthest. A rank
// without a GPU prefers HCAs local to the CPUs it may run on. Ranks of
// one host that find several ports equally near spread over them by
// local rank.
#ifndef MSCCLPP_TRANSPORT_IB_VERBS_NIC_CHOICE_HPP_
#define MSCCLPP_TRANSPORT_IB_VERBS_NIC_CHOICE_HPP_

#include <string>
#include <vector>

#include "transport/ib_verbs/hca_list.hpp"

namespace mscclpp::transport::ib_verbs {

// Where a rank runs: its GPU's PCI device in sysfs (empty: no GPU) and
// the CPUs it may run on.
struct Locality {
  std::string gpuPciPath;  // "/sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0"
  std::vector<int> cpus;
};

// What the choice saw of one port: its PCI path and CPUs, read from sysfs.
struct PortLocality {
  std::string pciPath;  // empty: unknown
  std::vector<int> cpus;
};

// PCIe links between two PCI sysfs paths through their common bridge; a
// large number for paths under different root complexes or unknown ones.
int pciDistance(const std::string& a, const std::string& b);
// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; empty on a malformed list.
std::vector<int> parseCpuList(const std::string& text);

// The index in `ports` of the one to use; -1 when ports is empty.
// `why` says what decided it ("PCIe distance 2 from the GPU", ...).
int nearestPort(const Locality& self, const std::vector<PortLocality>& ports, int localRank, std::string* why);

// This rank's locality: the GPU `device` (-1: none) and the CPU affinity.
Locality localityOf(int device);
// A port's locality, from its device's sysfs folder.
PortLocality localityOf(const HcaPort& port);

}  // namespace mscclpp::transport::ib_verbs

#endif  // MSCCLPP_TRANSPORT_IB_VERBS_NIC_CHOICE_HPP_
