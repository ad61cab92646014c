#include "transport/ib_verbs/connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/random.hpp"
#include "core/serial.hpp"
#include "transport/registration.hpp"

namespace mscclpp::transport::ib_verbs {

namespace {
constexpr uint32_t kQpInfoMagic = 0x3251424d;  // "MBQ2"

struct QpInfo {
  uint8_t ibIndex = 0;  // n of the peer's IBn
  uint8_t atomics = 0;
  uint8_t port = 0;
  uint8_t linkLayer = 0;
  uint16_t lid = 0;
  ibv_gid gid{};
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t mtu = 0;
};
}  // namespace

class QueuePair {
 public:
  QueuePair(std::shared_ptr<Device> d, std::shared_ptr<const std::atomic<bool>> a)
      : device(std::move(d)), aborted(std::move(a)) {}
  ~QueuePair() {
    slotRegion.reset();
    if (qp) device->lib->destroyQp(qp);
    if (cq) device->lib->destroyCq(cq);
  }
  std::shared_ptr<Device> device;
  std::shared_ptr<const std::atomic<bool>> aborted;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  uint32_t psn = 0;
  int maxSendWr = 0;
  // One 8-byte slot per send queue entry, for signals: an atomic's
  // fetched value or a write's source. A slot is reused only after the
  // request that used it completed: the queue holds at most maxSendWr.
  std::vector<uint64_t> slots;
  uint32_t slotKey = 0;
  std::shared_ptr<void> slotRegion;
};

std::shared_ptr<QueuePair> createQueuePair(std::shared_ptr<Device> device,
                                           std::shared_ptr<const std::atomic<bool>> aborted) {
  const VerbsLibrary& lib = *device->lib;
  auto result = std::make_shared<QueuePair>(device, std::move(aborted));
  const int maxWr = std::min(device->maxQpWr > 0 ? device->maxQpWr : 1024, 4096);
  result->maxSendWr = maxWr;
  result->cq = lib.createCq(device->context, maxWr, nullptr, nullptr, 0);
  if (result->cq == nullptr) throw SystemError("InfiniBand: ibv_create_cq(" + device->name + ")", errno);
  ibv_qp_init_attr init{};
  init.send_cq = result->cq;
  init.recv_cq = result->cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(maxWr);
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 0;  // nothing is sent inline: every HCA takes it
  init.sq_sig_all = 0;
  result->qp = lib.createQp(device->pd, &init);
  if (result->qp == nullptr) throw SystemError("InfiniBand: ibv_create_qp(" + device->name + ")", errno);
  result->slots.assign(static_cast<size_t>(maxWr), 0);
  IbRecord slotRecord;
  result->slotRegion =
      registerRegion(device, result->slots.data(), result->slots.size() * sizeof(uint64_t), false, &slotRecord);
  result->slotKey = slotRecord.lkey;
  result->psn = static_cast<uint32_t>(randomU64("an InfiniBand packet sequence number")) & 0xffffff;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = device->port;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (device->atomics) attr.qp_access_flags |= IBV_ACCESS_REMOTE_ATOMIC;
  int rc = lib.modifyQp(result->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) throw SystemError("InfiniBand: ibv_modify_qp(INIT) on " + device->name, rc);
  return result;
}

std::vector<char> localQpInfo(const QueuePair& qp) {
  ByteWriter w;
  w.put(kQpInfoMagic);
  w.put<uint8_t>(static_cast<uint8_t>(qp.device->index));
  w.put<uint8_t>(qp.device->atomics ? 1 : 0);
  w.put<uint8_t>(qp.device->port);
  w.put<uint8_t>(qp.device->portAttr.link_layer);
  w.put<uint16_t>(qp.device->portAttr.lid);
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
  q.ibIndex = r.get<uint8_t>("ibIndex");
  q.atomics = r.get<uint8_t>("atomics");
  q.port = r.get<uint8_t>("port");
  q.linkLayer = r.get<uint8_t>("linkLayer");
  q.lid = r.get<uint16_t>("lid");
  r.getBytes(&q.gid, sizeof(q.gid), "gid");
  q.qpn = r.get<uint32_t>("qpn");
  q.psn = r.get<uint32_t>("psn");
  q.mtu = r.get<uint32_t>("mtu");
  r.expectEnd();
  MSCCLPP_ENFORCE(q.ibIndex < 8, ErrorCode::RemoteError, "%s: HCA index %u is not in 0..7", what.c_str(),
                  unsigned(q.ibIndex));
  MSCCLPP_ENFORCE(q.mtu >= IBV_MTU_256 && q.mtu <= IBV_MTU_4096, ErrorCode::RemoteError, "%s: invalid MTU enum %u",
                  what.c_str(), q.mtu);
  return q;
}

// What a failed completion means for this connection, in its terms.
std::string explain(ibv_wc_status status, int remoteRank) {
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR:
      return strFormat(
          ": rank %d acknowledged nothing within the transport's retries (it exited or crashed, its host is "
          "unreachable, or it destroyed the connection)",
          remoteRank);
    case IBV_WC_REM_ACCESS_ERR:
      return strFormat(": rank %d refused the access (its memory is no longer registered, or not for this HCA)",
                       remoteRank);
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
      return strFormat(": rank %d could not carry out the request", remoteRank);
    case IBV_WC_WR_FLUSH_ERR:
      return ": the queue pair had failed before";
    default:
      return std::string();
  }
}

class IbConnection : public Connection {
 public:
  IbConnection(std::shared_ptr<QueuePair> qp, int localRank, int remoteRank, Transport transport,
               Transport remoteTransport, bool atomics, const TimeoutSetting& timeout)
      : Connection(localRank, remoteRank),
        qp_(std::move(qp)),
        transport_(transport),
        remoteTransport_(remoteTransport),
        atomics_(atomics),
        timeout_(timeout) {
    // One RDMA write carries at most the port's max_msg_sz bytes.
    const uint32_t maxMsg = qp_->device->portAttr.max_msg_sz;
    maxMessage_ = maxMsg > 0 ? maxMsg : (1u << 31);
  }

  // Requests still posted when the connection goes, such as a plan's last
  // signal, die with the queue pair unless the HCA sent them: wait for them
  // briefly, as a closed socket still delivers what it was given.
  ~IbConnection() override {
    if (!failure_.empty() || outstanding_ == 0 || qp_->aborted->load()) return;
    try {
      drain(0, Deadline(0.1, "closing the connection"), "close");
    } catch (const std::exception&) {
      // The peer is gone or slow: nothing more to do for it.
    }
  }

  void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
             uint64_t size) override {
    checkWrite(dst, dstOffset, src, srcOffset, size);
    checkRegistered(dst, remoteTransport_, "write destination");
    checkRegistered(src, transport_, "write source");
    MSCCLPP_ENFORCE(src.isLocal(), ErrorCode::InvalidArgument, "%s: write: the source must be registered here",
                    describe().c_str());
    throwIfFailed("write");
    const IbRecord& d = recordOf(dst, remoteTransport_);
    const uint32_t lkey = recordOf(src, transport_).lkey;
    for (uint64_t done = 0; done < size;) {
      const uint64_t n = std::min<uint64_t>(size - done, maxMessage_);
      ibv_sge sge{};
      sge.addr = reinterpret_cast<uint64_t>(src.data()) + srcOffset + done;
      sge.length = static_cast<uint32_t>(n);
      sge.lkey = lkey;
      post(IBV_WR_RDMA_WRITE, &sge, d.address + dstOffset + done, d.rkey, 0,
           strFormat("write of %llu bytes", (unsigned long long)n));
      done += n;
    }
  }

  // The QP carries out requests in order (IBA vol. 1, 9.5: transaction
  // ordering), so the signal lands after every earlier write.
  void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) override {
    checkUpdate(dst, dstOffset);
    checkRegistered(dst, remoteTransport_, "updateAndSync destination");
    throwIfFailed("updateAndSync");
    const uint64_t old = *src;
    *src = newValue;
    const IbRecord& d = recordOf(dst, remoteTransport_);
    uint64_t& slot = qp_->slots[static_cast<size_t>(posted_ % qp_->slots.size())];
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(&slot);
    sge.length = sizeof(uint64_t);
    sge.lkey = qp_->slotKey;
    if (atomics_) {
      // MSCCL++'s signal: add the increment; the old value lands in the slot.
      post(IBV_WR_ATOMIC_FETCH_AND_ADD, &sge, d.address + dstOffset, d.rkey, newValue - old, "signal");
    } else {
      slot = newValue;
      post(IBV_WR_RDMA_WRITE, &sge, d.address + dstOffset, d.rkey, 0, "signal");
    }
  }

  void flush(int64_t timeoutUsec) override {
    throwIfFailed("flush");
    Deadline deadline = timeoutUsec < 0 ? timeout_.start() : Deadline(timeoutUsec * 1e-6, "the flush's timeout");
    drain(0, deadline, "flush");
  }

  Transport transport() const override { return transport_; }
  Transport remoteTransport() const override { return remoteTransport_; }

 private:
  // Called after checkRegistered: the record exists.
  static const IbRecord& recordOf(const RegisteredMemory& m, Transport t) {
    return *RegisteredMemoryAccess::impl(m)->record<IbRecord>(t);
  }
  void checkRegistered(const RegisteredMemory& m, Transport t, const char* which) const {
    MSCCLPP_ENFORCE(m.transports().has(t), ErrorCode::InvalidArgument,
                    "%s: the %s (rank %d) is not registered for %s (transports %s)", describe().c_str(), which,
                    m.rank(), transportName(t), m.transports().toString().c_str());
  }

  // After a failed request the queue pair is in the error state: nothing
  // later reaches the peer, so every call fails with the first error.
  void throwIfFailed(const char* what) const {
    if (!failure_.empty()) throw Error(ErrorCode::RemoteError, describe() + ": " + what + ": " + failure_);
  }

  void post(ibv_wr_opcode op, ibv_sge* sge, uint64_t remoteAddr, uint32_t rkey, uint64_t add, std::string what) {
    // Keep the send queue below its depth: wait
    // for completions of earlier requests first.
    if (outstanding_ >= qp_->maxSendWr) drain(qp_->maxSendWr / 2, timeout_.start(), what.c_str());
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = ++posted_;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      wr.wr.atomic.remote_addr = remoteAddr;
      wr.wr.atomic.rkey = rkey;
      wr.wr.atomic.compare_add = add;
    } else {
      wr.wr.rdma.remote_addr = remoteAddr;
      wr.wr.rdma.rkey = rkey;
    }
    int rc = ibv_post_send(qp_->qp, &wr, &bad);
    if (rc != 0) {
      failure_ = strFormat("ibv_post_send of a %s: %s", what.c_str(), std::strerror(rc));
      throw SystemError(describe() + ": " + what + ": ibv_post_send", rc);
    }
    ++outstanding_;
    pending_.push_back(std::move(what));
  }

  void drain(int target, const Deadline& deadline, const char* what) {
    ibv_wc wc[16];
    waitUntil(
        [&] {
          MSCCLPP_ENFORCE(!qp_->aborted->load(std::memory_order_relaxed), ErrorCode::Aborted,
                          "%s: %s: the communicator was aborted", describe().c_str(), what);
          int n = ibv_poll_cq(qp_->cq, 16, wc);
          MSCCLPP_ENFORCE(n >= 0, ErrorCode::SystemError, "%s: %s: ibv_poll_cq failed (%d)", describe().c_str(), what,
                          n);
          for (int i = 0; i < n; ++i) {
            std::string op = pending_.empty() ? std::string("request") : pending_.front();
            if (!pending_.empty()) pending_.pop_front();
            --outstanding_;
            if (wc[i].status != IBV_WC_SUCCESS && failure_.empty()) {
              failure_ =
                  strFormat("work request %llu (%s) failed: %s%s", (unsigned long long)wc[i].wr_id, op.c_str(),
                            qp_->device->lib->wcStatusStr(wc[i].status), explain(wc[i].status, remoteRank()).c_str());
            }
          }
          throwIfFailed(what);
          return outstanding_ <= target;
        },
        deadline, describe() + ": " + what + " (waiting for IB completions)");
  }

  std::shared_ptr<QueuePair> qp_;
  Transport transport_, remoteTransport_;
  bool atomics_;
  TimeoutSetting timeout_;
  uint64_t maxMessage_ = 0;
  int outstanding_ = 0;
  uint64_t posted_ = 0;
  std::deque<std::string> pending_;  // what each outstanding request is, oldest first
  std::string failure_;              // the first failed request; the QP is in ERR since
};

}  // namespace

std::shared_ptr<Connection> makeConnection(std::shared_ptr<QueuePair> qp, const std::vector<char>& remoteInfo,
                                           int localRank, int remoteRank, Transport transport,
                                           const TimeoutSetting& timeout) {
  const std::string who = strFormat("rank %d -> rank %d over %s", localRank, remoteRank, transportName(transport));
  QpInfo remote = decodeQpInfo(remoteInfo, who + ": queue pair info");
  const Device& dev = *qp->device;
  const Transport remoteTransport = static_cast<Transport>(static_cast<int>(Transport::IB0) + remote.ibIndex);
  const bool roce = dev.portAttr.link_layer == IBV_LINK_LAYER_ETHERNET;
  MSCCLPP_ENFORCE(remote.linkLayer == dev.portAttr.link_layer, ErrorCode::NotSupported,
                  "%s: rank %d's %s is %s and this rank's %s is %s: they are not on one fabric", who.c_str(),
                  remoteRank, transportName(remoteTransport),
                  remote.linkLayer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", dev.name.c_str(),
                  roce ? "RoCE" : "InfiniBand");
  const VerbsLibrary& lib = *dev.lib;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(std::min<uint32_t>(remote.mtu, dev.portAttr.active_mtu));
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.port_num = dev.port;
  if (roce || remote.lid == 0) {
    // RoCE routes by GID (and needs a GRH: IBV_QPF_GRH_REQUIRED); the
    // source is this port's chosen GID, the destination the peer's.
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev.gidIndex);
    attr.ah_attr.grh.hop_limit = 255;
  } else {
    attr.ah_attr.dlid = remote.lid;
  }
  int rc = lib.modifyQp(qp->qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                            IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) throw SystemError(who + ": ibv_modify_qp(RTR)", rc);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 14;  // 4.096 us x 2^14 = 67 ms per try
  rts.retry_cnt = 7;
  rts.rnr_retry = 7;
  rts.sq_psn = qp->psn;
  rts.max_rd_atomic = 1;
  rc = lib.modifyQp(
      qp->qp, &rts,
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) throw SystemError(who + ": ibv_modify_qp(RTS)", rc);
  const bool atomics = dev.atomics && remote.atomics != 0;
  return std::make_shared<IbConnection>(std::move(qp), localRank, remoteRank, transport, remoteTransport, atomics,
                                        timeout);
}

}  // namespace mscclpp::transport::ib_verbs
