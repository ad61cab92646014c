// The InfiniBand transport's Driver, one for IB0..IB7. A Session
// opens HCA port <n> of the host's list (transport/ib_verbs/hca_list.hpp)
// and registers memory regions on it; connections are reliable-connected
// queue pairs. rdma-core is loaded with dlopen.
#include "transport/transport.hpp"

#include <map>
#include <mutex>

#include "core/logger.hpp"
#include "core/params.hpp"
#include "transport/ib_verbs/connection.hpp"
#include "transport/ib_verbs/memory.hpp"
#include "transport/ib_verbs/nic_choice.hpp"

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
      : transport_(transport), rank_(rank), device_(openDevice(ibDeviceIndex(transport))) {}
  Exported exportMemory(const LocalMemory& memory) override {
    auto record = std::make_shared<IbRecord>();
    std::shared_ptr<void> region = registerRegion(device_, memory.ptr, memory.size, memory.deviceMemory, record.get());
    return Exported{std::move(record), std::move(region)};
  }
  std::unique_ptr<PendingConnection> connect(int remoteRank, const TimeoutSetting& timeout) override {
    return std::make_unique<IbPending>(createQueuePair(device_, aborted_), rank_, remoteRank, transport_, timeout);
  }
  void abort() override { aborted_->store(true); }

 private:
  Transport transport_;
  int rank_;
  std::shared_ptr<Device> device_;
  std::shared_ptr<std::atomic<bool>> aborted_ = std::make_shared<std::atomic<bool>>(false);
};

class IbDriver : public Driver {
 public:
  bool serves(Transport t) const override { return isIbTransport(t); }
  std::shared_ptr<Session> openSession(Transport t, const RankInfo& self) const override {
    return std::make_shared<IbSession>(t, self.rank);
  }
  std::shared_ptr<const ExportRecord> readRecord(Transport, ByteReader& r) const override { return IbRecord::read(r); }

  // The port nearest the rank's GPU or CPUs, decided once per device,
  // local rank and setting in a process (transport/ib_verbs/nic_choice.hpp).
  Transport nearest(const RankInfo& self, std::string* why) const override {
    if (params::ibDisable()) {
      *why = "MSCCLPP_IB_DISABLE=1";
      return Transport::Unknown;
    }
    static std::mutex mutex;
    static std::map<std::string, std::pair<Transport, std::string>> chosen;
    std::lock_guard<std::mutex> lock(mutex);
    const std::string key = strFormat("%d %d %s\n%s", self.device, self.localRank, params::ibverbsLibrary().c_str(),
                                      params::hcaDevices().c_str());
    auto it = chosen.find(key);
    if (it != chosen.end()) {
      *why = it->second.second;
      return it->second.first;
    }
    std::pair<Transport, std::string> result{Transport::Unknown, ""};
    try {
      const HcaList& hcas = hcaList();
      if (hcas.ports.empty()) {
        result.second = "no InfiniBand or RoCE port on this host (" + hcas.lib->name + " loaded; " + hcas.why + ")";
      } else {
        std::vector<PortLocality> ports;
        const size_t n = std::min<size_t>(hcas.ports.size(), 8);  // IB0..IB7
        for (size_t i = 0; i < n; ++i) ports.push_back(localityOf(hcas.ports[i]));
        std::string how;
        const int pick = nearestPort(localityOf(self.device), ports, self.localRank, &how);
        result.first = static_cast<Transport>(static_cast<int>(Transport::IB0) + pick);
        result.second = strFormat("%s is %s: %s", transportName(result.first),
                                  hcas.ports[static_cast<size_t>(pick)].name().c_str(), how.c_str());
      }
    } catch (const Error& e) {
      result.second = e.what();
    }
    MSCCLPP_INFO(LogTransport, "InfiniBand for %s %d, local rank %d: %s", self.device < 0 ? "host rank" : "GPU",
                 self.device < 0 ? self.rank : self.device, self.localRank, result.second.c_str());
    *why = result.second;
    return chosen.emplace(key, result).first->second.first;
  }
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
