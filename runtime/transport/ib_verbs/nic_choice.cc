#include "transport/ib_verbs/nic_choice.hpp"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/format.hpp"
#include "mscclpp_config.h"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp::transport::ib_verbs {

namespace {
constexpr int kFar = 1 << 20;

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    std::string c = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (!c.empty()) out.push_back(c);
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  return out;
}

// The index of the root complex ("pci0000:00") in a sysfs device path, or -1.
int rootIndex(const std::vector<std::string>& c) {
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].compare(0, 3, "pci") == 0 && c[i].find(':') != std::string::npos) return static_cast<int>(i);
  return -1;
}

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

std::string readLine(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}
}  // namespace

int pciDistance(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return kFar;
  std::vector<std::string> x = components(a), y = components(b);
  const int rx = rootIndex(x), ry = rootIndex(y);
  if (rx < 0 || ry < 0 || rx != ry || x[static_cast<size_t>(rx)] != y[static_cast<size_t>(ry)]) return kFar;
  size_t common = 0;
  while (common < x.size() && common < y.size() && x[common] == y[common]) ++common;
  return static_cast<int>((x.size() - common) + (y.size() - common));
}

std::vector<int> parseCpuList(const std::string& text) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? text.size() : comma + 1;
    int lo = 0, hi = 0;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%d-%d%c", &lo, &hi, &tail) == 2 && lo <= hi) {
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    } else if (std::sscanf(item.c_str(), "%d%c", &lo, &tail) == 1) {
      out.push_back(lo);
    } else {
      return {};
    }
  }
  return out;
}

int nearestPort(const Locality& self, const std::vector<PortLocality>& ports, int localRank, std::string* why) {
  if (ports.empty()) return -1;
  std::vector<int> score(ports.size(), 0);
  std::string basis;
  if (!self.gpuPciPath.empty()) {
    for (size_t i = 0; i < ports.size(); ++i) score[i] = pciDistance(self.gpuPciPath, ports[i].pciPath);
    basis = "PCIe distance from the GPU";
  } else if (!self.cpus.empty()) {
    // 0: the port's CPUs include one this rank may run on.
    for (size_t i = 0; i < ports.size(); ++i) {
      bool local = false;
      for (int c : ports[i].cpus) local = local || std::find(self.cpus.begin(), self.cpus.end(), c) != self.cpus.end();
      score[i] = local ? 0 : 1;
    }
    basis = "HCAs local to this rank's CPUs";
  }
  const int best = *std::min_element(score.begin(), score.end());
  std::vector<int> nearest;
  for (size_t i = 0; i < ports.size(); ++i)
    if (score[i] == best) nearest.push_back(static_cast<int>(i));
  const int pick = nearest[static_cast<size_t>(std::max(localRank, 0)) % nearest.size()];
  if (why) {
    std::string b = basis.empty() ? "no locality known" : basis;
    if (!basis.empty() && best >= kFar) b += " (none shares its root complex)";
    *why = strFormat("%s; %zu of %zu port(s) as near, taken by local rank %d", b.c_str(), nearest.size(), ports.size(),
                     localRank);
  }
  return pick;
}

Locality localityOf(int device) {
  Locality l;
#if MSCCLPP_HAVE_CUDA
  int domain = 0, bus = 0, dev = 0;
  if (device >= 0 && cudaDeviceGetAttribute(&domain, cudaDevAttrPciDomainId, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus, cudaDevAttrPciBusId, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&dev, cudaDevAttrPciDeviceId, device) == cudaSuccess) {
    l.gpuPciPath = realPath(strFormat("/sys/bus/pci/devices/%04x:%02x:%02x.0", domain, bus, dev));
  } else {
    (void)cudaGetLastError();
  }
#else
  (void)device;
#endif
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) l.cpus.push_back(c);
  }
  return l;
}

PortLocality localityOf(const HcaPort& port) {
  PortLocality l;
  l.pciPath = realPath(port.sysfsPath + "/device");
  if (!l.pciPath.empty()) l.cpus = parseCpuList(readLine(l.pciPath + "/local_cpulist"));
  return l;
}

}  // namespace mscclpp::transport::ib_verbs
