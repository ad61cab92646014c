#include "transport/ib_verbs/connection.hpp"

#include <cerrno>
#include <cstring>

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/random.hpp"
#include "core/serial.hpp"
#include "transport/registration.hpp"

namespace mscclpp::transport::ib_verbs {

namespace {
constexpr uint32_t kQpInfoMagic = 0x5051424d;  // "MBQP"
constexpr int kMaxInline = 64;                 // updateAndSync sends its 8 bytes inline: no MR needed

struct QpInfo {
  uint16_t lid = 0;
  uint8_t port = 0;
  uint8_t linkLayer = 0;
  ibv_gid gid{};
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t mtu = 0;
};
}  // namespace

class QueuePair {
 public:
  QueuePair(std::shared_ptr<Device> d, ibv_cq* c, ibv_qp* q, uint32_t p, int maxWr)
      : device(std::move(d)), cq(c), qp(q), psn(p), maxSendWr(maxWr) {}
  ~QueuePair() {
    if (qp) device->lib->destroyQp(qp);
    if (cq) device->lib->destroyCq(cq);
  }
  std::shared_ptr<Device> device;
  ibv_cq* cq;
  ibv_qp* qp;
  uint32_t psn;
  int maxSendWr;
};

std::shared_ptr<QueuePair> createQueuePair(std::shared_ptr<Device> device) {
  const VerbsLibrary& lib = *device->lib;
  int maxWr = std::min(device->maxQpWr > 0 ? device->maxQpWr : 1024, 4096);
  ibv_cq* cq = lib.createCq(device->context, maxWr, nullptr, nullptr, 0);
  if (cq == nullptr) throw SystemError("InfiniBand: ibv_create_cq(" + device->name + ")", errno);
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(maxWr);
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = kMaxInline;
  init.sq_sig_all = 0;
  ibv_qp* qp = lib.createQp(device->pd, &init);
  if (qp == nullptr) {
    int e = errno;
    lib.destroyCq(cq);
    throw SystemError("InfiniBand: ibv_create_qp(" + device->name + ")", e);
  }
  uint32_t psn = static_cast<uint32_t>(randomU64("an InfiniBand packet sequence number"));
  auto result = std::make_shared<QueuePair>(device, cq, qp, psn & 0xffffff, maxWr);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = device->port;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  int rc = lib.modifyQp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) throw SystemError("InfiniBand: ibv_modify_qp(INIT) on " + device->name, rc);
  return result;
}

std::vector<char> localQpInfo(const QueuePair& qp) {
  ByteWriter w;
  w.put(kQpInfoMagic);
  w.put<uint16_t>(qp.device->portAttr.lid);
  w.put<uint8_t>(qp.device->port);
  w.put<uint8_t>(qp.device->portAttr.link_layer);
  w.putBytes(&qp.device->gid, sizeof(ibv_gid));
  w.put<uint32_t>(qp.qp->qp_num);
  w.put<uint32_t>(qp.psn);
  w.put<uint32_t>(static_cast<uint32_t>(qp.device->portAttr.active_mtu));
  return std::move(w.bytes());
}

namespace {

QpInfo decodeQpInfo(const std::vector<char>& bytes, const std::string& what) {
  ByteReader r(bytes, what.c_str());
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kQpInfoMagic, ErrorCode::RemoteError, "%s: not an IB queue pair info",
                  what.c_str());
  QpInfo q;
  q.lid = r.get<uint16_t>("lid");
  q.port = r.get<uint8_t>("port");
  q.linkLayer = r.get<uint8_t>("linkLayer");
  r.getBytes(&q.gid, sizeof(q.gid), "gid");
  q.qpn = r.get<uint32_t>("qpn");
  q.psn = r.get<uint32_t>("psn");
  q.mtu = r.get<uint32_t>("mtu");
  r.expectEnd();
  MSCCLPP_ENFORCE(q.mtu >= IBV_MTU_256 && q.mtu <= IBV_MTU_4096, ErrorCode::RemoteError, "%s: invalid MTU enum %u",
                  what.c_str(), q.mtu);
  return q;
}

class IbConnection : public Connection {
 public:
  IbConnection(std::shared_ptr<QueuePair> qp, int localRank, int remoteRank, Transport transport,
               const TimeoutSetting& timeout)
      : Connection(localRank, remoteRank), qp_(std::move(qp)), transport_(transport), timeout_(timeout) {}

  void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
             uint64_t size) override {
    checkWrite(dst, dstOffset, src, srcOffset, size);
    checkRegistered(dst, "write destination");
    checkRegistered(src, "write source");
    MSCCLPP_ENFORCE(src.isLocal(), ErrorCode::InvalidArgument, "%s: write: the source must be registered here",
                    describe().c_str());
    if (size == 0) return;
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(src.data()) + srcOffset;
    sge.length = static_cast<uint32_t>(size);
    sge.lkey = recordOf(src).lkey;
    MSCCLPP_ENFORCE(size <= UINT32_MAX, ErrorCode::InvalidArgument, "%s: write of %llu bytes exceeds one RDMA write",
                    describe().c_str(), (unsigned long long)size);
    post(IBV_WR_RDMA_WRITE, &sge, 0, recordOf(dst).address + dstOffset, recordOf(dst).rkey, "write");
  }

  void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) override {
    checkUpdate(dst, dstOffset);
    checkRegistered(dst, "updateAndSync destination");
    *src = newValue;
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(src);
    sge.length = sizeof(uint64_t);
    // Inline: the value is copied into the work request, so
    // src needs no memory region. The QP runs requests in
    // order: this one after the writes posted before it.
    post(IBV_WR_RDMA_WRITE, &sge, IBV_SEND_INLINE, recordOf(dst).address + dstOffset, recordOf(dst).rkey,
         "updateAndSync");
  }

  void flush(int64_t timeoutUsec) override {
    Deadline deadline = timeoutUsec < 0 ? timeout_.start() : Deadline(timeoutUsec * 1e-6, "the flush's timeout");
    drain(0, deadline, "flush");
  }

  Transport transport() const override { return transport_; }
  Transport remoteTransport() const override { return transport_; }

 private:
  // Called after checkRegistered: the record exists.
  const IbRecord& recordOf(const RegisteredMemory& m) const {
    return *RegisteredMemoryAccess::impl(m)->record<IbRecord>(transport_);
  }
  void checkRegistered(const RegisteredMemory& m, const char* which) const {
    MSCCLPP_ENFORCE(m.transports().has(transport_), ErrorCode::InvalidArgument,
                    "%s: the %s (rank %d) is not registered for %s (transports %s)", describe().c_str(), which,
                    m.rank(), transportName(transport_), m.transports().toString().c_str());
  }

  void post(ibv_wr_opcode op, ibv_sge* sge, unsigned flags, uint64_t remoteAddr, uint32_t rkey, const char* what) {
    // Keep the send queue below its depth: wait
    // for completions of earlier requests first.
    if (outstanding_ >= qp_->maxSendWr) drain(qp_->maxSendWr / 2, timeout_.start(), what);
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = ++posted_;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = flags | IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remoteAddr;
    wr.wr.rdma.rkey = rkey;
    int rc = ibv_post_send(qp_->qp, &wr, &bad);
    if (rc != 0) throw SystemError(describe() + ": " + what + ": ibv_post_send", rc);
    ++outstanding_;
  }

  void drain(int target, const Deadline& deadline, const char* what) {
    ibv_wc wc[16];
    waitUntil(
        [&] {
          int n = ibv_poll_cq(qp_->cq, 16, wc);
          MSCCLPP_ENFORCE(n >= 0, ErrorCode::SystemError, "%s: %s: ibv_poll_cq failed (%d)", describe().c_str(), what,
                          n);
          for (int i = 0; i < n; ++i) {
            MSCCLPP_ENFORCE(wc[i].status == IBV_WC_SUCCESS, ErrorCode::RemoteError,
                            "%s: %s: work request %llu failed: %s (the peer may be gone)", describe().c_str(), what,
                            (unsigned long long)wc[i].wr_id, qp_->device->lib->wcStatusStr(wc[i].status));
          }
          outstanding_ -= n;
          return outstanding_ <= target;
        },
        deadline, describe() + ": " + what + " (waiting for IB completions)");
  }

  std::shared_ptr<QueuePair> qp_;
  Transport transport_;
  TimeoutSetting timeout_;
  int outstanding_ = 0;
  uint64_t posted_ = 0;
};

}  // namespace

std::shared_ptr<Connection> makeConnection(std::shared_ptr<QueuePair> qp, const std::vector<char>& remoteInfo,
                                           int localRank, int remoteRank, Transport transport,
                                           const TimeoutSetting& timeout) {
  const std::string who = strFormat("rank %d -> rank %d over %s", localRank, remoteRank, transportName(transport));
  QpInfo remote = decodeQpInfo(remoteInfo, who + ": queue pair info");
  const VerbsLibrary& lib = *qp->device->lib;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(std::min<uint32_t>(remote.mtu, qp->device->portAttr.active_mtu));
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.dlid = remote.lid;
  attr.ah_attr.port_num = qp->device->port;
  if (remote.linkLayer == IBV_LINK_LAYER_ETHERNET || remote.lid == 0) {
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = 0;
    attr.ah_attr.grh.hop_limit = 255;
  }
  int rc = lib.modifyQp(qp->qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) throw SystemError(who + ": ibv_modify_qp(RTR)", rc);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 14;
  rts.retry_cnt = 7;
  rts.rnr_retry = 7;
  rts.sq_psn = qp->psn;
  rts.max_rd_atomic = 1;
  rc = lib.modifyQp(
      qp->qp, &rts,
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) throw SystemError(who + ": ibv_modify_qp(RTS)", rc);
  return std::make_shared<IbConnection>(std::move(qp), localRank, remoteRank, transport, timeout);
}

}  // namespace mscclpp::transport::ib_verbs
