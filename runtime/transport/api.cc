// The public types this layer defines for every transport: transport
// names and flags (mscclpp/memory.hpp), RegisteredMemory's accessors,
// and Connection's names and argument checks (mscclpp/connection.hpp).
// Every error message about a transport prints these names.
#include <string>

#include "core/enforce.hpp"
#include "mscclpp/connection.hpp"
#include "mscclpp/memory.hpp"
#include "transport/registration.hpp"

namespace mscclpp {

// ---- Transport names and flags ------------------------------------------------------------------

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

// ---- RegisteredMemory's accessors ---------------------------------------------------------------

void* RegisteredMemory::data() const { return impl_ ? impl_->data : nullptr; }
void* RegisteredMemory::originalDataPtr() const {
  return impl_ ? reinterpret_cast<void*>(static_cast<uintptr_t>(impl_->originalData)) : nullptr;
}
size_t RegisteredMemory::size() const { return impl_ ? static_cast<size_t>(impl_->size) : 0; }
TransportFlags RegisteredMemory::transports() const { return impl_ ? impl_->transports : TransportFlags(); }
int RegisteredMemory::rank() const { return impl_ ? impl_->ownerRank : -1; }
bool RegisteredMemory::isLocal() const { return impl_ && impl_->local; }
bool RegisteredMemory::isDeviceMemory() const { return impl_ && impl_->deviceMemory; }

// ---- Connection: names and argument checks ------------------------------------------------------

std::string Connection::describe() const {
  return strFormat("rank %d -> rank %d over %s", localRank_, remoteRank_, transportName(transport()));
}

std::string Connection::getTransportName() const {
  return std::string(transportName(transport())) + " -> " + transportName(remoteTransport());
}

void Connection::checkWrite(const RegisteredMemory& dst, uint64_t dstOffset, const RegisteredMemory& src,
                            uint64_t srcOffset, uint64_t size) const {
  MSCCLPP_ENFORCE(dst.valid() && src.valid(), ErrorCode::InvalidArgument, "%s: write with an empty %s memory",
                  describe().c_str(), dst.valid() ? "source" : "destination");
  MSCCLPP_ENFORCE(dstOffset <= dst.size() && size <= dst.size() - dstOffset, ErrorCode::InvalidArgument,
                  "%s: write of %llu bytes at destination offset %llu overruns rank %d's %zu-byte memory",
                  describe().c_str(), (unsigned long long)size, (unsigned long long)dstOffset, dst.rank(), dst.size());
  MSCCLPP_ENFORCE(srcOffset <= src.size() && size <= src.size() - srcOffset, ErrorCode::InvalidArgument,
                  "%s: write of %llu bytes at source offset %llu overruns the %zu-byte source memory",
                  describe().c_str(), (unsigned long long)size, (unsigned long long)srcOffset, src.size());
  MSCCLPP_ENFORCE(src.data() != nullptr, ErrorCode::InvalidArgument,
                  "%s: the source memory (rank %d) is not mapped in this process", describe().c_str(), src.rank());
  MSCCLPP_ENFORCE(dst.rank() == remoteRank_, ErrorCode::InvalidArgument,
                  "%s: the destination memory belongs to rank %d, not to the peer", describe().c_str(), dst.rank());
}

void Connection::checkUpdate(const RegisteredMemory& dst, uint64_t dstOffset) const {
  MSCCLPP_ENFORCE(dst.valid(), ErrorCode::InvalidArgument, "%s: updateAndSync with an empty destination memory",
                  describe().c_str());
  MSCCLPP_ENFORCE(dstOffset % 8 == 0 && dstOffset <= dst.size() && dst.size() - dstOffset >= 8,
                  ErrorCode::InvalidArgument,
                  "%s: updateAndSync at offset %llu needs an aligned 8-byte word inside rank %d's %zu-byte memory",
                  describe().c_str(), (unsigned long long)dstOffset, dst.rank(), dst.size());
  MSCCLPP_ENFORCE(dst.rank() == remoteRank_, ErrorCode::InvalidArgument,
                  "%s: the destination memory belongs to rank %d, not to the peer", describe().c_str(), dst.rank());
}

}  // namespace mscclpp
