#include "executor/cuda/far_ports.hpp"

#include <exception>
#include <utility>

#include "core/format.hpp"

namespace mscclpp::exec {
namespace {

// Connection::flush's "no deadline of mine": it then applies MSCCLPP_TIMEOUT_S, none by default.
constexpr int64_t kNoFlushDeadlineUsec = -1;

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

}  // namespace

FarPorts::FarPorts(std::string name, size_t nChannels) : name_(std::move(name)), channels_(nChannels) {}

int FarPorts::addConnection(std::shared_ptr<Connection> connection) {
  connections_.push_back(std::move(connection));
  written_.push_back(false);
  return static_cast<int>(connections_.size() - 1);
}

// In FIFO order on the channel's connection, so a signal reaches the peer
// after the puts before it. The source is device memory the kernel wrote
// before it pushed the request; the transport copies it out (TCP) or the
// NIC reads it (IB).
std::string FarPorts::perform(const TriggerFields& f, const std::vector<ContextImage::MemoryEntry>& table) {
  Channel& ch = channels_.at(f.channelId);
  Connection& conn = *connections_.at(static_cast<size_t>(ch.connection));
  const char* op = "put";
  try {
    if (f.type & TriggerPut) {
      if (f.srcMemoryId >= kFirstRemoteMemoryId || f.dstMemoryId < kFirstRemoteMemoryId ||
          f.dstMemoryId >= memories_.size() || memories_[f.dstMemoryId].owner != ch.peer ||
          !memories_[f.srcMemoryId].region.valid() || !memories_[f.dstMemoryId].region.valid()) {
        return strFormat(
            "%s: put on port channel %u (to rank %d on another host) names memory ids %u -> %u; the source must be "
            "this rank's input/output/scratch (0-2) and the destination a remote buffer of rank %d",
            name_.c_str(), f.channelId, ch.peer, f.srcMemoryId, f.dstMemoryId, ch.peer);
      }
      const Memory& s = memories_[f.srcMemoryId];
      const Memory& d = memories_[f.dstMemoryId];
      const uint64_t sBytes = table.at(f.srcMemoryId).bytes, dBytes = table.at(f.dstMemoryId).bytes;
      if (f.srcOffset + f.size > sBytes || f.dstOffset + f.size > dBytes || f.srcOffset + f.size < f.srcOffset ||
          f.dstOffset + f.size < f.dstOffset) {
        return strFormat(
            "%s: put on port channel %u of %llu bytes from memory %u offset %llu (%llu bytes) to rank %d's memory %u "
            "offset %llu (%llu bytes) is out of bounds",
            name_.c_str(), f.channelId, ull(f.size), f.srcMemoryId, ull(f.srcOffset), ull(sBytes), ch.peer,
            f.dstMemoryId, ull(f.dstOffset), ull(dBytes));
      }
      if (f.size > 0) {
        conn.write(d.region, d.offset + f.dstOffset, s.region, s.offset + f.srcOffset, f.size);
        written_[static_cast<size_t>(ch.connection)] = true;
      }
    }
    if (f.type & TriggerSignal) {
      op = "signal";
      conn.updateAndSync(ch.peerRegion, ch.peerCounterOffset, &ch.outbound, ch.outbound + 1);
      written_[static_cast<size_t>(ch.connection)] = true;
    }
  } catch (const std::exception& e) {
    return strFormat("%s: %s on port channel %u to rank %d (host %s) failed: %s", name_.c_str(), op, f.channelId,
                     ch.peer, ch.peerHost.c_str(), e.what());
  }
  return std::string();
}

std::string FarPorts::flush(double timeoutSeconds) {
  for (size_t i = 0; i < connections_.size(); ++i) {
    if (!written_[i]) continue;
    try {
      connections_[i]->flush(timeoutSeconds <= 0 ? kNoFlushDeadlineUsec : static_cast<int64_t>(timeoutSeconds * 1e6));
    } catch (const std::exception& e) {
      return strFormat("%s: flush of the connection to rank %d failed: %s", name_.c_str(),
                       connections_[i]->remoteRank(), e.what());
    }
    written_[i] = false;
  }
  return std::string();
}

}  // namespace mscclpp::exec
