// RegisteredMemory: accessors, the wire form, and import on deserialize. Also the transport names
// and the shared host allocator's public entry points.
#include "comm/host_identity.hpp"
#include "comm/registered_memory_impl.hpp"
#include "comm/serial.hpp"
#include "core/enforce.hpp"
#include "transport/cuda_ipc/memory.hpp"
#include "transport/host_shm/memory.hpp"

namespace mscclpp {

namespace {

constexpr uint32_t kMemoryMagic = 0x4d52534d;  // "MSRM"
constexpr uint16_t kMemoryVersion = 1;
constexpr uint32_t kFlagDeviceMemory = 1;
constexpr size_t kMaxSegmentName = 200;

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

int ibDeviceIndex(Transport t) { return isIbTransport(t) ? static_cast<int>(t) - static_cast<int>(Transport::IB0) : -1; }

std::string TransportFlags::toString() const {
  std::string s;
  for (unsigned i = 1; i < static_cast<unsigned>(Transport::NumTransports); ++i) {
    if (has(static_cast<Transport>(i))) s += (s.empty() ? "" : "|") + std::string(kTransportNames[i]);
  }
  return s.empty() ? "none" : s;
}

void* RegisteredMemory::data() const { return impl_ ? impl_->data : nullptr; }
void* RegisteredMemory::originalDataPtr() const {
  return impl_ ? reinterpret_cast<void*>(static_cast<uintptr_t>(impl_->originalData)) : nullptr;
}
size_t RegisteredMemory::size() const { return impl_ ? static_cast<size_t>(impl_->size) : 0; }
TransportFlags RegisteredMemory::transports() const { return impl_ ? impl_->transports : TransportFlags(); }
int RegisteredMemory::rank() const { return impl_ ? impl_->ownerRank : -1; }
bool RegisteredMemory::isLocal() const { return impl_ && impl_->local; }
bool RegisteredMemory::isDeviceMemory() const { return impl_ && impl_->deviceMemory; }

std::vector<char> RegisteredMemory::serialize() const {
  MSCCLPP_ENFORCE(impl_ != nullptr, ErrorCode::InvalidUsage, "RegisteredMemory::serialize: empty registration");
  const Impl& m = *impl_;
  comm::ByteWriter w;
  w.put(kMemoryMagic);
  w.put(kMemoryVersion);
  w.put<uint16_t>(0);
  w.put(m.transports.bits());
  w.put(m.size);
  w.put(m.originalData);
  w.put(m.ownerRank);
  w.put(m.ownerPid);
  w.put(m.ownerProcessToken);
  w.put(m.ownerHostHash);
  w.put<uint32_t>(m.deviceMemory ? kFlagDeviceMemory : 0);
  if (m.transports.has(Transport::HostShm)) {
    w.putString(m.shm.segmentName);
    w.put(m.shm.segmentSize);
    w.put(m.shm.offset);
  }
  if (m.transports.has(Transport::CudaIpc)) {
    w.putBytes(m.ipc.handle.data(), m.ipc.handle.size());
    w.put(m.ipc.baseOffset);
    w.put(m.ipc.allocationSize);
    w.put(m.ipc.device);
  }
  if (m.transports.has(Transport::Ethernet)) {
    w.put(m.tcp.engineId);
    w.put(m.tcp.key);
  }
  for (int i = 0; i < 8; ++i) {
    if (!m.transports.has(static_cast<Transport>(static_cast<int>(Transport::IB0) + i))) continue;
    w.put(m.ib[i].address);
    w.put(m.ib[i].rkey);
  }
  return std::move(w.bytes());
}

RegisteredMemory RegisteredMemory::deserialize(const std::vector<char>& data) {
  comm::ByteReader r(data, "RegisteredMemory::deserialize");
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kMemoryMagic, ErrorCode::InvalidArgument,
                  "RegisteredMemory::deserialize: bad magic (not a serialised RegisteredMemory)");
  uint16_t version = r.get<uint16_t>("version");
  MSCCLPP_ENFORCE(version == kMemoryVersion, ErrorCode::InvalidArgument,
                  "RegisteredMemory::deserialize: version %u, expected %u", unsigned(version), unsigned(kMemoryVersion));
  r.get<uint16_t>("reserved");
  auto m = std::make_shared<Impl>();
  uint32_t bits = r.get<uint32_t>("transports");
  MSCCLPP_ENFORCE((bits & ~((1u << static_cast<unsigned>(Transport::NumTransports)) - 2u)) == 0,
                  ErrorCode::InvalidArgument, "RegisteredMemory::deserialize: unknown transport bits 0x%x", bits);
  m->transports = TransportFlags::fromBits(bits);
  m->size = r.get<uint64_t>("size");
  m->originalData = r.get<uint64_t>("originalData");
  m->ownerRank = r.get<int32_t>("ownerRank");
  m->ownerPid = r.get<int32_t>("ownerPid");
  m->ownerProcessToken = r.get<uint64_t>("ownerProcessToken");
  m->ownerHostHash = r.get<uint64_t>("ownerHostHash");
  uint32_t flags = r.get<uint32_t>("flags");
  MSCCLPP_ENFORCE((flags & ~kFlagDeviceMemory) == 0, ErrorCode::InvalidArgument,
                  "RegisteredMemory::deserialize: unknown flags 0x%x", flags);
  m->deviceMemory = (flags & kFlagDeviceMemory) != 0;
  if (m->transports.has(Transport::HostShm)) {
    m->shm.segmentName = r.getString("shm.segmentName", kMaxSegmentName);
    m->shm.segmentSize = r.get<uint64_t>("shm.segmentSize");
    m->shm.offset = r.get<uint64_t>("shm.offset");
  }
  if (m->transports.has(Transport::CudaIpc)) {
    r.getBytes(m->ipc.handle.data(), m->ipc.handle.size(), "ipc.handle");
    m->ipc.baseOffset = r.get<uint64_t>("ipc.baseOffset");
    m->ipc.allocationSize = r.get<uint64_t>("ipc.allocationSize");
    m->ipc.device = r.get<int32_t>("ipc.device");
  }
  if (m->transports.has(Transport::Ethernet)) {
    m->tcp.engineId = r.get<uint64_t>("tcp.engineId");
    m->tcp.key = r.get<uint64_t>("tcp.key");
  }
  for (int i = 0; i < 8; ++i) {
    if (!m->transports.has(static_cast<Transport>(static_cast<int>(Transport::IB0) + i))) continue;
    m->ib[i].address = r.get<uint64_t>("ib.address");
    m->ib[i].rkey = r.get<uint32_t>("ib.rkey");
  }
  r.expectEnd();

  comm::ProcessIdentity me = comm::thisProcess();
  bool sameProcess = m->ownerProcessToken == me.token && m->ownerPid == me.pid;
  bool sameHost = m->ownerHostHash == comm::hostIdHash(comm::computeHostId());
  const std::string what = strFormat("importing rank %d's %llu-byte memory", m->ownerRank, (unsigned long long)m->size);
  if (sameHost && m->transports.has(Transport::HostShm)) {
    m->keepAlive.push_back(transport::host_shm::importRange(m->shm, m->size, &m->data, what));
  } else if (sameHost && m->transports.has(Transport::CudaIpc)) {
    if (sameProcess) {
      // CUDA refuses to open our own handles; the original pointer is valid in this process.
      m->data = reinterpret_cast<void*>(static_cast<uintptr_t>(m->originalData));
    } else {
      m->keepAlive.push_back(transport::cuda_ipc::importRange(m->ipc, m->size, &m->data, what));
    }
  }
  return RegisteredMemory(std::move(m));
}

std::shared_ptr<void> allocSharedHostBytes(size_t bytes) { return transport::host_shm::allocate(bytes); }
bool isSharedHost(const void* ptr, size_t bytes) { return transport::host_shm::isShared(ptr, bytes); }
bool unlinkSharedHostName(const void* ptr) { return transport::host_shm::unlinkName(ptr); }

}  // namespace mscclpp
