#include "transport/tcp/driver.hpp"

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/net/net_interface.hpp"
#include "transport/tcp/connection.hpp"
#include "transport/tcp/memory.hpp"

namespace mscclpp::transport::tcp {

namespace {

class TcpPending : public PendingConnection {
 public:
  TcpPending(std::shared_ptr<Engine> engine, const RankInfo& self, int remoteRank, const TimeoutSetting& timeout)
      : engine_(std::move(engine)),
        self_(self),
        remoteRank_(remoteRank),
        timeout_(timeout),
        local_(tcp::localEndpoint(*engine_)) {}
  std::vector<char> localEndpoint() const override { return encodeEndpoint(local_); }
  std::shared_ptr<Connection> complete(const PeerEndpoint& peer) override {
    EndpointInfo remote = decodeEndpoint(peer.payload, "TCP endpoint");
    return std::make_shared<TcpConnection>(engine_, self_.rank, remoteRank_, local_, remote, timeout_);
  }

 private:
  std::shared_ptr<Engine> engine_;
  RankInfo self_;
  int remoteRank_;
  TimeoutSetting timeout_;
  EndpointInfo local_;
};

class TcpSession : public Session {
 public:
  explicit TcpSession(const RankInfo& self)
      : self_(self), engine_(std::make_shared<Engine>(self.rank, net::chooseDefaultInterface())) {}
  Exported exportMemory(const LocalMemory& memory) override {
    auto record = std::make_shared<TcpRecord>();
    record->engineId = engine_->id();
    std::shared_ptr<void> key = engine_->keys()->add(memory.ptr, memory.size, memory.deviceMemory, &record->key);
    return Exported{std::move(record), std::move(key)};
  }
  std::unique_ptr<PendingConnection> connect(int remoteRank, const TimeoutSetting& timeout) override {
    return std::make_unique<TcpPending>(engine_, self_, remoteRank, timeout);
  }
  void abort() override { engine_->abort(); }
  void communicatorFailed() override { engine_->failSetup(); }
  const std::shared_ptr<Engine>& engine() const { return engine_; }

 private:
  RankInfo self_;
  std::shared_ptr<Engine> engine_;
};

class TcpDriver : public Driver {
 public:
  bool serves(Transport t) const override { return t == Transport::Ethernet; }
  std::shared_ptr<Session> openSession(Transport, const RankInfo& self) const override {
    return std::make_shared<TcpSession>(self);
  }
  std::shared_ptr<const ExportRecord> readRecord(Transport, ByteReader& r) const override { return TcpRecord::read(r); }
};

}  // namespace

void TcpRecord::serialize(ByteWriter& w) const {
  w.put(engineId);
  w.put(key);
}

std::shared_ptr<const TcpRecord> TcpRecord::read(ByteReader& r) {
  auto record = std::make_shared<TcpRecord>();
  record->engineId = r.get<uint64_t>("tcp.engineId");
  record->key = r.get<uint64_t>("tcp.key");
  return record;
}

const Driver& driver() {
  static const TcpDriver instance;
  return instance;
}

std::shared_ptr<Engine> engineOf(Session& session) {
  auto* tcp = dynamic_cast<TcpSession*>(&session);
  MSCCLPP_ENFORCE(tcp != nullptr, ErrorCode::InvalidArgument, "not a TCP session");
  return tcp->engine();
}

}  // namespace mscclpp::transport::tcp
