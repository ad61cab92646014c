// The InfiniBand transport's Driver, one for IB0..IB7. A Session opens
// HCA number <n> and registers memory regions on it; connections are
// reliable-connected queue pairs. rdma-core is loaded with dlopen.
#include "transport/transport.hpp"

#include "core/params.hpp"
#include "transport/ib_verbs/connection.hpp"
#include "transport/ib_verbs/memory.hpp"

namespace mscclpp::transport::ib_verbs {

namespace {

class IbPending : public PendingConnection {
 public:
  IbPending(std::shared_ptr<QueuePair> qp, int rank, int remoteRank, Transport transport, const TimeoutSetting& timeout)
      : qp_(std::move(qp)), rank_(rank), remoteRank_(remoteRank), transport_(transport), timeout_(timeout) {}
  std::vector<char> localEndpoint() const override { return localQpInfo(*qp_); }
  std::shared_ptr<Connection> complete(const PeerEndpoint& peer) override {
    return makeConnection(qp_, peer.payload, rank_, remoteRank_, transport_, timeout_);
  }

 private:
  std::shared_ptr<QueuePair> qp_;
  int rank_, remoteRank_;
  Transport transport_;
  TimeoutSetting timeout_;
};

class IbSession : public Session {
 public:
  IbSession(Transport transport, int rank)
      : transport_(transport), rank_(rank), device_(openDevice(ibDeviceIndex(transport), params::ibverbsLibrary())) {}
  Exported exportMemory(const LocalMemory& memory) override {
    auto record = std::make_shared<IbRecord>();
    std::shared_ptr<void> region = registerRegion(device_, memory.ptr, memory.size, record.get());
    return Exported{std::move(record), std::move(region)};
  }
  std::unique_ptr<PendingConnection> connect(int remoteRank, const TimeoutSetting& timeout) override {
    return std::make_unique<IbPending>(createQueuePair(device_), rank_, remoteRank, transport_, timeout);
  }

 private:
  Transport transport_;
  int rank_;
  std::shared_ptr<Device> device_;
};

class IbDriver : public Driver {
 public:
  bool serves(Transport t) const override { return isIbTransport(t); }
  std::shared_ptr<Session> openSession(Transport t, const RankInfo& self) const override {
    return std::make_shared<IbSession>(t, self.rank);
  }
  std::shared_ptr<const ExportRecord> readRecord(Transport, ByteReader& r) const override { return IbRecord::read(r); }
};

}  // namespace

void IbRecord::serialize(ByteWriter& w) const {
  w.put(address);
  w.put(rkey);
}

std::shared_ptr<const IbRecord> IbRecord::read(ByteReader& r) {
  auto record = std::make_shared<IbRecord>();
  record->address = r.get<uint64_t>("ib.address");
  record->rkey = r.get<uint32_t>("ib.rkey");
  return record;
}

const Driver& driver() {
  static const IbDriver instance;
  return instance;
}

}  // namespace mscclpp::transport::ib_verbs
