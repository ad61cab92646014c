// The CUDA IPC transport's Driver: GPUs of one host map each other's
// device memory through IPC handles and copy with cudaMemcpyAsync.
// Without CUDA the driver stays and refuses with NotSupported.
#include "transport/transport.hpp"

#include "core/enforce.hpp"
#include "transport/cuda_ipc/connection.hpp"
#include "transport/cuda_ipc/memory.hpp"

namespace mscclpp::transport::cuda_ipc {

namespace {

class CudaIpcPending : public PendingConnection {
 public:
  CudaIpcPending(int rank, int remoteRank, int device, const TimeoutSetting& timeout)
      : rank_(rank), remoteRank_(remoteRank), device_(device), timeout_(timeout) {}
  std::shared_ptr<Connection> complete(const PeerEndpoint& peer) override {
    MSCCLPP_ENFORCE(peer.device >= 0, ErrorCode::InvalidArgument, "rank %d has no CUDA device", remoteRank_);
    return makeConnection(rank_, remoteRank_, device_, timeout_);
  }

 private:
  int rank_, remoteRank_, device_;
  TimeoutSetting timeout_;
};

class CudaIpcSession : public Session {
 public:
  explicit CudaIpcSession(const RankInfo& self) : self_(self) {}
  Exported exportMemory(const LocalMemory& memory) override {
    MSCCLPP_ENFORCE(memory.deviceMemory, ErrorCode::InvalidArgument, "IPC needs CUDA device memory%s",
                    compiledIn() ? "" : " (and this build has no CUDA support)");
    auto record = std::make_shared<CudaIpcRecord>();
    exportRange(memory.ptr, memory.size, record.get());
    return Exported{std::move(record), nullptr};
  }
  std::unique_ptr<PendingConnection> connect(int remoteRank, const TimeoutSetting& timeout) override {
    MSCCLPP_ENFORCE(compiledIn(), ErrorCode::NotSupported, "this build has no CUDA support");
    MSCCLPP_ENFORCE(self_.device >= 0, ErrorCode::InvalidArgument, "this communicator has no CUDA device");
    return std::make_unique<CudaIpcPending>(self_.rank, remoteRank, self_.device, timeout);
  }

 private:
  RankInfo self_;
};

class CudaIpcDriver : public Driver {
 public:
  bool serves(Transport t) const override { return t == Transport::CudaIpc; }
  bool sameHostOnly() const override { return true; }
  std::shared_ptr<Session> openSession(Transport, const RankInfo& self) const override {
    return std::make_shared<CudaIpcSession>(self);
  }
  std::shared_ptr<const ExportRecord> readRecord(Transport, ByteReader& r) const override {
    return CudaIpcRecord::read(r);
  }
  bool importMemory(const ExportRecord& record, const ImportContext& ctx, Imported* out) const override {
    if (!ctx.sameHost) return false;
    if (ctx.sameProcess) {
      // CUDA refuses to open our own handles; the
      // original pointer is valid in this process.
      out->data = reinterpret_cast<void*>(static_cast<uintptr_t>(ctx.originalData));
      return true;
    }
    out->keepAlive = importRange(static_cast<const CudaIpcRecord&>(record), ctx.size, &out->data, ctx.what);
    return true;
  }
};

}  // namespace

void CudaIpcRecord::serialize(ByteWriter& w) const {
  w.putBytes(handle.data(), handle.size());
  w.put(baseOffset);
  w.put(allocationSize);
  w.put(device);
}

std::shared_ptr<const CudaIpcRecord> CudaIpcRecord::read(ByteReader& r) {
  auto record = std::make_shared<CudaIpcRecord>();
  r.getBytes(record->handle.data(), record->handle.size(), "ipc.handle");
  record->baseOffset = r.get<uint64_t>("ipc.baseOffset");
  record->allocationSize = r.get<uint64_t>("ipc.allocationSize");
  record->device = r.get<int32_t>("ipc.device");
  return record;
}

const Driver& driver() {
  static const CudaIpcDriver instance;
  return instance;
}

}  // namespace mscclpp::transport::cuda_ipc
