// The fabric: what the HCA and the wire do once a request is posted. One
// thread per process, started with the first QP, plays this process's HCAs:
// it executes send queues (requester) and answers peers' requests (responder)
// over TCP, one connection per requester QP to the listener of the process
// that owns the destination QP. Its rules, with their sources, are in
// docs/ibverbs-double.md, "The fabric".
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ibverbs_double.hpp"

namespace ibvdouble {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

constexpr uint32_t kHelloMagic = 0x49425648;     // "IBVH"
constexpr uint32_t kRequestMagic = 0x49425652;   // "IBVR"
constexpr uint32_t kResponseMagic = 0x49425641;  // "IBVA"

// A requester's first bytes: which QP it addresses, and how, and from where.
struct Hello {
  uint32_t magic = kHelloMagic;
  uint32_t dstQpn = 0;
  uint32_t mtuBytes = 0;
  uint16_t dlid = 0, slid = 0;
  uint8_t global = 0, pad[3] = {};
  uint8_t dgid[16] = {}, sgid[16] = {};
};
struct Request {
  uint32_t magic = kRequestMagic;
  uint32_t opcode = 0, generation = 0, psn = 0, packets = 0, rkey = 0, imm = 0, pad = 0;
  uint64_t remoteAddr = 0, length = 0, compareAdd = 0, swap = 0;
};
enum Kind : uint32_t { kAck, kNakAccess, kNakInvalid, kNakOperation, kRnr, kDropped };
struct Response {
  uint32_t magic = kResponseMagic;
  uint32_t kind = kAck, generation = 0, psn = 0;
  uint64_t value = 0;   // an atomic's original value
  uint64_t length = 0;  // a read's payload bytes, which follow
  uint32_t rnrTimer = 0, pad = 0;
};

bool trace() {
  static const bool on = std::getenv("IBV_DOUBLE_TRACE") && *std::getenv("IBV_DOUBLE_TRACE") == '1';
  return on;
}
#define IBVD_TRACE(...)                                             \
  do {                                                              \
    if (trace()) {                                                  \
      std::fprintf(stderr, "ibverbs double [%d]: ", (int)getpid()); \
      std::fprintf(stderr, __VA_ARGS__);                            \
      std::fputc('\n', stderr);                                     \
    }                                                               \
  } while (0)

struct Listener {
  int fd = -1;
  uint16_t port = 0;
  Qp* slots[256] = {};
  int used = 0, next = 0;
};

struct Link {  // a requester QP's connection
  uint64_t id = 0;
  int fd = -1;
  bool connecting = false, up = false, unroutable = false;
  bool failed = false;  // the last attempt failed: the next one waits for the transport timer
  std::string out, in;
  size_t outOff = 0;
};

struct Inbound {  // a connection from a peer's requester QP
  uint64_t id = 0;
  int fd = -1;
  std::string head;  // header bytes being collected
  bool haveHello = false;
  Hello hello;
  bool inPayload = false;
  Request req;
  uint64_t left = 0, got = 0;
  char* dst = nullptr;  // where the payload goes; null: into `temp`
  std::string temp;
  Kind verdict = kAck;
  bool duplicate = false;
  std::string out;
  size_t outOff = 0;
};

struct Fabric {
  int wakeFd = -1;
  uint64_t nextId = 1;
  std::vector<Listener*> listeners;
  std::map<Qp*, Link*> links;
  std::map<uint64_t, Inbound*> inbound;
};
Fabric* gFabric = nullptr;

bool isReadOrAtomic(ibv_wr_opcode op) {
  return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}
bool carriesData(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
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

// IBA vol. 1, ch. 9 (reliable service, transport timer): the local ACK
// timeout is 4.096 us x 2^timeout, 0
// meaning infinite. A responder here is a thread, not silicon, so the double
// never waits less than IBV_DOUBLE_MIN_ACK_TIMEOUT_MS for an answer.
int64_t ackTimeoutMs(const Qp* qp) {
  if (qp->attr.timeout == 0) return 0;
  const double ms = 4.096e-3 * static_cast<double>(1ull << qp->attr.timeout);
  return std::max<int64_t>(static_cast<int64_t>(ms + 0.999), config().minAckTimeoutMs);
}

// IBA vol. 1, table "Encoding for RNR NAK timer field" (min_rnr_timer), in ms.
double rnrDelayMs(uint32_t code) {
  static const double table[32] = {655.36, 0.01,  0.02,  0.03,  0.04,  0.06,   0.08,   0.12,   0.16,   0.24,  0.32,
                                   0.48,   0.64,  0.96,  1.28,  1.92,  2.56,   3.84,   5.12,   7.68,   10.24, 15.36,
                                   20.48,  30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
  return table[code & 31];
}

uint32_t mtuBytes(int mtuEnum) { return 128u << mtuEnum; }

Fabric& fabric();

void closeLink(Link* l) {
  if (l->fd >= 0) close(l->fd);
  l->failed = l->fd >= 0;
  l->fd = -1;
  l->connecting = l->up = false;
  l->out.clear();
  l->in.clear();
  l->outOff = 0;
}

// ---- requester ---------------------------------------------------------------------------

// Everything sent is sent again, from the oldest unanswered request; answers
// to what was sent before carry the old generation and are ignored.
void rewind(Qp* qp) {
  for (SendWqe& w : qp->sq) {
    w.sent = false;
    w.localError = IBV_WC_SUCCESS;
  }
  qp->generation++;
}

bool anySent(const Qp* qp) {
  for (const SendWqe& w : qp->sq)
    if (w.sent) return true;
  return false;
}

void failFront(Qp* qp, ibv_wc_status status) {
  const SendWqe& w = qp->sq.front();
  IBVD_TRACE("QP %u: request %llu fails: %s", qp->qp.qp_num, (unsigned long long)w.wrId, ibv_wc_status_str(status));
  CqEntry e;
  e.wc.wr_id = w.wrId;
  e.wc.status = status;
  e.wc.opcode = completionOpcode(w.opcode);
  e.wc.qp_num = qp->qp.qp_num;
  e.wc.vendor_err = 0x81;
  e.qpn = qp->qp.qp_num;
  e.sqSlots = 1 + qp->retiredUnsignaled;
  qp->retiredUnsignaled = 0;
  pushCompletion(qp->sendCq, e);
  qp->sq.pop_front();
  enterError(qp);
}

void completeFront(Qp* qp) {
  const SendWqe& w = qp->sq.front();
  if (w.signaled) {
    CqEntry e;
    e.wc.wr_id = w.wrId;
    e.wc.status = IBV_WC_SUCCESS;
    e.wc.opcode = completionOpcode(w.opcode);
    e.wc.qp_num = qp->qp.qp_num;
    e.wc.byte_len = static_cast<uint32_t>(w.length);
    e.qpn = qp->qp.qp_num;
    e.sqSlots = 1 + qp->retiredUnsignaled;
    qp->retiredUnsignaled = 0;
    pushCompletion(qp->sendCq, e);
  } else {
    qp->retiredUnsignaled++;
  }
  qp->sq.pop_front();
  qp->retries = qp->rnrRetries = 0;
  qp->ackDeadlineMs = anySent(qp) && qp->attr.timeout != 0 ? nowMs() + ackTimeoutMs(qp) : 0;
}

// A request whose s/g list failed the HCA's check completes in error when
// it reaches the head of the queue, after the requests before it.
void failLocalErrorsAtFront(Qp* qp) {
  if (qp->state == IBV_QPS_RTS && !qp->sq.empty() && qp->sq.front().localError != IBV_WC_SUCCESS)
    failFront(qp, qp->sq.front().localError);
}

Hello helloOf(const Qp* qp) {
  Hello h;
  const ibv_ah_attr& ah = qp->attr.ah_attr;
  const int dev = qp->ctx->device, port = ah.port_num;
  h.dstQpn = qp->attr.dest_qp_num;
  h.mtuBytes = mtuBytes(qp->attr.path_mtu);
  h.global = ah.is_global;
  h.dlid = ah.dlid;
  h.slid = portLid(dev, port);
  std::memcpy(h.dgid, ah.grh.dgid.raw, 16);
  if (ah.is_global) std::memcpy(h.sgid, gidEntry(dev, port, ah.grh.sgid_index).gid.raw, 16);
  return h;
}

Link* linkOf(Qp* qp) {
  Fabric& f = fabric();
  Link*& l = f.links[qp];
  if (l == nullptr) {
    l = new Link;
    l->id = f.nextId++;
  }
  return l;
}

// Opens the QP's connection unless it is open or opening. An address the
// fabric cannot deliver to leaves it unroutable: requests are lost and the
// QP's retries run out, as on a wire.
void connectLink(Qp* qp, Link* l) {
  if (l->up || l->connecting || l->unroutable || l->failed) return;
  const DeviceSpec& d = config().devices[static_cast<size_t>(qp->ctx->device)];
  std::string why;
  Route r = routeOf(qp->ctx->device, qp->attr.ah_attr.port_num, qp->attr.ah_attr, &why);
  if (r.hostAddr != 0 && !d.portActive) why = "the port is down", r.hostAddr = 0;
  if (r.hostAddr != 0 && qp->attr.path_mtu > d.mtu) why = "the path MTU exceeds the port's active MTU", r.hostAddr = 0;
  if (r.hostAddr == 0) {
    IBVD_TRACE("QP %u -> QP %u: unroutable: %s", qp->qp.qp_num, qp->attr.dest_qp_num, why.c_str());
    l->unroutable = true;
    return;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(r.hostAddr);
  a.sin_port = htons(static_cast<uint16_t>(qp->attr.dest_qp_num >> 8));
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  if (rc != 0 && errno != EINPROGRESS) {
    IBVD_TRACE("QP %u -> QP %u: connect: %s", qp->qp.qp_num, qp->attr.dest_qp_num, std::strerror(errno));
    close(fd);
    l->failed = true;
    return;
  }
  l->fd = fd;
  l->connecting = true;
}

void linkUp(Qp* qp, Link* l) {
  l->connecting = false;
  l->up = true;
  Hello h = helloOf(qp);
  l->out.assign(reinterpret_cast<const char*>(&h), sizeof(h));
  l->outOff = 0;
  rewind(qp);  // what went out before the connection was lost
}

// Sends what the queue allows: in order, at most max_rd_atomic reads and
// atomics outstanding (IBA vol. 1, ch. 9: the initiator depth), nothing past
// a fenced request until the reads and atomics before it completed.
void pump(Qp* qp, int64_t now) {
  if (qp->state != IBV_QPS_RTS || qp->sq.empty()) return;
  if (qp->resendAtMs != 0 && now < qp->resendAtMs) return;
  qp->resendAtMs = 0;
  Link* l = linkOf(qp);
  connectLink(qp, l);
  int readsOut = 0;
  const int depth = std::max<int>(1, qp->attr.max_rd_atomic);
  for (SendWqe& w : qp->sq) {
    if (w.sent) {
      readsOut += isReadOrAtomic(w.opcode);
      continue;
    }
    if (isReadOrAtomic(w.opcode) && readsOut >= depth) break;
    if ((w.flags & IBV_SEND_FENCE) && readsOut > 0) break;
    std::string payload;
    // A message longer than the port's max_msg_sz (ibv_query_port(3))
    // cannot be sent: a local length error.
    if (w.length > config().devices[static_cast<size_t>(qp->ctx->device)].maxMsg) {
      w.localError = IBV_WC_LOC_LEN_ERR;
    } else if (carriesData(w.opcode)) {
      if (w.isInline) {
        payload = w.inlineData;
      } else {
        for (const ibv_sge& s : w.sges) {
          if (s.length == 0) continue;
          Mr* mr = localMr(qp->pd, s.lkey, s.addr, s.length, 0);
          if (mr == nullptr) {
            w.localError = IBV_WC_LOC_PROT_ERR;
            break;
          }
          payload.append(mr->host + (s.addr - mr->iova), s.length);
        }
      }
    } else {
      for (const ibv_sge& s : w.sges)
        if (s.length != 0 && localMr(qp->pd, s.lkey, s.addr, s.length, IBV_ACCESS_LOCAL_WRITE) == nullptr)
          w.localError = IBV_WC_LOC_PROT_ERR;
    }
    w.sent = true;
    if (w.localError != IBV_WC_SUCCESS) break;
    if (l->up) {
      Request rq;
      rq.opcode = w.opcode;
      rq.generation = qp->generation;
      rq.psn = w.psn;
      rq.packets = w.packets;
      rq.rkey = w.rkey;
      rq.imm = w.imm;
      rq.remoteAddr = w.remoteAddr;
      rq.length = w.length;
      rq.compareAdd = w.compareAdd;
      rq.swap = w.swap;
      l->out.append(reinterpret_cast<const char*>(&rq), sizeof(rq));
      l->out += payload;
    }
    if (qp->ackDeadlineMs == 0 && qp->attr.timeout != 0) qp->ackDeadlineMs = now + ackTimeoutMs(qp);
    readsOut += isReadOrAtomic(w.opcode);
  }
  failLocalErrorsAtFront(qp);
}

// Writes a read's data or an atomic's original value into the local s/g list.
bool scatterLocal(Qp* qp, const SendWqe& w, const char* data, size_t n) {
  size_t off = 0;
  for (const ibv_sge& s : w.sges) {
    if (off >= n) break;
    size_t k = std::min<size_t>(s.length, n - off);
    Mr* mr = localMr(qp->pd, s.lkey, s.addr, k, IBV_ACCESS_LOCAL_WRITE);
    if (mr == nullptr) return false;
    std::memcpy(mr->host + (s.addr - mr->iova), data + off, k);
    off += k;
  }
  return true;
}

void onResponse(Qp* qp, const Response& r, const std::string& payload) {
  if (r.generation != qp->generation || qp->sq.empty() || qp->state != IBV_QPS_RTS) return;
  SendWqe& w = qp->sq.front();
  if (!w.sent || w.psn != r.psn) return;
  switch (r.kind) {
    case kAck:
      if (w.opcode == IBV_WR_RDMA_READ && !scatterLocal(qp, w, payload.data(), payload.size())) {
        failFront(qp, IBV_WC_LOC_PROT_ERR);
        return;
      }
      if ((w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) &&
          !scatterLocal(qp, w, reinterpret_cast<const char*>(&r.value), 8)) {
        failFront(qp, IBV_WC_LOC_PROT_ERR);
        return;
      }
      completeFront(qp);
      failLocalErrorsAtFront(qp);
      return;
    case kNakAccess:
      failFront(qp, IBV_WC_REM_ACCESS_ERR);
      return;
    case kNakInvalid:
      failFront(qp, IBV_WC_REM_INV_REQ_ERR);
      return;
    case kNakOperation:
      failFront(qp, IBV_WC_REM_OP_ERR);
      return;
    case kRnr:
      // IBA vol. 1, ch. 9 (RNR NAK); rnr_retry 7 retries forever.
      if (qp->attr.rnr_retry < 7 && ++qp->rnrRetries > qp->attr.rnr_retry) {
        failFront(qp, IBV_WC_RNR_RETRY_EXC_ERR);
        return;
      }
      rewind(qp);
      qp->ackDeadlineMs = 0;
      qp->resendAtMs = nowMs() + static_cast<int64_t>(rnrDelayMs(r.rnrTimer) + 0.999);
      return;
    case kDropped:
    default:
      // Nothing reached the responder's QP: the transport timer expires and
      // the request goes again, counted against retry_cnt. Without a timer
      // (timeout 0) the requester waits forever.
      if (qp->attr.timeout == 0) return;
      if (++qp->retries > qp->attr.retry_cnt) {
        failFront(qp, IBV_WC_RETRY_EXC_ERR);
        return;
      }
      rewind(qp);
      qp->ackDeadlineMs = 0;
      qp->resendAtMs = nowMs() + ackTimeoutMs(qp);
      return;
  }
}

// The transport timer of every QP waiting for an answer (IBA vol. 1,
// ch. 9, reliable service: after retry_cnt retries the request completes with
// IBV_WC_RETRY_EXC_ERR). A lost connection is opened again at each expiry.
void onTimers(int64_t now) {
  Fabric& f = fabric();
  for (auto& [qpn, qp] : state().qps) {
    if (qp->state != IBV_QPS_RTS) continue;
    if (qp->ackDeadlineMs != 0 && now >= qp->ackDeadlineMs && anySent(qp)) {
      if (++qp->retries > qp->attr.retry_cnt) {
        failFront(qp, IBV_WC_RETRY_EXC_ERR);
        continue;
      }
      IBVD_TRACE("QP %u: no answer, retry %d of %d", qpn, qp->retries, qp->attr.retry_cnt);
      qp->ackDeadlineMs = now + ackTimeoutMs(qp);
      auto it = f.links.find(qp);
      if (it != f.links.end() && !it->second->up && !it->second->connecting) {
        it->second->failed = false;
        rewind(qp);
      }
    }
    pump(qp, now);
  }
}

void readLink(Qp* qp, Link* l) {
  char buf[65536];
  for (;;) {
    ssize_t n = recv(l->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      l->in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    IBVD_TRACE("QP %u: connection to QP %u lost", qp->qp.qp_num, qp->attr.dest_qp_num);
    closeLink(l);  // the peer is gone: nothing answers from now on
    return;
  }
  size_t off = 0;
  while (l->in.size() - off >= sizeof(Response)) {
    Response r;
    std::memcpy(&r, l->in.data() + off, sizeof(r));
    if (r.magic != kResponseMagic) {
      closeLink(l);
      return;
    }
    if (l->in.size() - off - sizeof(r) < r.length) break;
    std::string payload = l->in.substr(off + sizeof(r), r.length);
    off += sizeof(r) + r.length;
    onResponse(qp, r, payload);
    if (l->fd < 0) return;
  }
  l->in.erase(0, off);
}

// ---- responder --------------------------------------------------------------------------

bool addressedTo(const Qp* qp, const Hello& h) {
  const int dev = qp->ctx->device, port = qp->attr.port_num;
  if (!h.global) return h.dlid != 0 && h.dlid == portLid(dev, port);
  for (int i = 0; i < kGidTableLen; ++i) {
    GidEntry e = gidEntry(dev, port, i);
    if (e.valid && std::memcmp(e.gid.raw, h.dgid, 16) == 0) return true;
  }
  return false;
}

// An RC QP takes packets only from the path it was connected to.
bool fromPeer(const Qp* qp, const Hello& h) {
  const ibv_ah_attr& ah = qp->attr.ah_attr;
  if (ah.is_global) return h.global && std::memcmp(ah.grh.dgid.raw, h.sgid, 16) == 0;
  return !h.global && ah.dlid == h.slid;
}

void respond(Inbound* in, Kind kind, const Request& rq, uint64_t value, const std::string& data, uint32_t rnr) {
  Response r;
  r.kind = kind;
  r.generation = rq.generation;
  r.psn = rq.psn;
  r.value = value;
  r.length = data.size();
  r.rnrTimer = rnr;
  in->out.append(reinterpret_cast<const char*>(&r), sizeof(r));
  in->out += data;
}

bool pagesMapped(const void* p, size_t n) {
  if (n == 0) return true;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  std::vector<unsigned char> v((end - start + page - 1) / page);
  return mincore(reinterpret_cast<void*>(start), end - start, v.data()) == 0;
}

// The responder's checks of an RDMA request (IBA vol. 1, ch. 9 and 10,
// memory protection: the R_Key names a region of the QP's PD on this HCA, which grants
// the access, as the QP does, and holds the whole range). A zero-length
// RDMA write checks no R_Key.
Mr* remoteMr(const Qp* qp, uint32_t rkey, uint64_t addr, uint64_t len, int access) {
  if ((qp->attr.qp_access_flags & static_cast<unsigned>(access)) != static_cast<unsigned>(access)) return nullptr;
  auto it = state().keys.find(rkey);
  if (it == state().keys.end()) return nullptr;
  Mr* mr = it->second;
  if (mr->device != qp->ctx->device || mr->pd != qp->pd || (mr->access & access) != access) return nullptr;
  if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len) return nullptr;
  return mr;
}

Qp* responderQp(Inbound* in) {
  auto it = state().qps.find(in->hello.dstQpn);
  return it == state().qps.end() ? nullptr : it->second;
}

// A request header arrived: decide what happens to it and where its payload goes.
void beginRequest(Inbound* in) {
  const Request& rq = in->req;
  in->verdict = kAck;
  in->duplicate = false;
  in->dst = nullptr;
  in->temp.clear();
  in->got = 0;
  in->left = carriesData(static_cast<ibv_wr_opcode>(rq.opcode)) ? rq.length : 0;
  Qp* qp = responderQp(in);
  const char* drop = nullptr;
  if (qp == nullptr)
    drop = "no such QP";
  else if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS)
    drop = "the QP is not in RTR or RTS";
  else if (!addressedTo(qp, in->hello))
    drop = "the destination address is not the QP's port";
  else if (!fromPeer(qp, in->hello))
    drop = "the source is not the QP's connected peer";
  else if (in->hello.mtuBytes > mtuBytes(config().devices[static_cast<size_t>(qp->ctx->device)].mtu))
    drop = "packets beyond the port's active MTU";
  if (drop == nullptr) {
    const uint32_t diff = (rq.psn - qp->expectedPsn) & 0xffffff;
    if (diff != 0 && diff < 0x800000) drop = "PSN sequence error";
    in->duplicate = diff >= 0x800000;
  }
  if (drop != nullptr) {
    IBVD_TRACE("QP %u: dropped a request: %s", in->hello.dstQpn, drop);
    in->verdict = kDropped;
    return;
  }
  if (in->duplicate) return;
  const ibv_wr_opcode op = static_cast<ibv_wr_opcode>(rq.opcode);
  const bool needsRecv = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
  if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
    if (rq.length != 0) {
      Mr* mr = remoteMr(qp, rq.rkey, rq.remoteAddr, rq.length, IBV_ACCESS_REMOTE_WRITE);
      if (mr == nullptr) {
        in->verdict = kNakAccess;
        return;
      }
      in->dst = mr->host + (rq.remoteAddr - mr->iova);
      if (!pagesMapped(in->dst, rq.length)) {
        misuse("an RDMA write into a region whose memory was unmapped while registered (rkey 0x%x)", rq.rkey);
        in->dst = nullptr;
      }
    }
  } else if (op == IBV_WR_RDMA_READ) {
    if (rq.length != 0 && remoteMr(qp, rq.rkey, rq.remoteAddr, rq.length, IBV_ACCESS_REMOTE_READ) == nullptr)
      in->verdict = kNakAccess;
  } else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    // IBA vol. 1, 9.4.5: atomics address 8 aligned bytes.
    if (rq.remoteAddr % 8 != 0)
      in->verdict = kNakInvalid;
    else if (remoteMr(qp, rq.rkey, rq.remoteAddr, 8, IBV_ACCESS_REMOTE_ATOMIC) == nullptr)
      in->verdict = kNakAccess;
  } else if (op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM) {
    in->verdict = kNakInvalid;
  }
  if (in->verdict == kAck && needsRecv && qp->rq.empty()) in->verdict = kRnr;
  if (in->verdict == kRnr || in->verdict == kNakAccess || in->verdict == kNakInvalid) in->dst = nullptr;
}

void pushRecvCompletion(Qp* qp, const RecvWqe& r, ibv_wc_status status, ibv_wc_opcode opcode, uint32_t bytes,
                        const Request& rq, bool withImm) {
  CqEntry e;
  e.wc.wr_id = r.wrId;
  e.wc.status = status;
  e.wc.opcode = opcode;
  e.wc.byte_len = bytes;
  e.wc.qp_num = qp->qp.qp_num;
  e.wc.src_qp = qp->attr.dest_qp_num;
  if (withImm) {
    e.wc.imm_data = rq.imm;
    e.wc.wc_flags = IBV_WC_WITH_IMM;
  }
  e.qpn = qp->qp.qp_num;
  pushCompletion(qp->recvCq, e);
}

// The whole request arrived: carry it out and answer.
void finishRequest(Inbound* in) {
  const Request& rq = in->req;
  Qp* qp = responderQp(in);
  const ibv_wr_opcode op = static_cast<ibv_wr_opcode>(rq.opcode);
  if (in->verdict == kDropped || qp == nullptr || (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS)) {
    respond(in, kDropped, rq, 0, std::string(), 0);
    return;
  }
  if (in->duplicate) {
    // A request answered before: answered again, not carried out again
    // (IBA vol. 1, ch. 9: duplicate requests); an atomic's saved result.
    uint64_t value = 0;
    for (auto& [psn, v] : qp->atomicResults)
      if (psn == rq.psn) value = v;
    respond(in, kAck, rq, value, std::string(), 0);
    return;
  }
  switch (in->verdict) {
    case kRnr:
      respond(in, kRnr, rq, 0, std::string(), qp->attr.min_rnr_timer);
      return;
    case kNakAccess:
    case kNakInvalid:
      // The responder's QP is broken too: IBV_EVENT_QP_ACCESS_ERR or
      // IBV_EVENT_QP_REQ_ERR (ibv_get_async_event(3)), and it enters ERR.
      respond(in, in->verdict, rq, 0, std::string(), 0);
      IBVD_TRACE("QP %u: %s from QP %u; it enters ERR", qp->qp.qp_num,
                 in->verdict == kNakAccess ? "remote access violation" : "invalid request", qp->attr.dest_qp_num);
      enterError(qp);
      return;
    default:
      break;
  }
  uint64_t value = 0;
  std::string data;
  if (op == IBV_WR_RDMA_READ) {
    if (rq.length != 0) {
      Mr* mr = remoteMr(qp, rq.rkey, rq.remoteAddr, rq.length, IBV_ACCESS_REMOTE_READ);
      data.assign(mr->host + (rq.remoteAddr - mr->iova), rq.length);
    }
  } else if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    Mr* mr = remoteMr(qp, rq.rkey, rq.remoteAddr, 8, IBV_ACCESS_REMOTE_ATOMIC);
    auto* word = reinterpret_cast<uint64_t*>(mr->host + (rq.remoteAddr - mr->iova));
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      value = __atomic_fetch_add(word, rq.compareAdd, __ATOMIC_SEQ_CST);
    } else {
      value = rq.compareAdd;
      __atomic_compare_exchange_n(word, &value, rq.swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    }
    qp->atomicResults.emplace_back(rq.psn, value);
    if (qp->atomicResults.size() > 16) qp->atomicResults.pop_front();
  } else if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM) {
    RecvWqe r = qp->rq.front();
    qp->rq.pop_front();
    size_t capacity = 0;
    for (const ibv_sge& s : r.sges) capacity += s.length;
    const bool withImm = op == IBV_WR_SEND_WITH_IMM;
    if (capacity < in->temp.size()) {
      // The receive buffer is too small: IBV_WC_LOC_LEN_ERR here, a remote
      // invalid request error at the requester, and both QPs in ERR.
      pushRecvCompletion(qp, r, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, rq, false);
      respond(in, kNakInvalid, rq, 0, std::string(), 0);
      enterError(qp);
      return;
    }
    size_t off = 0;
    for (const ibv_sge& s : r.sges) {
      if (off >= in->temp.size()) break;
      size_t k = std::min<size_t>(s.length, in->temp.size() - off);
      Mr* mr = localMr(qp->pd, s.lkey, s.addr, k, IBV_ACCESS_LOCAL_WRITE);
      if (mr == nullptr) {
        pushRecvCompletion(qp, r, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, rq, false);
        respond(in, kNakOperation, rq, 0, std::string(), 0);
        enterError(qp);
        return;
      }
      std::memcpy(mr->host + (s.addr - mr->iova), in->temp.data() + off, k);
      off += k;
    }
    pushRecvCompletion(qp, r, IBV_WC_SUCCESS, IBV_WC_RECV, static_cast<uint32_t>(in->temp.size()), rq, withImm);
  } else if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
    RecvWqe r = qp->rq.front();
    qp->rq.pop_front();
    pushRecvCompletion(qp, r, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, static_cast<uint32_t>(rq.length), rq, true);
  }
  qp->expectedPsn = (qp->expectedPsn + rq.packets) & 0xffffff;
  respond(in, kAck, rq, value, data, 0);
}

void closeInbound(Inbound* in) {
  if (in->fd >= 0) close(in->fd);
  fabric().inbound.erase(in->id);
  delete in;
}

// Reads what arrived: the hello, then requests and their payloads.
void readInbound(Inbound* in) {
  char buf[65536];
  for (;;) {
    if (in->inPayload) {
      char* into = in->dst ? in->dst + in->got : buf;
      size_t want = static_cast<size_t>(std::min<uint64_t>(in->left, in->dst ? in->left : sizeof(buf)));
      ssize_t n = recv(in->fd, into, want, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        closeInbound(in);
        return;
      }
      if (n < 0) return;
      const ibv_wr_opcode op = static_cast<ibv_wr_opcode>(in->req.opcode);
      if (in->dst == nullptr && in->verdict == kAck && !in->duplicate &&
          (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM))
        in->temp.append(buf, static_cast<size_t>(n));
      in->got += static_cast<uint64_t>(n);
      in->left -= static_cast<uint64_t>(n);
      if (in->left == 0) {
        in->inPayload = false;
        finishRequest(in);
      }
      continue;
    }
    const size_t need = in->haveHello ? sizeof(Request) : sizeof(Hello);
    ssize_t n = recv(in->fd, buf, need - in->head.size(), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      closeInbound(in);
      return;
    }
    if (n < 0) return;
    in->head.append(buf, static_cast<size_t>(n));
    if (in->head.size() < need) continue;
    if (!in->haveHello) {
      std::memcpy(&in->hello, in->head.data(), sizeof(Hello));
      in->head.clear();
      if (in->hello.magic != kHelloMagic) {
        closeInbound(in);
        return;
      }
      in->haveHello = true;
      continue;
    }
    std::memcpy(&in->req, in->head.data(), sizeof(Request));
    in->head.clear();
    if (in->req.magic != kRequestMagic) {
      closeInbound(in);
      return;
    }
    beginRequest(in);
    if (in->left > 0) {
      in->inPayload = true;
    } else {
      finishRequest(in);
    }
  }
}

// Writes out what waits; false when the connection broke.
bool flushOut(int fd, std::string& out, size_t& off) {
  while (off < out.size()) {
    ssize_t n = send(fd, out.data() + off, out.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    off += static_cast<size_t>(n);
  }
  out.clear();
  off = 0;
  return true;
}

// ---- the thread -------------------------------------------------------------------------

enum Tag : uint8_t { kWake, kListen, kLink, kInbound };
struct Watch {
  Tag tag;
  uint64_t id;  // link or inbound id, listener index
  Qp* qp;       // a link's QP (checked against the table before use)
};

void serve() {
  std::vector<pollfd> fds;
  std::vector<Watch> watches;
  for (;;) {
    int timeoutMs = 100;
    fds.clear();
    watches.clear();
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      Fabric& f = fabric();
      const int64_t now = nowMs();
      onTimers(now);
      fds.push_back({f.wakeFd, POLLIN, 0});
      watches.push_back({kWake, 0, nullptr});
      for (size_t i = 0; i < f.listeners.size(); ++i) {
        fds.push_back({f.listeners[i]->fd, POLLIN, 0});
        watches.push_back({kListen, i, nullptr});
      }
      for (auto& [qp, l] : f.links) {
        if (l->up && !l->out.empty() && !flushOut(l->fd, l->out, l->outOff)) closeLink(l);
        if (l->fd < 0) continue;
        short ev = POLLIN;
        if (l->connecting || !l->out.empty()) ev |= POLLOUT;
        fds.push_back({l->fd, ev, 0});
        watches.push_back({kLink, l->id, qp});
      }
      for (auto& [id, in] : f.inbound) {
        short ev = POLLIN;
        if (!in->out.empty()) ev |= POLLOUT;
        fds.push_back({in->fd, ev, 0});
        watches.push_back({kInbound, id, nullptr});
      }
      for (auto& [qpn, qp] : state().qps) {
        for (int64_t t : {qp->ackDeadlineMs, qp->resendAtMs})
          if (t != 0) timeoutMs = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(timeoutMs, t - now)));
      }
    }
    poll(fds.data(), fds.size(), timeoutMs);
    std::lock_guard<std::mutex> lock(state().mutex);
    Fabric& f = fabric();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const Watch& w = watches[i];
      if (w.tag == kWake) {
        uint64_t v;
        while (read(f.wakeFd, &v, sizeof(v)) > 0) {
        }
      } else if (w.tag == kListen) {
        if (w.id >= f.listeners.size()) continue;
        for (;;) {
          int fd = accept4(f.listeners[w.id]->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          auto* in = new Inbound;
          in->id = f.nextId++;
          in->fd = fd;
          f.inbound[in->id] = in;
        }
      } else if (w.tag == kLink) {
        auto it = f.links.find(w.qp);
        if (it == f.links.end() || it->second->id != w.id || it->second->fd < 0) continue;
        Link* l = it->second;
        if (l->connecting) {
          int err = 0;
          socklen_t len = sizeof(err);
          getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &len);
          if (err != 0) {
            IBVD_TRACE("QP %u -> QP %u: connect: %s", w.qp->qp.qp_num, w.qp->attr.dest_qp_num, std::strerror(err));
            closeLink(l);
            continue;
          }
          if ((fds[i].revents & POLLOUT) == 0) continue;
          linkUp(w.qp, l);
          pump(w.qp, nowMs());
        }
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) readLink(w.qp, l);
        if (l->fd >= 0 && !flushOut(l->fd, l->out, l->outOff)) closeLink(l);
      } else {
        auto it = f.inbound.find(w.id);
        if (it == f.inbound.end()) continue;
        Inbound* in = it->second;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) readInbound(in);
        it = f.inbound.find(w.id);
        if (it != f.inbound.end() && !flushOut(in->fd, in->out, in->outOff)) closeInbound(in);
      }
    }
  }
}

Fabric& fabric() {
  if (gFabric == nullptr) {
    gFabric = new Fabric;
    gFabric->wakeFd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    std::thread(serve).detach();
  }
  return *gFabric;
}

Listener* newListener() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return nullptr;
  }
  auto* l = new Listener;
  l->fd = fd;
  l->port = ntohs(a.sin_port);
  return l;
}

}  // namespace

// QP numbers are 24 bits: a listener's TCP port and one of its 256 slots,
// so a requester finds the process that owns a QP from its number alone.
uint32_t allocateQpn(Qp* qp, int* err) {
  Fabric& f = fabric();
  Listener* l = nullptr;
  for (Listener* x : f.listeners)
    if (x->used < 256) l = x;
  if (l == nullptr) {
    l = newListener();
    if (l == nullptr) {
      *err = ENOMEM;
      return 0;
    }
    f.listeners.push_back(l);
  }
  while (l->slots[l->next] != nullptr) l->next = (l->next + 1) % 256;
  const int slot = l->next;
  l->next = (l->next + 1) % 256;  // slots are reused last: a late packet rarely finds a new QP
  l->slots[slot] = qp;
  l->used++;
  return static_cast<uint32_t>(l->port) << 8 | static_cast<uint32_t>(slot);
}

void releaseQpn(Qp* qp) {
  Fabric& f = fabric();
  const uint32_t qpn = qp->qp.qp_num;
  for (Listener* l : f.listeners) {
    if (l->port == (qpn >> 8) && l->slots[qpn & 0xff] == qp) {
      l->slots[qpn & 0xff] = nullptr;
      l->used--;
    }
  }
  auto it = f.links.find(qp);
  if (it != f.links.end()) {
    closeLink(it->second);
    delete it->second;
    f.links.erase(it);
  }
}

void kick() {
  if (gFabric == nullptr) return;
  uint64_t one = 1;
  ssize_t n = write(gFabric->wakeFd, &one, sizeof(one));
  (void)n;
}

// The parent's fabric belongs to the parent: the child closes its copies of
// the sockets (a listener held open here would keep answering for the
// parent after it died) and starts with none.
void closeFabricAfterFork() {
  if (gFabric == nullptr) return;
  for (Listener* l : gFabric->listeners) close(l->fd);
  for (auto& [qp, l] : gFabric->links)
    if (l->fd >= 0) close(l->fd);
  for (auto& [id, in] : gFabric->inbound) close(in->fd);
  close(gFabric->wakeFd);
  gFabric = nullptr;
}

}  // namespace ibvdouble
