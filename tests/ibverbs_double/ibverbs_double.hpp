// The verbs double's objects and process-wide state (docs/ibverbs-double.md): the
// HCAs of this host from IBV_DOUBLE_DEVICES, and every PD, MR, CQ and QP the process
// made, each found through a table so that a handle which is not one is reported.
// One mutex guards it all; the fabric thread (fabric.cc) takes it too.
#ifndef IBVERBS_DOUBLE_IBVERBS_DOUBLE_HPP_
#define IBVERBS_DOUBLE_IBVERBS_DOUBLE_HPP_

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ibvdouble {

// ---- configuration (config.cc) -------------------------------------------------------------
struct DeviceSpec {
  std::string name;
  uint8_t linkLayer = IBV_LINK_LAYER_INFINIBAND;
  int ports = 1;
  ibv_mtu mtu = IBV_MTU_4096;  // active MTU of every port
  int maxInline = 256;         // the most inline bytes a QP can be created with
  bool atomics = true;         // atomic_cap HCA, else NONE
  int maxQpWr = 32768;
  int maxCqe = 4194303;
  uint32_t maxMsg = 1u << 31;  // the port's max_msg_sz
  bool portActive = true;
  std::string sysfsPath;  // ibdev_path; default /sys/class/infiniband/<name>
};

struct Config {
  std::vector<DeviceSpec> devices;  // IBV_DOUBLE_DEVICES
  uint32_t hostAddr = 0;            // IBV_DOUBLE_ADDR (host byte order): this host on the fabric
  int minAckTimeoutMs = 250;        // IBV_DOUBLE_MIN_ACK_TIMEOUT_MS
  bool gpuDirect = true;            // IBV_DOUBLE_GPUDIRECT=0: device memory cannot be registered
  std::string error;                // a bad setting: ibv_get_device_list fails with EINVAL
};
const Config& config();

// GID table entry kinds of a port (IBA vol. 1, ch. 4 addressing; annex A17, RoCE v2).
constexpr int kGidTableLen = 16;
struct GidEntry {
  ibv_gid gid{};
  uint32_t type = IBV_GID_TYPE_IB;
  bool valid = false;
};
GidEntry gidEntry(int device, int port, int index);
uint16_t portLid(int device, int port);  // 0 on Ethernet ports

// Where a destination address lives: the host's fabric address (0: not
// reachable from this port) and the device and port on it.
struct Route {
  uint32_t hostAddr = 0;
  int device = -1;
  int port = 0;
};
Route routeOf(int device, int port, const ibv_ah_attr& ah, std::string* why);

// ---- objects -------------------------------------------------------------------------------
struct Context;
struct Pd {
  ibv_pd pd{};
  Context* ctx = nullptr;
  int users = 0;  // MRs and QPs on it
};
struct Mr {
  ibv_mr mr{};
  Pd* pd = nullptr;
  int device = -1;
  uint64_t iova = 0;     // where lkeys and rkeys address it
  char* host = nullptr;  // iova's bytes in this process
  size_t length = 0;
  int access = 0;
  void* mapping = nullptr;  // a dma-buf's mapping, unmapped at deregistration
  size_t mappingBytes = 0;
};
struct Cq;
struct Qp;
struct Context {
  verbs_context v{};  // first: an ibv_context* is &v.context
  int device = -1;
  int users = 0;  // PDs and CQs on it
};

struct CqEntry {
  ibv_wc wc{};
  uint32_t qpn = 0;
  int sqSlots = 0;  // send queue slots its poll frees (itself and earlier unsignaled requests)
};
struct Cq {
  ibv_cq cq{};
  Context* ctx = nullptr;
  int capacity = 0;
  std::deque<CqEntry> entries;
  bool overrun = false;
  int users = 0;  // QPs on it
};

// A posted send request as the requester executes it.
struct SendWqe {
  uint64_t wrId = 0;
  ibv_wr_opcode opcode = IBV_WR_RDMA_WRITE;
  unsigned flags = 0;
  bool signaled = false;
  std::vector<ibv_sge> sges;
  std::string inlineData;  // IBV_SEND_INLINE: copied when posted
  bool isInline = false;
  uint64_t remoteAddr = 0;
  uint32_t rkey = 0;
  uint64_t compareAdd = 0, swap = 0;
  uint32_t imm = 0;
  uint64_t length = 0;
  uint32_t psn = 0, packets = 1;
  bool sent = false;
  ibv_wc_status localError = IBV_WC_SUCCESS;  // found when the HCA read its s/g list
};
struct RecvWqe {
  uint64_t wrId = 0;
  std::vector<ibv_sge> sges;
};

struct Link;
struct Qp {
  ibv_qp qp{};
  Context* ctx = nullptr;
  Pd* pd = nullptr;
  Cq* sendCq = nullptr;
  Cq* recvCq = nullptr;
  ibv_qp_cap cap{};
  bool sigAll = false;
  ibv_qp_attr attr{};  // everything modify set
  ibv_qp_state state = IBV_QPS_RESET;
  // Requester.
  std::deque<SendWqe> sq;  // posted, not completed, in order
  int sqUsed = 0;          // slots held until a completion covering them is polled
  int retiredUnsignaled = 0;
  uint32_t nextPsn = 0;
  uint32_t generation = 0;  // bumped at each resend; older answers are ignored
  int retries = 0, rnrRetries = 0;
  int64_t ackDeadlineMs = 0;  // when the oldest unanswered request times out (0: none)
  int64_t resendAtMs = 0;     // a scheduled resend (RNR wait or after a drop)
  Link* link = nullptr;
  // Responder.
  std::deque<RecvWqe> rq;
  uint32_t expectedPsn = 0;
  std::deque<std::pair<uint32_t, uint64_t>> atomicResults;  // by PSN, answered again to a duplicate
};

// ---- process-wide state ------------------------------------------------------------------
struct State {
  std::mutex mutex;
  uint64_t keySeed = 0;
  std::map<ibv_context*, Context*> contexts;
  std::map<ibv_pd*, Pd*> pds;
  std::map<ibv_mr*, Mr*> mrs;
  std::map<uint32_t, Mr*> keys;  // lkey = rkey -> MR
  std::map<ibv_cq*, Cq*> cqs;
  std::map<ibv_qp*, Qp*> qpHandles;
  std::map<uint32_t, Qp*> qps;  // by QP number
};
// A child of fork() starts with a state of its own: verbs objects do not
// survive fork (ibv_fork_init(3)), and the parent's sockets are closed.
State& state();

// A use verbs leave undefined or reject: printed on stderr and counted.
void misuse(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::atomic<uint64_t>& misuseCount();

// Completions (caller holds the mutex). Pushing onto a full CQ overruns it.
void pushCompletion(Cq* cq, const CqEntry& e);
// Moves qp to ERR and flushes every outstanding request of both queues.
void enterError(Qp* qp);
// Looks up an lkey for local access of [addr, +len) by a QP of pd.
Mr* localMr(Pd* pd, uint32_t lkey, uint64_t addr, uint64_t len, int needAccess);

// ---- the fabric (fabric.cc) ----------------------------------------------------------------
// Allocates a QP number: (the listener's TCP port << 8) | slot.
uint32_t allocateQpn(Qp* qp, int* err);
void releaseQpn(Qp* qp);
void closeFabricAfterFork();
// Wakes the fabric thread: a request was posted or a QP changed state.
void kick();
int64_t nowMs();

}  // namespace ibvdouble

#endif  // IBVERBS_DOUBLE_IBVERBS_DOUBLE_HPP_
