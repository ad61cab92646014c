// The table of transports, the role of NCCL's ncclTransports[]:
// the only place that names them all. Order matters: registrations
// list their records in it, and an importer maps through the first
// transport that can, shared memory before CUDA IPC.
#include "transport/tcp/driver.hpp"
#include "transport/transport.hpp"

namespace mscclpp::transport {

// Each transport's Driver, defined in its driver.cc.
namespace host_shm {
const Driver& driver();
}
namespace cuda_ipc {
const Driver& driver();
}
namespace ib_verbs {
const Driver& driver();
}

const std::vector<const Driver*>& drivers() {
  static const std::vector<const Driver*> table = {&host_shm::driver(), &cuda_ipc::driver(), &tcp::driver(),
                                                   &ib_verbs::driver()};
  return table;
}

const Driver* driverFor(Transport t) {
  for (const Driver* d : drivers()) {
    if (d->serves(t)) return d;
  }
  return nullptr;
}

const std::vector<Transport>& transportsInOrder() {
  static const std::vector<Transport> order = [] {
    std::vector<Transport> v;
    for (const Driver* d : drivers()) {
      for (unsigned i = 1; i < static_cast<unsigned>(Transport::NumTransports); ++i) {
        if (d->serves(static_cast<Transport>(i))) v.push_back(static_cast<Transport>(i));
      }
    }
    return v;
  }();
  return order;
}

}  // namespace mscclpp::transport
