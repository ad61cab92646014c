// The transports' names and flags (mscclpp/memory.hpp): what every error message about a
// transport prints.
#include <string>

#include "mscclpp/memory.hpp"

namespace mscclpp {

namespace {

const char* const kTransportNames[] = {"UNK", "IPC", "NVLS", "IB0", "IB1", "IB2", "IB3",
                                       "IB4", "IB5", "IB6",  "IB7", "TCP", "SHM"};
static_assert(sizeof(kTransportNames) / sizeof(kTransportNames[0]) == static_cast<size_t>(Transport::NumTransports),
              "one name per transport");

}  // namespace

const char* transportName(Transport t) {
  size_t i = static_cast<size_t>(t);
  return i < static_cast<size_t>(Transport::NumTransports) ? kTransportNames[i] : "UNK";
}

bool isIbTransport(Transport t) { return t >= Transport::IB0 && t <= Transport::IB7; }

int ibDeviceIndex(Transport t) {
  return isIbTransport(t) ? static_cast<int>(t) - static_cast<int>(Transport::IB0) : -1;
}

std::string TransportFlags::toString() const {
  std::string s;
  for (unsigned i = 1; i < static_cast<unsigned>(Transport::NumTransports); ++i) {
    if (has(static_cast<Transport>(i))) s += (s.empty() ? "" : "|") + std::string(kTransportNames[i]);
  }
  return s.empty() ? "none" : s;
}

}  // namespace mscclpp
