// Reliable-connected queue pairs: creation with its capabilities, the
// RESET -> INIT -> RTR -> RTS state machine with the attribute masks each
// transition requires and allows, posting send and receive requests, and
// polling completions (docs/ibverbs-double.md, "Queue pairs").
#include <cerrno>
#include <cstring>

#include "ibverbs_double.hpp"

namespace ibvdouble {
namespace {

// Attribute masks per transition of an RC QP. Required: ibv_modify_qp(3),
// the IBV_QPT_RC table; optional: the Linux kernel's ib_modify_qp_is_ok,
// through which every provider's modify_qp passes.
struct Transition {
  ibv_qp_state from, to;
  int required, optional;
};
constexpr int kAlways = IBV_QP_STATE;
const Transition kTransitions[] = {
    {IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT,
     IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0,
     IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER},
};

Qp* qpOf(ibv_qp* handle) {
  auto it = state().qpHandles.find(handle);
  return it == state().qpHandles.end() ? nullptr : it->second;
}

int roundUpPow2(int x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

ibv_wc_opcode completionOpcode(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
      return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return IBV_WC_FETCH_ADD;
    default:
      return IBV_WC_SEND;
  }
}

int checkAttributes(Qp* qp, const ibv_qp_attr& a, int mask, ibv_qp_state to) {
  const DeviceSpec& d = config().devices[static_cast<size_t>(qp->ctx->device)];
  if ((mask & IBV_QP_PORT) && (a.port_num < 1 || a.port_num > d.ports)) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index >= 128) return EINVAL;
  constexpr unsigned kQpAccess =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if ((mask & IBV_QP_ACCESS_FLAGS) && (a.qp_access_flags & ~kQpAccess) != 0) return EINVAL;
  if ((mask & IBV_QP_PATH_MTU) && (a.path_mtu < IBV_MTU_256 || a.path_mtu > IBV_MTU_4096)) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > 16) return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > 16) return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_CUR_STATE) && a.cur_qp_state != qp->state) return EINVAL;
  if (mask & IBV_QP_AV) {
    const int port = a.ah_attr.port_num ? a.ah_attr.port_num : qp->attr.port_num;
    if (port < 1 || port > d.ports) return EINVAL;
    // A RoCE port needs a GRH in every address (ibv_query_port(3),
    // IBV_QPF_GRH_REQUIRED), with a source GID that exists.
    if (d.linkLayer == IBV_LINK_LAYER_ETHERNET && !a.ah_attr.is_global) return EINVAL;
    if (a.ah_attr.is_global && !gidEntry(qp->ctx->device, port, a.ah_attr.grh.sgid_index).valid) return EINVAL;
  }
  (void)to;
  return 0;
}

}  // namespace

// Flushes (ibv_poll_cq: IBV_WC_WR_FLUSH_ERR) every outstanding request: a
// request completing in error always makes a completion, signaled or not
// (IBA vol. 1, ch. 10: work requests completed in error).
void enterError(Qp* qp) {
  qp->state = IBV_QPS_ERR;
  qp->qp.state = IBV_QPS_ERR;
  for (const SendWqe& w : qp->sq) {
    CqEntry e;
    e.wc.wr_id = w.wrId;
    e.wc.status = IBV_WC_WR_FLUSH_ERR;
    e.wc.opcode = completionOpcode(w.opcode);
    e.wc.qp_num = qp->qp.qp_num;
    e.qpn = qp->qp.qp_num;
    e.sqSlots = 1 + qp->retiredUnsignaled;
    qp->retiredUnsignaled = 0;
    pushCompletion(qp->sendCq, e);
  }
  qp->sq.clear();
  for (const RecvWqe& r : qp->rq) {
    CqEntry e;
    e.wc.wr_id = r.wrId;
    e.wc.status = IBV_WC_WR_FLUSH_ERR;
    e.wc.opcode = IBV_WC_RECV;
    e.wc.qp_num = qp->qp.qp_num;
    e.qpn = qp->qp.qp_num;
    pushCompletion(qp->recvCq, e);
  }
  qp->rq.clear();
  qp->ackDeadlineMs = 0;
  qp->resendAtMs = 0;
}

// ibv_poll_cq(3): up to n completions, oldest first. Polling a send
// completion frees its send queue slot and those of the unsignaled requests
// before it. An overrun CQ fails every poll ("the CQ cannot be used").
int pollCq(ibv_cq* handle, int n, ibv_wc* wc) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().cqs.find(handle);
  if (it == state().cqs.end()) {
    misuse("ibv_poll_cq(%p): not a completion queue", static_cast<void*>(handle));
    return -EINVAL;
  }
  Cq* cq = it->second;
  if (cq->overrun) return -EIO;
  int k = 0;
  while (k < n && !cq->entries.empty()) {
    const CqEntry& e = cq->entries.front();
    wc[k++] = e.wc;
    if (e.sqSlots > 0) {
      auto q = state().qps.find(e.qpn);
      if (q != state().qps.end()) q->second->sqUsed -= e.sqSlots;
    }
    cq->entries.pop_front();
  }
  return k;
}

// ibv_post_send(3). Immediate errors (the request is not posted; *bad names
// it): a QP in RESET, INIT or RTR (IBA vol. 1, 10.3: which states accept send
// requests), a full send queue (ENOMEM), more s/g entries than max_send_sge,
// inline data beyond max_inline_data or on an opcode that takes none, an
// opcode RC does not carry, an atomic on an HCA without atomics or not of 8
// bytes. In ERR a request is accepted and flushed.
int postSend(ibv_qp* handle, ibv_send_wr* wr, ibv_send_wr** bad) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Qp* qp = qpOf(handle);
  if (qp == nullptr) {
    misuse("ibv_post_send(%p): not a queue pair", static_cast<void*>(handle));
    *bad = wr;
    return EINVAL;
  }
  const DeviceSpec& d = config().devices[static_cast<size_t>(qp->ctx->device)];
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) err = EINVAL;
    const ibv_wr_opcode op = wr->opcode;
    const bool atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
    const bool carriesData =
        op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (!err && !carriesData && !atomic && op != IBV_WR_RDMA_READ) err = EINVAL;
    if (!err && (wr->num_sge < 0 || wr->num_sge > static_cast<int>(qp->cap.max_send_sge))) err = EINVAL;
    uint64_t bytes = 0;
    for (int i = 0; !err && i < wr->num_sge; ++i) bytes += wr->sg_list[i].length;
    const bool isInline = (wr->send_flags & IBV_SEND_INLINE) != 0;
    if (!err && isInline && (!carriesData || bytes > qp->cap.max_inline_data)) err = EINVAL;
    if (!err && atomic && (!d.atomics || wr->num_sge != 1 || bytes != 8)) err = EINVAL;
    if (!err && qp->sqUsed >= static_cast<int>(qp->cap.max_send_wr)) err = ENOMEM;
    if (err) break;
    SendWqe w;
    w.wrId = wr->wr_id;
    w.opcode = op;
    w.flags = wr->send_flags;
    w.signaled = qp->sigAll || (wr->send_flags & IBV_SEND_SIGNALED) != 0;
    w.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    w.isInline = isInline;
    if (isInline) {
      for (const ibv_sge& s : w.sges) w.inlineData.append(reinterpret_cast<const char*>(s.addr), s.length);
    }
    w.length = bytes;
    if (atomic) {
      w.remoteAddr = wr->wr.atomic.remote_addr;
      w.rkey = wr->wr.atomic.rkey;
      w.compareAdd = wr->wr.atomic.compare_add;
      w.swap = wr->wr.atomic.swap;
    } else {
      w.remoteAddr = wr->wr.rdma.remote_addr;
      w.rkey = wr->wr.rdma.rkey;
    }
    w.imm = wr->imm_data;
    const uint64_t mtu = 128ull << qp->attr.path_mtu;
    w.packets = atomic || bytes == 0 ? 1 : static_cast<uint32_t>((bytes + mtu - 1) / mtu);
    w.psn = qp->nextPsn;
    qp->nextPsn = (qp->nextPsn + w.packets) & 0xffffff;
    qp->sqUsed++;
    qp->sq.push_back(std::move(w));
  }
  if (err) *bad = wr;
  if (qp->state == IBV_QPS_ERR) enterError(qp);
  kick();
  return err;
}

// ibv_post_recv(3): refused in RESET; ENOMEM beyond max_recv_wr; flushed in ERR.
int postRecv(ibv_qp* handle, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Qp* qp = qpOf(handle);
  if (qp == nullptr) {
    misuse("ibv_post_recv(%p): not a queue pair", static_cast<void*>(handle));
    *bad = wr;
    return EINVAL;
  }
  int err = 0;
  for (; wr != nullptr; wr = wr->next) {
    if (qp->state == IBV_QPS_RESET) err = EINVAL;
    if (!err && (wr->num_sge < 0 || wr->num_sge > static_cast<int>(qp->cap.max_recv_sge))) err = EINVAL;
    if (!err && qp->rq.size() >= qp->cap.max_recv_wr) err = ENOMEM;
    if (err) break;
    RecvWqe r;
    r.wrId = wr->wr_id;
    r.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
    qp->rq.push_back(std::move(r));
  }
  if (err) *bad = wr;
  if (qp->state == IBV_QPS_ERR) enterError(qp);
  kick();
  return err;
}

}  // namespace ibvdouble

using namespace ibvdouble;

extern "C" {

// ibv_create_qp(3): RC only; the capabilities are checked against the HCA's
// and "will be updated ... with the actual QP values", rounded up as mlx5
// rounds queue depths to powers of two.
ibv_qp* ibv_create_qp(ibv_pd* pdHandle, ibv_qp_init_attr* init) {
  std::lock_guard<std::mutex> lock(state().mutex);
  State& s = state();
  auto pdIt = s.pds.find(pdHandle);
  auto scq = s.cqs.find(init->send_cq), rcq = s.cqs.find(init->recv_cq);
  if (pdIt == s.pds.end() || scq == s.cqs.end() || rcq == s.cqs.end()) {
    misuse("ibv_create_qp: the PD or a CQ is not one");
    errno = EINVAL;
    return nullptr;
  }
  Pd* pd = pdIt->second;
  const DeviceSpec& d = config().devices[static_cast<size_t>(pd->ctx->device)];
  if (init->qp_type != IBV_QPT_RC || init->srq != nullptr) {
    errno = EOPNOTSUPP;  // the double implements reliable-connected QPs without SRQ
    return nullptr;
  }
  const ibv_qp_cap& c = init->cap;
  if (scq->second->ctx != pd->ctx || rcq->second->ctx != pd->ctx || c.max_send_wr < 1 ||
      c.max_send_wr > static_cast<uint32_t>(d.maxQpWr) || c.max_recv_wr > static_cast<uint32_t>(d.maxQpWr) ||
      c.max_send_sge > 30 || c.max_recv_sge > 30 || c.max_inline_data > static_cast<uint32_t>(d.maxInline)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* qp = new Qp;
  qp->ctx = pd->ctx;
  qp->pd = pd;
  qp->sendCq = scq->second;
  qp->recvCq = rcq->second;
  qp->cap = c;
  qp->cap.max_send_wr = static_cast<uint32_t>(roundUpPow2(static_cast<int>(c.max_send_wr)));
  qp->cap.max_recv_wr = c.max_recv_wr ? static_cast<uint32_t>(roundUpPow2(static_cast<int>(c.max_recv_wr))) : 0;
  qp->cap.max_send_sge = c.max_send_sge ? c.max_send_sge : 1;
  qp->cap.max_recv_sge = c.max_recv_sge ? c.max_recv_sge : 1;
  qp->sigAll = init->sq_sig_all != 0;
  int err = 0;
  uint32_t qpn = allocateQpn(qp, &err);
  if (qpn == 0) {
    delete qp;
    errno = err;
    return nullptr;
  }
  init->cap = qp->cap;
  ibv_qp& q = qp->qp;
  q.context = &pd->ctx->v.context;
  q.qp_context = init->qp_context;
  q.pd = pdHandle;
  q.send_cq = init->send_cq;
  q.recv_cq = init->recv_cq;
  q.handle = qpn;
  q.qp_num = qpn;
  q.state = IBV_QPS_RESET;
  q.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
  s.qpHandles[&q] = qp;
  s.qps[qpn] = qp;
  pd->users++;
  qp->sendCq->users++;
  qp->recvCq->users++;
  return &q;
}

// ibv_modify_qp(3): the required attributes of each transition must be in
// the mask, and only those the transition takes; "If any of the modify
// attributes or the modify mask are invalid, none of the attributes will be
// modified (including the QP state)." Any state may go to RESET or ERR.
int ibv_modify_qp(ibv_qp* handle, ibv_qp_attr* attr, int mask) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Qp* qp = qpOf(handle);
  if (qp == nullptr) {
    misuse("ibv_modify_qp(%p): not a queue pair", static_cast<void*>(handle));
    return EINVAL;
  }
  const ibv_qp_state from = qp->state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
  const int given = mask & ~kAlways;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
    if (given != 0) return EINVAL;
  } else {
    const Transition* t = nullptr;
    for (const Transition& x : kTransitions)
      if (x.from == from && x.to == to) t = &x;
    if (t == nullptr) return EINVAL;
    if ((given & t->required) != t->required || (given & ~(t->required | t->optional)) != 0) return EINVAL;
    if (int e = checkAttributes(qp, *attr, mask, to)) return e;
  }
  ibv_qp_attr& a = qp->attr;
  if (mask & IBV_QP_PKEY_INDEX) a.pkey_index = attr->pkey_index;
  if (mask & IBV_QP_PORT) a.port_num = attr->port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) a.qp_access_flags = attr->qp_access_flags;
  if (mask & IBV_QP_AV) {
    a.ah_attr = attr->ah_attr;
    if (a.ah_attr.port_num == 0) a.ah_attr.port_num = a.port_num;
  }
  if (mask & IBV_QP_PATH_MTU) a.path_mtu = attr->path_mtu;
  if (mask & IBV_QP_DEST_QPN) a.dest_qp_num = attr->dest_qp_num & 0xffffff;
  if (mask & IBV_QP_RQ_PSN) a.rq_psn = attr->rq_psn & 0xffffff;
  if (mask & IBV_QP_SQ_PSN) a.sq_psn = attr->sq_psn & 0xffffff;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) a.max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) a.min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) a.timeout = attr->timeout;
  if (mask & IBV_QP_RETRY_CNT) a.retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) a.rnr_retry = attr->rnr_retry;
  if (to == IBV_QPS_ERR) {
    enterError(qp);
  } else if (to == IBV_QPS_RESET) {
    // RESET empties both queues without completions and forgets the attributes.
    qp->sq.clear();
    qp->rq.clear();
    qp->sqUsed = 0;
    qp->retiredUnsignaled = 0;
    qp->attr = ibv_qp_attr{};
    qp->ackDeadlineMs = qp->resendAtMs = 0;
  }
  if (to == IBV_QPS_RTR && from == IBV_QPS_INIT) qp->expectedPsn = a.rq_psn;
  if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) qp->nextPsn = a.sq_psn;
  qp->state = to;
  handle->state = to;  // as libibverbs' ibv_modify_qp does after the provider's
  kick();
  return 0;
}

// ibv_query_qp(3).
int ibv_query_qp(ibv_qp* handle, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Qp* qp = qpOf(handle);
  if (qp == nullptr) {
    misuse("ibv_query_qp(%p): not a queue pair", static_cast<void*>(handle));
    return EINVAL;
  }
  *attr = qp->attr;
  attr->qp_state = qp->state;
  attr->cur_qp_state = qp->state;
  attr->cap = qp->cap;
  if (init) {
    std::memset(init, 0, sizeof(*init));
    init->send_cq = qp->qp.send_cq;
    init->recv_cq = qp->qp.recv_cq;
    init->cap = qp->cap;
    init->qp_type = IBV_QPT_RC;
    init->sq_sig_all = qp->sigAll;
  }
  return 0;
}

// ibv_create_qp(3), ibv_destroy_qp. Outstanding requests vanish without
// completions; packets for its number are dropped from now on.
int ibv_destroy_qp(ibv_qp* handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Qp* qp = qpOf(handle);
  if (qp == nullptr) {
    misuse("ibv_destroy_qp(%p): not a queue pair", static_cast<void*>(handle));
    return EINVAL;
  }
  releaseQpn(qp);
  state().qpHandles.erase(handle);
  state().qps.erase(handle->qp_num);
  qp->pd->users--;
  qp->sendCq->users--;
  qp->recvCq->users--;
  delete qp;
  return 0;
}

}  // extern "C"
