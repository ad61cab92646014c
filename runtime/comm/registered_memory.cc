// RegisteredMemory's wire form: the facts every transport shares,
// then one record per transport, written and read by that transport.
// deserialize maps the memory through the first transport that can.
// The accessors live in the transport layer (transport/api.cc).
#include "comm/host_identity.hpp"
#include "core/enforce.hpp"
#include "core/serial.hpp"
#include "transport/registration.hpp"
#include "transport/transport.hpp"

namespace mscclpp {

namespace {

constexpr uint32_t kMemoryMagic = 0x4d52534d;  // "MSRM"
constexpr uint16_t kMemoryVersion = 1;
constexpr uint32_t kFlagDeviceMemory = 1;

}  // namespace

std::vector<char> RegisteredMemory::serialize() const {
  MSCCLPP_ENFORCE(impl_ != nullptr, ErrorCode::InvalidUsage, "RegisteredMemory::serialize: empty registration");
  const Impl& m = *impl_;
  ByteWriter w;
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
  for (Transport t : transport::transportsInOrder()) {
    if (!m.transports.has(t)) continue;
    const transport::ExportRecord* record = m.records[static_cast<size_t>(t)].get();
    MSCCLPP_ENFORCE(record != nullptr, ErrorCode::InternalError,
                    "RegisteredMemory::serialize: no %s record in a registration for %s", transportName(t),
                    m.transports.toString().c_str());
    record->serialize(w);
  }
  return std::move(w.bytes());
}

RegisteredMemory RegisteredMemory::deserialize(const std::vector<char>& data) {
  ByteReader r(data, "RegisteredMemory::deserialize");
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kMemoryMagic, ErrorCode::InvalidArgument,
                  "RegisteredMemory::deserialize: bad magic (not a serialised RegisteredMemory)");
  uint16_t version = r.get<uint16_t>("version");
  MSCCLPP_ENFORCE(version == kMemoryVersion, ErrorCode::InvalidArgument,
                  "RegisteredMemory::deserialize: version %u, expected %u", unsigned(version),
                  unsigned(kMemoryVersion));
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
  for (Transport t : transport::transportsInOrder()) {
    if (m->transports.has(t)) m->records[static_cast<size_t>(t)] = transport::driverFor(t)->readRecord(t, r);
  }
  r.expectEnd();

  comm::ProcessIdentity me = comm::thisProcess();
  transport::ImportContext ctx;
  ctx.sameProcess = m->ownerProcessToken == me.token && m->ownerPid == me.pid;
  ctx.sameHost = m->ownerHostHash == comm::hostIdHash(comm::computeHostId());
  ctx.size = m->size;
  ctx.originalData = m->originalData;
  ctx.what = strFormat("importing rank %d's %llu-byte memory", m->ownerRank, (unsigned long long)m->size);
  for (Transport t : transport::transportsInOrder()) {
    if (!m->transports.has(t)) continue;
    transport::Imported imported;
    if (!transport::driverFor(t)->importMemory(*m->records[static_cast<size_t>(t)], ctx, &imported)) continue;
    m->data = imported.data;
    if (imported.keepAlive) m->keepAlive.push_back(std::move(imported.keepAlive));
    break;
  }
  return RegisteredMemoryAccess::make(std::move(m));
}

}  // namespace mscclpp
