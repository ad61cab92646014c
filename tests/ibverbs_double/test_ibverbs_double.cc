// The verbs double's own rules (docs/ibverbs-double.md): device and port
// attributes, GID tables, memory registration and its access flags, the QP
// state machine, RDMA writes, writes with immediate, atomics, inline data,
// the send queue depth, and every error completion the transport depends on.
// The program links the double directly and is also its own peer process:
// `test_ibverbs_double responder DEVICE` serves one QP over stdin/stdout.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "catch_session.hpp"
#include "infiniband/verbs.h"

namespace {

constexpr int kAllAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct Hca {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  uint8_t linkLayer = 0;
};

// The helpers report failure by their result: the responder process runs
// them outside any test case.
bool tryOpenHca(const char* name, Hca* h) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return false;
  for (int i = 0; i < n; ++i)
    if (std::string(ibv_get_device_name(list[i])) == name) h->ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (h->ctx == nullptr || (h->pd = ibv_alloc_pd(h->ctx)) == nullptr) return false;
  ibv_port_attr pa{};
  if (ibv_query_port(h->ctx, 1, &pa) != 0) return false;
  h->linkLayer = pa.link_layer;
  return true;
}
Hca openHca(const char* name) {
  Hca h;
  REQUIRE(tryOpenHca(name, &h));
  return h;
}

struct Qp {
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_qp_cap cap{};
};

bool tryMakeQp(Hca& h, Qp* out, uint32_t sendWr = 16, uint32_t recvWr = 4, uint32_t inlineBytes = 64) {
  Qp& q = *out;
  q.cq = ibv_create_cq(h.ctx, 256, nullptr, nullptr, 0);
  if (q.cq == nullptr) return false;
  ibv_qp_init_attr init{};
  init.send_cq = q.cq;
  init.recv_cq = q.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = sendWr;
  init.cap.max_recv_wr = recvWr;
  init.cap.max_send_sge = 2;
  init.cap.max_recv_sge = 2;
  init.cap.max_inline_data = inlineBytes;
  q.qp = ibv_create_qp(h.pd, &init);
  q.cap = init.cap;
  return q.qp != nullptr;
}
Qp makeQp(Hca& h) {
  Qp q;
  REQUIRE(tryMakeQp(h, &q));
  return q;
}

int toInit(ibv_qp* qp, int access = kAllAccess, uint8_t port = 1) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = port;
  a.qp_access_flags = static_cast<unsigned>(access);
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

// The peer's address as the transport exchanges it.
struct Address {
  uint32_t qpn = 0;
  uint16_t lid = 0;
  ibv_gid gid{};
  uint32_t psn = 0;
};

Address addressOf(Hca& h, ibv_qp* qp, int gidIndex, uint8_t port = 1) {
  Address a;
  ibv_port_attr pa{};
  ibv_query_port(h.ctx, port, &pa);
  a.qpn = qp->qp_num;
  a.lid = pa.lid;
  ibv_query_gid(h.ctx, port, gidIndex, &a.gid);
  a.psn = 100;
  return a;
}

int toRtr(ibv_qp* qp, const Address& peer, bool global, int sgidIndex, uint8_t port = 1, ibv_mtu mtu = IBV_MTU_1024) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.dlid = peer.lid;
  a.ah_attr.port_num = port;
  if (global) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer.gid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(sgidIndex);
    a.ah_attr.grh.hop_limit = 64;
  }
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int toRts(ibv_qp* qp, uint32_t psn = 100, uint8_t timeout = 14, uint8_t retry = 7, uint8_t rnrRetry = 7) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = psn;
  a.timeout = timeout;
  a.retry_cnt = retry;
  a.rnr_retry = rnrRetry;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(
      qp, &a,
      IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

// Two QPs of one process connected to each other through the fabric.
struct Pair {
  Hca h;
  Qp a, b;
};
Pair connectedPair(const char* device = "mlx5_0", uint8_t timeout = 14, uint8_t retry = 7, uint8_t rnrRetry = 7) {
  Pair p;
  p.h = openHca(device);
  p.a = makeQp(p.h);
  p.b = makeQp(p.h);
  const bool roce = p.h.linkLayer == IBV_LINK_LAYER_ETHERNET;
  const int gid = roce ? 3 : 0;
  REQUIRE(toInit(p.a.qp) == 0);
  REQUIRE(toInit(p.b.qp) == 0);
  REQUIRE(toRtr(p.a.qp, addressOf(p.h, p.b.qp, gid), roce, gid) == 0);
  REQUIRE(toRtr(p.b.qp, addressOf(p.h, p.a.qp, gid), roce, gid) == 0);
  REQUIRE(toRts(p.a.qp, 100, timeout, retry, rnrRetry) == 0);
  REQUIRE(toRts(p.b.qp, 100, timeout, retry, rnrRetry) == 0);
  return p;
}

std::vector<ibv_wc> waitFor(ibv_cq* cq, size_t n, double seconds = 10) {
  std::vector<ibv_wc> out;
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (out.size() < n && std::chrono::steady_clock::now() < end) {
    ibv_wc wc[8];
    int k = ibv_poll_cq(cq, 8, wc);
    REQUIRE(k >= 0);
    out.insert(out.end(), wc, wc + k);
    if (k == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return out;
}

int post(ibv_qp* qp, ibv_wr_opcode op, void* local, uint32_t len, uint32_t lkey, uint64_t remote, uint32_t rkey,
         unsigned flags = IBV_SEND_SIGNALED, uint64_t wrId = 1, uint64_t add = 0) {
  ibv_sge sge{reinterpret_cast<uint64_t>(local), len, lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wrId;
  wr.sg_list = &sge;
  wr.num_sge = len || op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 1 : 0;
  wr.opcode = op;
  wr.send_flags = flags;
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    wr.wr.atomic.remote_addr = remote;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = add;
  } else {
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
  }
  wr.imm_data = htonl(0xabcd);
  return ibv_post_send(qp, &wr, &bad);
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// ---- the peer process -----------------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  FILE* in = nullptr;   // its stdin
  FILE* out = nullptr;  // its stdout
};

Child spawnChild(const char* mode, const std::vector<std::string>& env, const char* device = "");
Child spawnResponder(const char* device, const std::vector<std::string>& env) {
  return spawnChild("responder", env, device);
}

Child spawnChild(const char* mode, const std::vector<std::string>& env, const char* device) {
  int toChild[2], fromChild[2];
  REQUIRE(pipe2(toChild, O_CLOEXEC) == 0);  // the child keeps only its stdin and stdout
  REQUIRE(pipe2(fromChild, O_CLOEXEC) == 0);
  Child c;
  c.pid = fork();
  REQUIRE(c.pid >= 0);
  if (c.pid == 0) {
    dup2(toChild[0], 0);
    dup2(fromChild[1], 1);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    execl("/proc/self/exe", "test_ibverbs_double", mode, device, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(toChild[0]);
  close(fromChild[1]);
  c.in = fdopen(toChild[1], "w");
  c.out = fdopen(fromChild[0], "r");
  return c;
}

std::string gidHex(const ibv_gid& g) {
  char buf[40];
  for (int i = 0; i < 16; ++i) std::snprintf(buf + 2 * i, 3, "%02x", g.raw[i]);
  return buf;
}
ibv_gid gidFromHex(const char* s) {
  ibv_gid g{};
  for (int i = 0; i < 16; ++i) std::sscanf(s + 2 * i, "%2hhx", &g.raw[i]);
  return g;
}

// The responder: a 4 KiB region with every access, a QP in RTR towards the
// address read from stdin. "dump" prints the region's first word; EOF ends it.
int responderMain(const char* device) {
  Hca h;
  Qp q;
  if (!tryOpenHca(device, &h) || !tryMakeQp(h, &q)) return 1;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, 4096) != 0) return 1;
  std::memset(buf, 0, 4096);
  ibv_mr* mr = ibv_reg_mr(h.pd, buf, 4096, kAllAccess);
  const bool roce = h.linkLayer == IBV_LINK_LAYER_ETHERNET;
  if (mr == nullptr || toInit(q.qp) != 0) return 1;
  Address me = addressOf(h, q.qp, roce ? 3 : 0);
  std::printf("%u %u %s %u %llu\n", me.qpn, me.lid, gidHex(me.gid).c_str(), mr->rkey,
              static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(buf)));
  std::fflush(stdout);
  Address peer;
  char gid[64];
  int sgid = 0;
  if (std::scanf("%u %hu %32s %d", &peer.qpn, &peer.lid, gid, &sgid) != 4) return 1;
  peer.gid = gidFromHex(gid);
  peer.psn = 100;
  if (toRtr(q.qp, peer, roce, sgid) != 0) return 1;
  char cmd[16];
  while (std::scanf("%15s", cmd) == 1) {
    uint64_t word;
    std::memcpy(&word, buf, 8);
    std::printf("%llu\n", static_cast<unsigned long long>(word));
    std::fflush(stdout);
  }
  return 0;
}

struct Remote {
  Address addr;
  uint32_t rkey = 0;
  uint64_t base = 0;
};
Remote readRemote(Child& c) {
  Remote r;
  char gid[64];
  unsigned long long base = 0;
  REQUIRE(std::fscanf(c.out, "%u %hu %32s %u %llu", &r.addr.qpn, &r.addr.lid, gid, &r.rkey, &base) == 5);
  r.addr.gid = gidFromHex(gid);
  r.addr.psn = 100;
  r.base = base;
  return r;
}

uint64_t remoteWord(Child& c) {
  std::fprintf(c.in, "dump\n");
  std::fflush(c.in);
  unsigned long long v = 0;
  REQUIRE(std::fscanf(c.out, "%llu", &v) == 1);
  return v;
}

void endChild(Child& c) {
  if (c.in) std::fclose(c.in);
  if (c.out) std::fclose(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
}

}  // namespace

TEST_CASE("devices, ports and GID tables follow the configuration", "[devices]") {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  REQUIRE(list != nullptr);
  REQUIRE(n == 3);
  CHECK(list[3] == nullptr);
  CHECK(std::string(ibv_get_device_name(list[0])) == "mlx5_0");
  CHECK(std::string(list[1]->ibdev_path) == "/sys/class/infiniband/mlx5_1");
  ibv_free_device_list(list);

  Hca ib = openHca("mlx5_0"), roce = openHca("mlx5_1");
  ibv_device_attr da{};
  REQUIRE(ibv_query_device(roce.ctx, &da) == 0);
  CHECK(da.phys_port_cnt == 2);
  CHECK(da.atomic_cap == IBV_ATOMIC_HCA);
  ibv_port_attr pa{};
  REQUIRE(ibv_query_port(ib.ctx, 1, &pa) == 0);
  CHECK(pa.state == IBV_PORT_ACTIVE);
  CHECK(pa.link_layer == IBV_LINK_LAYER_INFINIBAND);
  CHECK(pa.lid != 0);
  CHECK(pa.active_mtu == IBV_MTU_4096);
  CHECK(ibv_query_port(ib.ctx, 2, &pa) == EINVAL);
  REQUIRE(ibv_query_port(roce.ctx, 2, &pa) == 0);
  CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET);
  CHECK(pa.lid == 0);
  CHECK((pa.flags & IBV_QPF_GRH_REQUIRED) != 0);
  CHECK(pa.active_mtu == IBV_MTU_1024);

  ibv_gid_entry e{};
  REQUIRE(ibv_query_gid_ex(ib.ctx, 1, 0, &e, 0) == 0);
  CHECK(e.gid_type == IBV_GID_TYPE_IB);
  CHECK((e.gid.raw[0] == 0xfe && e.gid.raw[1] == 0x80));
  CHECK(ibv_query_gid_ex(ib.ctx, 1, 1, &e, 0) == ENODATA);
  REQUIRE(ibv_query_gid_ex(roce.ctx, 1, 0, &e, 0) == 0);
  CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V1);
  REQUIRE(ibv_query_gid_ex(roce.ctx, 1, 3, &e, 0) == 0);
  CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V2);
  const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  CHECK(std::memcmp(e.gid.raw, v4, 16) == 0);
  CHECK(ibv_query_gid_ex(roce.ctx, 1, 4, &e, 0) == ENODATA);
  ibv_gid g{};
  CHECK(ibv_query_gid(roce.ctx, 1, 99, &g) == -1);
}

TEST_CASE("no device, or a bad configuration, as rdma-core says it", "[devices]") {
  for (const char* env : {"IBV_DOUBLE_DEVICES=", "IBV_DOUBLE_DEVICES=mlx5_0:link=fddi", "IBV_DOUBLE_GPUDIRECT=2"}) {
    Child c = spawnChild("count", {env});
    char line[256] = {};
    REQUIRE(std::fgets(line, sizeof(line), c.out) != nullptr);
    INFO(env);
    // ibv_get_device_list(3): no device is a non-NULL empty list; a failure is NULL with errno.
    CHECK(std::string(line) == (std::string(env).back() == '=' ? "list 0\n" : "NULL EINVAL\n"));
    endChild(c);
  }
}

TEST_CASE("memory registration checks access flags and memory", "[mr]") {
  Hca h = openHca("mlx5_0");
  std::vector<char> buf(4096);
  CHECK(ibv_reg_mr(h.pd, buf.data(), buf.size(), IBV_ACCESS_REMOTE_WRITE) == nullptr);
  CHECK(errno == EINVAL);
  void* gone = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 8192);
  CHECK(ibv_reg_mr(h.pd, gone, 8192, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EFAULT);
  ibv_mr* mr = ibv_reg_mr(h.pd, buf.data(), buf.size(), kAllAccess);
  REQUIRE(mr != nullptr);
  CHECK(mr->lkey == mr->rkey);
  CHECK(ibv_dealloc_pd(h.pd) == EBUSY);
  CHECK(ibv_dereg_mr(mr) == 0);
  CHECK(ibv_dealloc_pd(h.pd) == 0);
}

TEST_CASE("modify_qp requires each transition's attributes", "[qp]") {
  Hca h = openHca("mlx5_0");
  Qp q = makeQp(h);
  CHECK(q.cap.max_send_wr == 16);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE) == EINVAL);  // RESET -> RTR
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX) == EINVAL);  // no access flags
  CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS | IBV_QP_SQ_PSN) ==
        EINVAL);  // an attribute INIT does not take
  a.port_num = 3;
  CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS) == EINVAL);
  CHECK(q.qp->state == IBV_QPS_RESET);  // nothing changed
  REQUIRE(toInit(q.qp) == 0);
  CHECK(q.qp->state == IBV_QPS_INIT);
  char byte = 0;
  CHECK(post(q.qp, IBV_WR_RDMA_WRITE, &byte, 1, 0, 0, 0) == EINVAL);  // sends need RTS
  Address self = addressOf(h, q.qp, 0);
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTR;
  CHECK(ibv_modify_qp(q.qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) ==
        EINVAL);  // no MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER
  REQUIRE(toRtr(q.qp, self, false, 0) == 0);
  CHECK(toRts(q.qp) == 0);
  ibv_qp_attr e{};
  e.qp_state = IBV_QPS_ERR;
  CHECK(ibv_modify_qp(q.qp, &e, IBV_QP_STATE) == 0);
  e.qp_state = IBV_QPS_RESET;
  CHECK(ibv_modify_qp(q.qp, &e, IBV_QP_STATE) == 0);
  ibv_qp_attr got{};
  ibv_qp_init_attr init{};
  REQUIRE(ibv_query_qp(q.qp, &got, IBV_QP_STATE, &init) == 0);
  CHECK(got.qp_state == IBV_QPS_RESET);
  CHECK(ibv_destroy_cq(q.cq) == EBUSY);
  CHECK(ibv_destroy_qp(q.qp) == 0);
  CHECK(ibv_destroy_cq(q.cq) == 0);
}

TEST_CASE("RoCE addresses need a GRH with an existing GID", "[qp][roce]") {
  Hca h = openHca("mlx5_1");
  Qp q = makeQp(h);
  REQUIRE(toInit(q.qp) == 0);
  Address self = addressOf(h, q.qp, 3);
  CHECK(toRtr(q.qp, self, false, 0) == EINVAL);
  CHECK(toRtr(q.qp, self, true, 9) == EINVAL);  // an empty GID table entry
  CHECK(toRtr(q.qp, self, true, 3) == 0);
}

TEST_CASE("RDMA writes land, in order, with their completions", "[write]") {
  Pair p = connectedPair();
  std::vector<uint64_t> src(512), dst(512, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = i * 7 + 1;
  ibv_mr* s = ibv_reg_mr(p.h.pd, src.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 4096, kAllAccess);
  REQUIRE((s && d));
  const uint64_t remote = reinterpret_cast<uint64_t>(dst.data());
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, src.data(), 4000, s->lkey, remote, d->rkey, 0, 1) == 0);  // unsignaled
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &src[500], 8, s->lkey, remote + 4088, d->rkey, IBV_SEND_SIGNALED, 2) == 0);
  std::vector<ibv_wc> wc = waitFor(p.a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(wc[0].wr_id == 2);  // the unsignaled one made no completion
  CHECK(wc[0].opcode == IBV_WC_RDMA_WRITE);
  CHECK(std::memcmp(src.data(), dst.data(), 4000) == 0);
  CHECK(dst[511] == src[500]);
  CHECK(waitFor(p.a.cq, 1, 0.05).empty());
}

TEST_CASE("inline data is copied when posted, up to max_inline", "[inline]") {
  Pair p = connectedPair();
  std::vector<uint64_t> dst(8, 0);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 64, kAllAccess);
  REQUIRE(d != nullptr);
  uint64_t value = 42;
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &value, 8, 0, reinterpret_cast<uint64_t>(dst.data()), d->rkey,
               IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  value = 7;  // the request carries the value posted
  REQUIRE(waitFor(p.a.cq, 1).size() == 1);
  CHECK(dst[0] == 42);
  std::vector<char> big(p.a.cap.max_inline_data + 1);
  CHECK(post(p.a.qp, IBV_WR_RDMA_WRITE, big.data(), static_cast<uint32_t>(big.size()), 0,
             reinterpret_cast<uint64_t>(dst.data()), d->rkey, IBV_SEND_INLINE) == EINVAL);
}

TEST_CASE("a full send queue refuses posts until polled", "[depth]") {
  Pair p = connectedPair();
  std::vector<uint64_t> dst(8, 0);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 64, kAllAccess);
  REQUIRE(d != nullptr);
  uint64_t v = 1;
  const uint64_t remote = reinterpret_cast<uint64_t>(dst.data());
  const int depth = static_cast<int>(p.a.cap.max_send_wr);
  for (int i = 0; i < depth; ++i)
    REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, d->rkey, IBV_SEND_INLINE, i) == 0);
  // Every slot is taken: unsignaled requests free theirs only with a later completion.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, d->rkey, IBV_SEND_INLINE | IBV_SEND_SIGNALED) == ENOMEM);
  Pair q = connectedPair();
  ibv_mr* d2 = ibv_reg_mr(q.h.pd, dst.data(), 64, kAllAccess);
  for (int i = 0; i < depth - 1; ++i)
    REQUIRE(post(q.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, d2->rkey, IBV_SEND_INLINE, i) == 0);
  REQUIRE(post(q.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, d2->rkey, IBV_SEND_INLINE | IBV_SEND_SIGNALED, 99) == 0);
  CHECK(post(q.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, d2->rkey, IBV_SEND_INLINE) == ENOMEM);
  REQUIRE(waitFor(q.a.cq, 1).size() == 1);  // polling it frees all of them
  CHECK(post(q.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, d2->rkey, IBV_SEND_INLINE | IBV_SEND_SIGNALED) == 0);
}

TEST_CASE("fetch-and-add returns the old value and adds", "[atomic]") {
  Pair p = connectedPair();
  alignas(8) uint64_t counter[2] = {40, 0};
  alignas(8) uint64_t old = 0;
  ibv_mr* c = ibv_reg_mr(p.h.pd, counter, 16, kAllAccess);
  ibv_mr* o = ibv_reg_mr(p.h.pd, &old, 8, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE((c && o));
  REQUIRE(post(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, &old, 8, o->lkey, reinterpret_cast<uint64_t>(counter), c->rkey,
               IBV_SEND_SIGNALED, 1, 2) == 0);
  std::vector<ibv_wc> wc = waitFor(p.a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(wc[0].opcode == IBV_WC_FETCH_ADD);
  CHECK(old == 40);
  CHECK(counter[0] == 42);
  REQUIRE(post(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, &old, 8, o->lkey, reinterpret_cast<uint64_t>(counter) + 4, c->rkey,
               IBV_SEND_SIGNALED, 2, 1) == 0);
  wc = waitFor(p.a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_REM_INV_REQ_ERR);  // not 8-byte aligned
  CHECK(p.a.qp->state == IBV_QPS_ERR);
}

TEST_CASE("write with immediate consumes a receive", "[imm]") {
  Pair p = connectedPair("mlx5_0", 14, 7, 1);
  std::vector<uint64_t> dst(8, 0);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 64, kAllAccess);
  REQUIRE(d != nullptr);
  ibv_recv_wr rwr{};
  ibv_recv_wr* bad = nullptr;
  rwr.wr_id = 77;
  REQUIRE(ibv_post_recv(p.b.qp, &rwr, &bad) == 0);
  uint64_t v = 5;
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, &v, 8, 0, reinterpret_cast<uint64_t>(dst.data()), d->rkey,
               IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  REQUIRE(waitFor(p.a.cq, 1).size() == 1);
  std::vector<ibv_wc> wc = waitFor(p.b.cq, 1);
  REQUIRE(wc.size() == 1);
  const ibv_wc& recv = wc[0];
  CHECK(recv.wr_id == 77);
  CHECK(recv.status == IBV_WC_SUCCESS);
  CHECK(recv.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
  CHECK((recv.wc_flags & IBV_WC_WITH_IMM) != 0);
  CHECK(ntohl(recv.imm_data) == 0xabcd);
  CHECK(dst[0] == 5);
  // No receive posted: RNR NAKs until rnr_retry (1) runs out.
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, &v, 8, 0, reinterpret_cast<uint64_t>(dst.data()), d->rkey,
               IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  wc = waitFor(p.a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_RNR_RETRY_EXC_ERR);
}

TEST_CASE("a bad rkey or range is a remote access error", "[errors]") {
  for (int which = 0; which < 4; ++which) {
    Pair p = connectedPair();
    std::vector<uint64_t> dst(8, 0);
    ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 64, which == 2 ? IBV_ACCESS_LOCAL_WRITE : kAllAccess);
    REQUIRE(d != nullptr);
    uint64_t v = 1;
    uint64_t remote = reinterpret_cast<uint64_t>(dst.data());
    uint32_t rkey = d->rkey;
    if (which == 0) rkey ^= 0x1000;  // another key
    if (which == 1) remote += 60;    // 8 bytes at offset 60 of 64: out of bounds
    if (which == 3) {                // the QP grants no remote write
      ibv_qp_attr a{};
      a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
      REQUIRE(ibv_modify_qp(p.b.qp, &a, IBV_QP_ACCESS_FLAGS) == 0);
    }
    REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, remote, rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 1) == 0);
    REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, reinterpret_cast<uint64_t>(dst.data()), d->rkey, IBV_SEND_INLINE,
                 2) == 0);  // unsignaled, after the failing one
    std::vector<ibv_wc> wc = waitFor(p.a.cq, 2);
    INFO("case " << which);
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].status == IBV_WC_REM_ACCESS_ERR);
    CHECK(wc[1].status == IBV_WC_WR_FLUSH_ERR);  // flushed, unsignaled or not
    CHECK(wc[1].wr_id == 2);
    CHECK(p.a.qp->state == IBV_QPS_ERR);
    CHECK(dst[0] == 0);
    // Posting in ERR is accepted and flushed.
    REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, 0, 0, IBV_SEND_INLINE, 3) == 0);
    wc = waitFor(p.a.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_WR_FLUSH_ERR);
  }
}

TEST_CASE("messages beyond max_msg_sz fail; no atomics, no post", "[errors]") {
  Pair p = connectedPair("mlx5_2");
  ibv_port_attr pa{};
  REQUIRE(ibv_query_port(p.h.ctx, 1, &pa) == 0);
  CHECK(pa.max_msg_sz == 4096);
  ibv_device_attr da{};
  REQUIRE(ibv_query_device(p.h.ctx, &da) == 0);
  CHECK(da.atomic_cap == IBV_ATOMIC_NONE);
  std::vector<char> src(8192), dst(8192);
  ibv_mr* s = ibv_reg_mr(p.h.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), dst.size(), kAllAccess);
  REQUIRE((s && d));
  CHECK(post(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, src.data(), 8, s->lkey, reinterpret_cast<uint64_t>(dst.data()),
             d->rkey) == EINVAL);
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, src.data(), 4097, s->lkey, reinterpret_cast<uint64_t>(dst.data()), d->rkey) ==
          0);
  std::vector<ibv_wc> wc = waitFor(p.a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_LOC_LEN_ERR);
}

TEST_CASE("a bad lkey is a local protection error", "[errors]") {
  Pair p = connectedPair();
  std::vector<uint64_t> src(8, 3), dst(8, 0);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 64, kAllAccess);
  REQUIRE(d != nullptr);
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, src.data(), 64, 0x1234, reinterpret_cast<uint64_t>(dst.data()), d->rkey) ==
          0);
  std::vector<ibv_wc> wc = waitFor(p.a.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_LOC_PROT_ERR);
}

TEST_CASE("a destroyed peer QP exhausts the retries", "[errors][retry]") {
  Pair p = connectedPair("mlx5_0", 14, 3);
  std::vector<uint64_t> dst(8, 0);
  ibv_mr* d = ibv_reg_mr(p.h.pd, dst.data(), 64, kAllAccess);
  REQUIRE(ibv_destroy_qp(p.b.qp) == 0);
  uint64_t v = 1;
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, reinterpret_cast<uint64_t>(dst.data()), d->rkey,
               IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  std::vector<ibv_wc> wc = waitFor(p.a.cq, 1);
  const double took = since(t0);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_RETRY_EXC_ERR);
  // (retry_cnt + 1) x 4.096 us x 2^14 = 4 x 67 ms.
  CHECK(took > 0.2);
  CHECK(took < 2.0);
}

TEST_CASE("mismatched PSNs never deliver", "[errors][retry]") {
  // b expects PSN 50: 100 is ahead (a sequence error, retried until the
  // retries run out); or 5000: 100 is behind, a duplicate, acknowledged
  // and not carried out. Either way nothing is written.
  for (uint32_t expected : {50u, 5000u}) {
    Hca h = openHca("mlx5_0");
    Qp a = makeQp(h), b = makeQp(h);
    REQUIRE(toInit(a.qp) == 0);
    REQUIRE(toInit(b.qp) == 0);
    Address ab = addressOf(h, b.qp, 0), aa = addressOf(h, a.qp, 0);
    aa.psn = expected;
    REQUIRE(toRtr(a.qp, ab, false, 0) == 0);
    REQUIRE(toRtr(b.qp, aa, false, 0) == 0);
    REQUIRE(toRts(a.qp, 100, 10, 2) == 0);
    std::vector<uint64_t> dst(8, 0);
    ibv_mr* d = ibv_reg_mr(h.pd, dst.data(), 64, kAllAccess);
    uint64_t v = 9;
    REQUIRE(post(a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, reinterpret_cast<uint64_t>(dst.data()), d->rkey,
                 IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
    std::vector<ibv_wc> wc = waitFor(a.cq, 1);
    REQUIRE(wc.size() == 1);
    INFO("expected PSN " << expected);
    CHECK(wc[0].status == (expected == 50 ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS));
    CHECK(dst[0] == 0);
  }
}

TEST_CASE("a dma-buf region is written where the file is", "[dmabuf]") {
  Pair p = connectedPair();
  int fd = memfd_create("device-memory", 0);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, 3 * 4096) == 0);
  // The region starts one page into the buffer, addressed as 0x10000.
  ibv_mr* mr = ibv_reg_dmabuf_mr(p.h.pd, 4096, 8192, 0x10000, fd, kAllAccess);
  REQUIRE(mr != nullptr);
  CHECK(ibv_reg_dmabuf_mr(p.h.pd, 4096 + 8, 64, 0x10000, fd, kAllAccess) == nullptr);  // page offsets differ
  uint64_t v = 0x1122334455667788ull;
  REQUIRE(post(p.a.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, 0x10000 + 16, mr->rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  REQUIRE(waitFor(p.a.cq, 1).size() == 1);
  uint64_t got = 0;
  REQUIRE(pread(fd, &got, 8, 4096 + 16) == 8);
  CHECK(got == v);
  CHECK(ibv_dereg_mr(mr) == 0);
  close(fd);
}

TEST_CASE("another process's QP: writes, then retries once it dies", "[process]") {
  Child c = spawnResponder("mlx5_0", {});
  Remote r = readRemote(c);
  Hca h = openHca("mlx5_0");
  Qp q = makeQp(h);
  REQUIRE(toInit(q.qp) == 0);
  Address me = addressOf(h, q.qp, 0);
  std::fprintf(c.in, "%u %u %s 0\n", me.qpn, me.lid, gidHex(me.gid).c_str());
  std::fflush(c.in);
  REQUIRE(toRtr(q.qp, r.addr, false, 0) == 0);
  REQUIRE(toRts(q.qp, 100, 14, 3) == 0);
  uint64_t v = 1234;
  // The peer may not be in RTR yet: the first attempts are dropped and retried.
  REQUIRE(post(q.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, r.base, r.rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  std::vector<ibv_wc> wc = waitFor(q.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_SUCCESS);
  CHECK(remoteWord(c) == 1234);
  kill(c.pid, SIGKILL);
  endChild(c);
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(post(q.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, r.base, r.rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
  wc = waitFor(q.cq, 1);
  REQUIRE(wc.size() == 1);
  CHECK(wc[0].status == IBV_WC_RETRY_EXC_ERR);
  CHECK(since(t0) > 0.2);  // the HCA waits out its retries, as for a live but silent peer
}

TEST_CASE("RoCE v2 GIDs route between hosts, v1 GIDs do not", "[process][roce]") {
  for (int sgid : {3, 2}) {
    // The peer is another host: 127.0.0.2 on this machine's loopback.
    Child c = spawnResponder("mlx5_1", {"IBV_DOUBLE_ADDR=127.0.0.2"});
    Remote r = readRemote(c);
    Hca h = openHca("mlx5_1");
    Qp q = makeQp(h);
    REQUIRE(toInit(q.qp) == 0);
    ibv_gid mine{};
    REQUIRE(ibv_query_gid(h.ctx, 1, sgid, &mine) == 0);
    std::fprintf(c.in, "%u 0 %s 3\n", q.qp->qp_num, gidHex(mine).c_str());
    std::fflush(c.in);
    REQUIRE(toRtr(q.qp, r.addr, true, sgid) == 0);
    REQUIRE(toRts(q.qp, 100, 12, 2) == 0);
    uint64_t v = 77;
    REQUIRE(post(q.qp, IBV_WR_RDMA_WRITE, &v, 8, 0, r.base, r.rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE) == 0);
    std::vector<ibv_wc> wc = waitFor(q.cq, 1);
    REQUIRE(wc.size() == 1);
    INFO("source GID index " << sgid);
    CHECK(wc[0].status == (sgid == 3 ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR));
    CHECK(remoteWord(c) == (sgid == 3 ? 77u : 0u));
    endChild(c);
  }
}

// "count": what ibv_get_device_list gives this process.
int countMain() {
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    std::printf("NULL %s\n", errno == EINVAL ? "EINVAL" : "other");
  } else {
    std::printf("list %d\n", n);
    ibv_free_device_list(list);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "responder") return responderMain(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "count") return countMain();
  return mscclpp::test::runCatchSession(argc, argv);
}
