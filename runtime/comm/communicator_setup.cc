// Communicator setup calls: registerMemory and
// its cache, sendMemory, recvMemory and connect.
#include <cstring>

#include "comm/communicator_impl.hpp"
#include "comm/host_identity.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/serial.hpp"
#include "transport/cuda_ipc/memory.hpp"
#include "transport/device_memory.hpp"
#include "transport/registration.hpp"
#include "transport/transport.hpp"

namespace mscclpp {

namespace {

constexpr uint32_t kEndpointMagic = 0x5045434d;  // "MCEP"

struct EndpointHeader {
  Transport transport = Transport::Unknown;
  int32_t rank = -1;
  uint64_t hostHash = 0;
  int32_t device = -1;
  std::vector<char> payload;
};

std::vector<char> encodeEndpoint(const EndpointHeader& h) {
  ByteWriter w;
  w.put(kEndpointMagic);
  w.put(static_cast<uint8_t>(h.transport));
  w.put(h.rank);
  w.put(h.hostHash);
  w.put(h.device);
  w.put(static_cast<uint32_t>(h.payload.size()));
  w.putBytes(h.payload.data(), h.payload.size());
  return std::move(w.bytes());
}

EndpointHeader decodeEndpoint(const std::vector<char>& bytes, const std::string& what) {
  ByteReader r(bytes, what.c_str());
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kEndpointMagic, ErrorCode::RemoteError,
                  "%s: the peer's message is not a connection endpoint (a sendMemory/connect mismatch on this tag?)",
                  what.c_str());
  EndpointHeader h;
  uint8_t t = r.get<uint8_t>("transport");
  MSCCLPP_ENFORCE(t < static_cast<uint8_t>(Transport::NumTransports), ErrorCode::RemoteError,
                  "%s: unknown transport %u", what.c_str(), unsigned(t));
  h.transport = static_cast<Transport>(t);
  h.rank = r.get<int32_t>("rank");
  h.hostHash = r.get<uint64_t>("hostHash");
  h.device = r.get<int32_t>("device");
  uint32_t n = r.get<uint32_t>("payloadSize");
  h.payload.resize(n);
  r.getBytes(h.payload.data(), n, "payload");
  r.expectEnd();
  return h;
}

// The transports some driver carries: what registerMemory and connect accept.
uint32_t transportsWithDriver() {
  TransportFlags all;
  for (Transport t : transport::transportsInOrder()) all |= t;
  return all.bits();
}

}  // namespace

RegisteredMemory Communicator::registerMemory(void* ptr, size_t size, TransportFlags transports) {
  Impl& m = *pimpl_;
  m.checkAlive("registerMemory");
  MSCCLPP_ENFORCE(ptr != nullptr && size > 0, ErrorCode::InvalidArgument,
                  "%s: registerMemory(%p, %zu): a null pointer or zero size", m.who().c_str(), ptr, size);
  const uint32_t allowed = transportsWithDriver();
  MSCCLPP_ENFORCE(transports.any() && (transports.bits() & ~allowed) == 0, ErrorCode::InvalidArgument,
                  "%s: registerMemory(%p, %zu): transports %s: choose among SHM, IPC, TCP, IB0..IB7 (NVLS buffers are "
                  "bound through SwitchChannel)",
                  m.who().c_str(), ptr, size, transports.toString().c_str());
  auto cacheKey = std::make_tuple(reinterpret_cast<uintptr_t>(ptr), size, transports.bits(),
                                  transport::cuda_ipc::allocationId(ptr));
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    auto it = m.registrations.find(cacheKey);
    if (it != m.registrations.end()) {
      if (auto alive = it->second.lock()) return RegisteredMemoryAccess::make(alive);
    }
  }
  auto r = std::make_shared<RegisteredMemoryAccess::Impl>();
  comm::ProcessIdentity me = comm::thisProcess();
  r->data = ptr;
  r->originalData = reinterpret_cast<uintptr_t>(ptr);
  r->size = size;
  r->transports = transports;
  r->ownerRank = m.rank;
  r->ownerPid = me.pid;
  r->ownerProcessToken = me.token;
  r->ownerHostHash = m.hostHash;
  r->local = true;
  r->deviceMemory = transport::isDevicePointer(ptr);
  const std::string what =
      strFormat("%s: registerMemory(%p, %zu, %s)", m.who().c_str(), ptr, size, transports.toString().c_str());
  for (Transport t : transport::transportsInOrder()) {
    if (!transports.has(t)) continue;
    try {
      transport::Exported e = m.session(t)->exportMemory(transport::LocalMemory{ptr, size, r->deviceMemory});
      r->records[static_cast<size_t>(t)] = std::move(e.record);
      if (e.keepAlive) r->keepAlive.push_back(std::move(e.keepAlive));
    } catch (const Error& e) {
      throw Error(e.code(), what + ": " + e.what());
    }
  }
  std::lock_guard<std::mutex> lock(m.mutex);
  m.registrations[cacheKey] = r;
  ++m.registrationCount;
  // Drop expired cache entries now and then so the
  // map does not grow with dead registrations.
  if ((m.registrationCount & 255) == 0) {
    for (auto it = m.registrations.begin(); it != m.registrations.end();) {
      it = it->second.expired() ? m.registrations.erase(it) : std::next(it);
    }
  }
  return RegisteredMemoryAccess::make(std::move(r));
}

void Communicator::sendMemory(const RegisteredMemory& memory, int remoteRank, int tag) {
  Impl& m = *pimpl_;
  m.checkAlive("sendMemory");
  m.checkPeer(remoteRank, "sendMemory");
  MSCCLPP_ENFORCE(memory.valid(), ErrorCode::InvalidArgument, "%s: sendMemory to rank %d: empty registration",
                  m.who().c_str(), remoteRank);
  m.bootstrap->send(memory.serialize(), remoteRank, tag);
}

std::shared_future<RegisteredMemory> Communicator::recvMemory(int remoteRank, int tag) {
  Impl& m = *pimpl_;
  m.checkAlive("recvMemory");
  m.checkPeer(remoteRank, "recvMemory");
  auto receiver = m.receiver(remoteRank, tag);
  uint64_t ticket = receiver->post();
  return std::async(std::launch::deferred,
                    [receiver, ticket]() { return RegisteredMemory::deserialize(receiver->take(ticket)); })
      .share();
}

std::shared_future<std::shared_ptr<Connection>> Communicator::connect(int remoteRank, int tag, Transport transport) {
  std::shared_ptr<Impl> self = pimpl_;
  Impl& m = *self;
  m.checkAlive("connect");
  m.checkPeer(remoteRank, "connect");
  const std::string what =
      strFormat("%s: connect to rank %d over %s (tag %d)", m.who().c_str(), remoteRank, transportName(transport), tag);
  const transport::Driver* driver = transport::driverFor(transport);
  MSCCLPP_ENFORCE(driver != nullptr, ErrorCode::InvalidArgument,
                  "%s: not a connection transport (use SHM, IPC, TCP or IB0..IB7; NVLS is a SwitchChannel)",
                  what.c_str());
  EndpointHeader local;
  local.transport = transport;
  local.rank = m.rank;
  local.hostHash = m.hostHash;
  local.device = m.device;
  std::shared_ptr<transport::PendingConnection> pending;
  try {
    pending = m.session(transport)->connect(remoteRank, timeoutOf(*this));
    local.payload = pending->localEndpoint();
  } catch (const Error& e) {
    throw Error(e.code(), what + ": " + e.what());
  }
  m.bootstrap->send(encodeEndpoint(local), remoteRank, tag);
  auto receiver = m.receiver(remoteRank, tag);
  uint64_t ticket = receiver->post();
  return std::async(std::launch::deferred,
                    [self, receiver, ticket, remoteRank, tag, transport, what, driver, pending]() {
                      Impl& m = *self;
                      std::shared_ptr<Connection> conn;
                      try {
                        EndpointHeader peer = decodeEndpoint(receiver->take(ticket), what);
                        // Two IB ends may be on different HCAs: the connection exchanges which.
                        const bool sameKind =
                            peer.transport == transport || (isIbTransport(peer.transport) && isIbTransport(transport));
                        MSCCLPP_ENFORCE(sameKind, ErrorCode::InvalidArgument,
                                        "rank %d connected with %s on this tag: both sides must use the same transport",
                                        remoteRank, transportName(peer.transport));
                        MSCCLPP_ENFORCE(peer.rank == remoteRank, ErrorCode::RemoteError,
                                        "the endpoint came from rank %d", peer.rank);
                        if (driver->sameHostOnly()) {
                          MSCCLPP_ENFORCE(peer.hostHash == m.hostHash, ErrorCode::InvalidArgument,
                                          "rank %d is on host '%s', not on this host '%s': %s needs both on one host",
                                          remoteRank, m.hostIds[remoteRank].c_str(), m.hostId.c_str(),
                                          transportName(transport));
                        }
                        conn = pending->complete(transport::PeerEndpoint{peer.rank, peer.device, peer.payload});
                      } catch (const Error& e) {
                        throw Error(e.code(), what + ": " + e.what());
                      }
                      {
                        std::lock_guard<std::mutex> lock(m.mutex);
                        m.connectionTags[conn.get()] = tag;
                      }
                      MSCCLPP_INFO(LogInit, "%s: %s", what.c_str(), conn->describe().c_str());
                      return conn;
                    })
      .share();
}

}  // namespace mscclpp
