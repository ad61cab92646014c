// The parts of Connection every transport shares: names and argument checks.
#include "mscclpp/connection.hpp"

#include "core/enforce.hpp"

namespace mscclpp {

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
