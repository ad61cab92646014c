// The host side of semaphores: counters from the communicator's pool,
// registered for the connection's transport and exchanged with the peer.
// Both ranks of a connection build the same kind, in the same order.
#include "mscclpp/semaphore.hpp"

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator_impl.hpp"
#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/params.hpp"
#include "core/serial.hpp"

namespace mscclpp {

namespace detail {

enum class SemaphoreKind : uint8_t { Host2Device = 1, Host2Host = 2, MemoryDevice2Device = 3 };

// What every semaphore kind keeps on the host.
struct SemaphoreCounters {
  std::shared_ptr<uint64_t> inbound;   // ours; the peer or its proxy raises it
  std::shared_ptr<uint64_t> expected;  // ours, private: signals consumed by our waits
  uint64_t outbound = 0;               // signals we sent, for port and host semaphores
  RegisteredMemory localInbound;
  RegisteredMemory remoteInbound;  // the peer's inbound counter, imported
  uint64_t timeoutNs = 0;          // the communicator's timeout: its own or MSCCLPP_TIMEOUT_S, the earlier
  double timeoutSeconds = 0;
  const char* timeoutSetting = "MSCCLPP_TIMEOUT_S";  // where it came from, for messages
  std::string who;                                   // "Host2DeviceSemaphore rank 0 -> rank 1 over TCP"
};

namespace {
constexpr uint32_t kSemaphoreMagic = 0x4d45534d;  // "MSEM"
constexpr size_t kMaxSemaphoreMessage = 64 << 10;

TransportFlags counterTransport(const Connection& c, SemaphoreKind kind, const std::string& who) {
  Transport t = c.transport();
  if (kind == SemaphoreKind::MemoryDevice2Device) {
    MSCCLPP_ENFORCE(t == Transport::HostShm || t == Transport::CudaIpc, ErrorCode::InvalidArgument,
                    "%s: a memory-channel semaphore needs a SHM or IPC connection (the peer writes our counter "
                    "through a mapping)",
                    who.c_str());
  }
  return TransportFlags(t);
}
}  // namespace

const char* semaphoreKindName(SemaphoreKind kind) {
  switch (kind) {
    case SemaphoreKind::Host2Device:
      return "Host2DeviceSemaphore";
    case SemaphoreKind::Host2Host:
      return "Host2HostSemaphore";
    case SemaphoreKind::MemoryDevice2Device:
      return "MemoryDevice2DeviceSemaphore";
  }
  return "semaphore";
}

// Allocates, registers and exchanges the counters of one semaphore.
std::shared_ptr<SemaphoreCounters> setupSemaphore(Communicator& comm, const std::shared_ptr<Connection>& connection,
                                                  SemaphoreKind kind) {
  MSCCLPP_ENFORCE(connection != nullptr, ErrorCode::InvalidArgument, "%s: null connection", semaphoreKindName(kind));
  auto& m = CommunicatorAccess::impl(comm);
  m.checkAlive(semaphoreKindName(kind));
  auto s = std::make_shared<SemaphoreCounters>();
  s->who = std::string(semaphoreKindName(kind)) + " " + connection->describe();
  TransportFlags transports = counterTransport(*connection, kind, s->who);
  int tag = m.tagOf(*connection);
  int peer = connection->remoteRank();
  auto pool = m.counters();
  s->inbound = pool->allocate();
  s->expected = pool->allocate();
  s->localInbound = comm.registerMemory(s->inbound.get(), sizeof(uint64_t), transports);
  // One communicator setting bounds every wait on its
  // channels; MSCCLPP_TIMEOUT_S when it has none.
  s->timeoutSeconds = comm.timeoutSeconds();
  if (*comm.timeoutSetting()) s->timeoutSetting = comm.timeoutSetting();
  s->timeoutNs = s->timeoutSeconds > 0 ? static_cast<uint64_t>(s->timeoutSeconds * 1e9) : kNoDeadline;

  ByteWriter w;
  w.put(kSemaphoreMagic);
  w.put(static_cast<uint8_t>(kind));
  std::vector<char> mem = s->localInbound.serialize();
  w.putBytes(mem.data(), mem.size());
  m.semaphoreBootstrap->send(w.bytes(), peer, tag);
  std::vector<char> got = m.semaphoreBootstrap->recv(peer, tag, kMaxSemaphoreMessage);
  ByteReader r(got, s->who.c_str());
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kSemaphoreMagic, ErrorCode::RemoteError,
                  "%s: the peer's message is not a semaphore", s->who.c_str());
  uint8_t peerKind = r.get<uint8_t>("kind");
  MSCCLPP_ENFORCE(peerKind == static_cast<uint8_t>(kind), ErrorCode::InvalidArgument,
                  "%s: rank %d built a %s on this connection: both sides must build the same kind, in the same order",
                  s->who.c_str(), peer, semaphoreKindName(static_cast<SemaphoreKind>(peerKind)));
  std::vector<char> rest(got.begin() + 5, got.end());
  s->remoteInbound = RegisteredMemory::deserialize(rest);
  if (kind == SemaphoreKind::MemoryDevice2Device) {
    MSCCLPP_ENFORCE(s->remoteInbound.data() != nullptr, ErrorCode::InternalError,
                    "%s: the peer's counter is not mapped here", s->who.c_str());
  }
  return s;
}

}  // namespace detail

// ---- Host2DeviceSemaphore -------------------------------------------------------------------

Host2DeviceSemaphore::Host2DeviceSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection)
    : connection_(connection),
      counters_(detail::setupSemaphore(communicator, connection, detail::SemaphoreKind::Host2Device)) {}

Host2DeviceSemaphore::~Host2DeviceSemaphore() = default;

void Host2DeviceSemaphore::signal() {
  detail::SemaphoreCounters& c = *counters_;
  connection_->updateAndSync(c.remoteInbound, 0, &c.outbound, c.outbound + 1);
}

Host2DeviceSemaphore::DeviceHandle Host2DeviceSemaphore::deviceHandle() const {
  DeviceHandle h{};
  h.inboundCounter = counters_->inbound.get();
  h.expectedInboundCounter = counters_->expected.get();
  h.timeoutNs = counters_->timeoutNs;
  return h;
}

// ---- Host2HostSemaphore ---------------------------------------------------------------------

Host2HostSemaphore::Host2HostSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection)
    : connection_(connection),
      counters_(detail::setupSemaphore(communicator, connection, detail::SemaphoreKind::Host2Host)) {
  MSCCLPP_ENFORCE(communicator.device() < 0, ErrorCode::InvalidArgument,
                  "%s: host-to-host semaphores need host counters (a communicator without a device)",
                  counters_->who.c_str());
}

Host2HostSemaphore::~Host2HostSemaphore() = default;

void Host2HostSemaphore::signal() {
  detail::SemaphoreCounters& c = *counters_;
  connection_->updateAndSync(c.remoteInbound, 0, &c.outbound, c.outbound + 1);
  connection_->flush();
}

bool Host2HostSemaphore::poll() {
  uint64_t next = *counters_->expected + 1;
  // Acquire: pairs with the release that published
  // the counter after the peer's writes.
  if (__atomic_load_n(counters_->inbound.get(), __ATOMIC_ACQUIRE) < next) return false;
  *counters_->expected = next;
  return true;
}

void Host2HostSemaphore::wait(double timeoutSeconds) {
  Deadline deadline = timeoutSeconds < 0 ? Deadline(counters_->timeoutSeconds, counters_->timeoutSetting)
                                         : Deadline(timeoutSeconds, "the timeout argument of wait()");
  waitUntil([this] { return poll(); }, deadline,
            counters_->who + ": wait for signal #" + std::to_string(*counters_->expected + 1));
}

// ---- MemoryDevice2DeviceSemaphore -----------------------------------------------------------

MemoryDevice2DeviceSemaphore::MemoryDevice2DeviceSemaphore(Communicator& communicator,
                                                           std::shared_ptr<Connection> connection)
    : connection_(connection),
      counters_(detail::setupSemaphore(communicator, connection, detail::SemaphoreKind::MemoryDevice2Device)) {}

MemoryDevice2DeviceSemaphore::~MemoryDevice2DeviceSemaphore() = default;

MemoryDevice2DeviceSemaphore::DeviceHandle MemoryDevice2DeviceSemaphore::deviceHandle() const {
  DeviceHandle h{};
  h.inboundCounter = counters_->inbound.get();
  h.outboundCounter = static_cast<uint64_t*>(counters_->remoteInbound.data());
  h.expectedInboundCounter = counters_->expected.get();
  h.timeoutNs = counters_->timeoutNs;
  return h;
}

}  // namespace mscclpp
