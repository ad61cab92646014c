// The host shared-memory transport's Driver: ranks of one host map each
// other's allocSharedHost memory and connect with HostShmConnection.
#include "transport/transport.hpp"

#include "core/enforce.hpp"
#include "transport/host_shm/connection.hpp"
#include "transport/host_shm/memory.hpp"

namespace mscclpp::transport::host_shm {

namespace {
constexpr size_t kMaxSegmentName = 200;

class HostShmPending : public PendingConnection {
 public:
  explicit HostShmPending(int rank, int remoteRank) : rank_(rank), remoteRank_(remoteRank) {}
  std::shared_ptr<Connection> complete(const PeerEndpoint&) override {
    return std::make_shared<HostShmConnection>(rank_, remoteRank_);
  }

 private:
  int rank_, remoteRank_;
};

class HostShmSession : public Session {
 public:
  explicit HostShmSession(int rank) : rank_(rank) {}
  Exported exportMemory(const LocalMemory& memory) override {
    auto record = std::make_shared<HostShmRecord>();
    MSCCLPP_ENFORCE(!memory.deviceMemory && exportRange(memory.ptr, memory.size, record.get()),
                    ErrorCode::InvalidArgument, "SHM needs memory from allocSharedHost, and this range is not in one");
    return Exported{std::move(record), nullptr};
  }
  // Its operations complete when they return: the connection has no wait to bound.
  std::unique_ptr<PendingConnection> connect(int remoteRank, const TimeoutSetting&) override {
    return std::make_unique<HostShmPending>(rank_, remoteRank);
  }

 private:
  int rank_;
};

class HostShmDriver : public Driver {
 public:
  bool serves(Transport t) const override { return t == Transport::HostShm; }
  bool sameHostOnly() const override { return true; }
  void peerDied() const override { sweepIfPosixUsed(); }
  void afterPeerDeath() const override { sweepIfPosixUsed(/*wait=*/true); }
  std::shared_ptr<Session> openSession(Transport, const RankInfo& self) const override {
    return std::make_shared<HostShmSession>(self.rank);
  }
  std::shared_ptr<const ExportRecord> readRecord(Transport, ByteReader& r) const override {
    return HostShmRecord::read(r);
  }
  bool importMemory(const ExportRecord& record, const ImportContext& ctx, Imported* out) const override {
    if (!ctx.sameHost) return false;
    out->keepAlive = importRange(static_cast<const HostShmRecord&>(record), ctx.size, &out->data, ctx.what);
    return true;
  }
};

}  // namespace

void HostShmRecord::serialize(ByteWriter& w) const {
  w.putString(segmentName);
  w.put(segmentSize);
  w.put(offset);
}

std::shared_ptr<const HostShmRecord> HostShmRecord::read(ByteReader& r) {
  auto record = std::make_shared<HostShmRecord>();
  record->segmentName = r.getString("shm.segmentName", kMaxSegmentName);
  record->segmentSize = r.get<uint64_t>("shm.segmentSize");
  record->offset = r.get<uint64_t>("shm.offset");
  return record;
}

const Driver& driver() {
  static const HostShmDriver instance;
  return instance;
}

}  // namespace mscclpp::transport::host_shm
