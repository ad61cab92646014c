// What every semaphore kind shares on the host: our inbound and expected counters (from the
// communicator's counter pool), the registration of the inbound counter for the connection's
// transport, and the peer's inbound counter received over the bootstrap.
#ifndef MSCCLPP_CHANNEL_SEMAPHORE_SETUP_HPP_
#define MSCCLPP_CHANNEL_SEMAPHORE_SETUP_HPP_

#include <cstdint>
#include <memory>
#include <string>

#include "mscclpp/communicator.hpp"
#include "mscclpp/connection.hpp"

namespace mscclpp::detail {

enum class SemaphoreKind : uint8_t { Host2Device = 1, Host2Host = 2, MemoryDevice2Device = 3 };
const char* semaphoreKindName(SemaphoreKind kind);

struct SemaphoreCounters {
  std::shared_ptr<uint64_t> inbound;   // ours; the peer (or its proxy) raises it
  std::shared_ptr<uint64_t> expected;  // ours, private: signals consumed by our waits
  uint64_t outbound = 0;               // host side: signals we sent (port and host semaphores)
  RegisteredMemory localInbound;
  RegisteredMemory remoteInbound;  // the peer's inbound counter, imported
  uint64_t timeoutNs = 0;          // the communicator's timeout: its own or MSCCLPP_TIMEOUT_S, the earlier
  double timeoutSeconds = 0;
  const char* timeoutSetting = "MSCCLPP_TIMEOUT_S";  // where it came from, for messages
  std::string who;                                   // "Host2DeviceSemaphore rank 0 -> rank 1 over TCP"
};

// Allocates, registers and exchanges. Both ranks call it for the same connection, with the same kind.
std::shared_ptr<SemaphoreCounters> setupSemaphore(Communicator& comm, const std::shared_ptr<Connection>& connection,
                                                  SemaphoreKind kind);

}  // namespace mscclpp::detail

#endif  // MSCCLPP_CHANNEL_SEMAPHORE_SETUP_HPP_
