// Devices, contexts, protection domains, memory regions and completion
// queues: the exported verbs of rdma-core that make and query them, each
// following the man page named in its comment (docs/ibverbs-double.md).
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ibverbs_double.hpp"

namespace ibvdouble {

namespace {
State* gState = nullptr;  // never destroyed: the fabric thread may outlive static destructors
std::once_flag gStateOnce;

State* makeState() {
  auto* s = new State;
  s->keySeed = std::random_device{}();
  return s;
}
}  // namespace

State& state() {
  std::call_once(gStateOnce, [] {
    gState = makeState();
    pthread_atfork([] { gState->mutex.lock(); }, [] { gState->mutex.unlock(); },
                   [] {
                     closeFabricAfterFork();
                     gState = makeState();
                   });
  });
  return *gState;
}

std::atomic<uint64_t>& misuseCount() {
  static std::atomic<uint64_t> n{0};
  return n;
}

void misuse(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "ibverbs double: MISUSE (pid %d): %s\n", static_cast<int>(getpid()), buf);
  misuseCount()++;
}

void pushCompletion(Cq* cq, const CqEntry& e) {
  if (cq->overrun) return;
  if (static_cast<int>(cq->entries.size()) >= cq->capacity) {
    // ibv_poll_cq(3), NOTES: "In case of a CQ overrun, the async event
    // IBV_EVENT_CQ_ERR will be triggered, and the CQ cannot be used."
    cq->overrun = true;
    misuse("CQ %p overrun: %d completions not polled; the CQ is unusable", static_cast<void*>(&cq->cq), cq->capacity);
    return;
  }
  cq->entries.push_back(e);
}

Mr* localMr(Pd* pd, uint32_t lkey, uint64_t addr, uint64_t len, int needAccess) {
  State& s = state();
  auto it = s.keys.find(lkey);
  if (it == s.keys.end()) return nullptr;
  Mr* mr = it->second;
  if (mr->pd != pd || (mr->access & needAccess) != needAccess) return nullptr;
  if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len) return nullptr;
  return mr;
}

namespace {

std::vector<ibv_device>& deviceTable() {
  static std::vector<ibv_device>* t = [] {
    auto* v = new std::vector<ibv_device>(config().devices.size());
    for (size_t i = 0; i < v->size(); ++i) {
      ibv_device& d = (*v)[i];
      const DeviceSpec& spec = config().devices[i];
      d.node_type = IBV_NODE_CA;
      d.transport_type = IBV_TRANSPORT_IB;
      std::snprintf(d.name, sizeof(d.name), "%s", spec.name.c_str());
      std::snprintf(d.dev_name, sizeof(d.dev_name), "uverbs%zu", i);
      std::snprintf(d.dev_path, sizeof(d.dev_path), "/sys/class/infiniband_verbs/uverbs%zu", i);
      std::snprintf(d.ibdev_path, sizeof(d.ibdev_path), "%s", spec.sysfsPath.c_str());
    }
    return v;
  }();
  return *t;
}

int deviceIndex(ibv_device* d) {
  std::vector<ibv_device>& t = deviceTable();
  for (size_t i = 0; i < t.size(); ++i)
    if (&t[i] == d) return static_cast<int>(i);
  return -1;
}

Context* contextOf(ibv_context* c) {
  auto it = state().contexts.find(c);
  return it == state().contexts.end() ? nullptr : it->second;
}

uint64_t guidOf(int device) {
  ibv_gid g{};
  // The node GUID is port 1's GUID with port 0 (IB) or the same scheme (RoCE).
  uint32_t host = config().hostAddr;
  g.raw[8] = 0x02, g.raw[9] = 0xc9, g.raw[10] = static_cast<uint8_t>(device), g.raw[11] = 0;
  g.raw[12] = host >> 24, g.raw[13] = host >> 16, g.raw[14] = host >> 8, g.raw[15] = host;
  uint64_t be;
  std::memcpy(&be, g.raw + 8, 8);
  return be;  // already big-endian, as node_guid is
}

int queryPortFull(ibv_context* context, uint8_t portNum, ibv_port_attr* out, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr) {
    misuse("ibv_query_port on %p, which is not an open device context", static_cast<void*>(context));
    return EINVAL;
  }
  const DeviceSpec& d = config().devices[static_cast<size_t>(c->device)];
  if (portNum < 1 || portNum > d.ports) return EINVAL;
  ibv_port_attr a{};
  a.state = d.portActive ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a.max_mtu = IBV_MTU_4096;
  a.active_mtu = d.mtu;
  a.gid_tbl_len = kGidTableLen;
  a.port_cap_flags = 0;
  a.max_msg_sz = d.maxMsg;
  a.pkey_tbl_len = 128;
  a.lid = portLid(c->device, portNum);
  a.sm_lid = d.linkLayer == IBV_LINK_LAYER_INFINIBAND ? 1 : 0;
  a.max_vl_num = 4;
  a.active_width = 2;                   // 4x
  a.active_speed = 128;                 // NDR
  a.phys_state = d.portActive ? 5 : 3;  // LinkUp, Disabled
  a.link_layer = d.linkLayer;
  // RoCE needs a GRH in every address: ibv_query_port(3), IBV_QPF_GRH_REQUIRED.
  a.flags = d.linkLayer == IBV_LINK_LAYER_ETHERNET ? IBV_QPF_GRH_REQUIRED : 0;
  std::memcpy(out, &a, bytes < sizeof(a) ? bytes : sizeof(a));
  return 0;
}

int verbsQueryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr, size_t len) {
  return queryPortFull(context, port, attr, len);
}

int reqNotifyCq(ibv_cq*, int) {
  // Completion channels are outside the subset the double implements.
  return EOPNOTSUPP;
}

}  // namespace

// The fabric's poll, send and receive entry points (queue_pair.cc): the
// inline ibv_poll_cq, ibv_post_send and ibv_post_recv of verbs.h call them
// through the context's ops table, as they call a provider's.
int pollCq(ibv_cq* cq, int n, ibv_wc* wc);
int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);

}  // namespace ibvdouble

using namespace ibvdouble;

extern "C" {

// ibv_get_device_list(3): a NULL-terminated array; "If no devices are found
// then num_devices is set to 0, and non-NULL is returned."
ibv_device** ibv_get_device_list(int* num) {
  if (!config().error.empty()) {
    std::fprintf(stderr, "ibverbs double: %s\n", config().error.c_str());
    errno = EINVAL;
    return nullptr;
  }
  std::vector<ibv_device>& t = deviceTable();
  auto** list = static_cast<ibv_device**>(std::calloc(t.size() + 1, sizeof(ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < t.size(); ++i) list[i] = &t[i];
  if (num) *num = static_cast<int>(t.size());
  return list;
}

void ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* ibv_get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

__be64 ibv_get_device_guid(ibv_device* device) {
  int i = deviceIndex(device);
  return i < 0 ? 0 : guidOf(i);
}

int ibv_fork_init(void) { return 0; }

// ibv_open_device(3). The context is a verbs_context, as every current
// provider's, so the inline ibv_query_port of verbs.h reaches query_port.
ibv_context* ibv_open_device(ibv_device* device) {
  int index = deviceIndex(device);
  if (index < 0) {
    misuse("ibv_open_device(%p): not a device of ibv_get_device_list", static_cast<void*>(device));
    errno = EINVAL;
    return nullptr;
  }
  auto* c = new Context;
  c->device = index;
  c->v.sz = sizeof(verbs_context);
  c->v.query_port = verbsQueryPort;
  ibv_context& ctx = c->v.context;
  ctx.device = device;
  ctx.cmd_fd = -1;
  ctx.async_fd = -1;
  ctx.num_comp_vectors = 1;
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.ops.poll_cq = pollCq;
  ctx.ops.post_send = postSend;
  ctx.ops.post_recv = postRecv;
  ctx.ops.req_notify_cq = reqNotifyCq;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().contexts[&ctx] = c;
  return &ctx;
}

// ibv_close_device(3). Resources still open on it are a misuse (rdma-core
// leaves them to the kernel, which frees them when the process exits).
int ibv_close_device(ibv_context* context) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr) {
    misuse("ibv_close_device(%p): not an open device context", static_cast<void*>(context));
    return EINVAL;
  }
  if (c->users > 0) misuse("ibv_close_device(%s) with %d PDs or CQs still open", context->device->name, c->users);
  state().contexts.erase(context);
  // Kept: a leaked PD or CQ may still point at it.
  return 0;
}

// ibv_query_device(3).
int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr) {
    misuse("ibv_query_device(%p): not an open device context", static_cast<void*>(context));
    return EINVAL;
  }
  const DeviceSpec& d = config().devices[static_cast<size_t>(c->device)];
  std::memset(attr, 0, sizeof(*attr));
  std::snprintf(attr->fw_ver, sizeof(attr->fw_ver), "ibverbs-double");
  attr->node_guid = guidOf(c->device);
  attr->sys_image_guid = attr->node_guid;
  attr->max_mr_size = ~0ull;
  attr->page_size_cap = ~0xfffull;
  attr->vendor_id = 0x02c9;
  attr->vendor_part_id = 4129;
  attr->max_qp = 1 << 17;
  attr->max_qp_wr = d.maxQpWr;
  attr->max_sge = 30;
  attr->max_sge_rd = 30;
  attr->max_cq = 1 << 16;
  attr->max_cqe = d.maxCqe;
  attr->max_mr = 1 << 20;
  attr->max_pd = 1 << 20;
  attr->max_qp_rd_atom = 16;
  attr->max_res_rd_atom = 16 << 17;
  attr->max_qp_init_rd_atom = 16;
  attr->atomic_cap = d.atomics ? IBV_ATOMIC_HCA : IBV_ATOMIC_NONE;
  attr->max_pkeys = 128;
  attr->local_ca_ack_delay = 16;
  attr->phys_port_cnt = static_cast<uint8_t>(d.ports);
  return 0;
}

// The exported ibv_query_port takes the compatible attribute struct, which
// ends before port_cap_flags2: that much is written (verbs.h, ___ibv_query_port).
int(ibv_query_port)(ibv_context* context, uint8_t port, struct _compat_ibv_port_attr* attr) {
  return queryPortFull(context, port, reinterpret_cast<ibv_port_attr*>(attr), offsetof(ibv_port_attr, port_cap_flags2));
}

// ibv_query_gid(3): "returns 0 on success, and -1 on error"; an unused
// entry reads as zeros, as the kernel's sysfs file does.
int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr || port < 1 || port > config().devices[static_cast<size_t>(c->device)].ports || index < 0 ||
      index >= kGidTableLen) {
    errno = EINVAL;
    return -1;
  }
  *gid = gidEntry(c->device, port, index).gid;
  return 0;
}

// ibv_query_gid_ex(3): ENODATA for an index within the table with no entry.
int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index, ibv_gid_entry* entry, uint32_t flags,
                      size_t entrySize) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr || flags != 0 || entrySize < sizeof(ibv_gid_entry) || port < 1 ||
      port > static_cast<uint32_t>(config().devices[static_cast<size_t>(c->device)].ports) || index >= kGidTableLen)
    return EINVAL;
  GidEntry e = gidEntry(c->device, static_cast<int>(port), static_cast<int>(index));
  if (!e.valid) return ENODATA;
  entry->gid = e.gid;
  entry->gid_index = index;
  entry->port_num = port;
  entry->gid_type = e.type;
  entry->ndev_ifindex = config().devices[static_cast<size_t>(c->device)].linkLayer == IBV_LINK_LAYER_ETHERNET ? 2 : 0;
  return 0;
}

// ibv_alloc_pd(3).
ibv_pd* ibv_alloc_pd(ibv_context* context) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr) {
    misuse("ibv_alloc_pd(%p): not an open device context", static_cast<void*>(context));
    errno = EINVAL;
    return nullptr;
  }
  auto* pd = new Pd;
  pd->ctx = c;
  pd->pd.context = context;
  pd->pd.handle = static_cast<uint32_t>(state().pds.size() + 1);
  state().pds[&pd->pd] = pd;
  c->users++;
  return &pd->pd;
}

// ibv_dealloc_pd(3): fails (EBUSY) while MRs or QPs use it.
int ibv_dealloc_pd(ibv_pd* handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().pds.find(handle);
  if (it == state().pds.end()) {
    misuse("ibv_dealloc_pd(%p): not a protection domain", static_cast<void*>(handle));
    return EINVAL;
  }
  Pd* pd = it->second;
  if (pd->users > 0) return EBUSY;
  pd->ctx->users--;
  state().pds.erase(it);
  delete pd;
  return 0;
}

}  // extern "C"

namespace ibvdouble {
namespace {

constexpr int kKnownAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                             IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;

// ibv_reg_mr(3): "If IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is
// set, then IBV_ACCESS_LOCAL_WRITE must be set too." Memory windows,
// zero-based and on-demand regions are outside the subset (EOPNOTSUPP).
ibv_mr* registerRange(ibv_pd* handle, char* host, size_t length, uint64_t iova, int access, void* mapping,
                      size_t mappingBytes, const char* verb) {
  std::lock_guard<std::mutex> lock(state().mutex);
  State& s = state();
  auto it = s.pds.find(handle);
  int err = 0;
  if (it == s.pds.end()) {
    misuse("%s: %p is not a protection domain", verb, static_cast<void*>(handle));
    err = EINVAL;
  } else if ((access & ~kKnownAccess) != 0) {
    err = EOPNOTSUPP;
  } else if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
             (access & IBV_ACCESS_LOCAL_WRITE) == 0) {
    err = EINVAL;
  } else if (length == 0) {
    err = EINVAL;
  }
  if (err != 0) {
    if (mapping) munmap(mapping, mappingBytes);
    errno = err;
    return nullptr;
  }
  auto* mr = new Mr;
  mr->pd = it->second;
  mr->device = mr->pd->ctx->device;
  mr->iova = iova;
  mr->host = host;
  mr->length = length;
  mr->access = access;
  mr->mapping = mapping;
  mr->mappingBytes = mappingBytes;
  uint32_t key;
  do {
    // 24-bit index and an 8-bit key byte from a per-process seed: a key of
    // another region, process or HCA rarely names a live region here.
    key = static_cast<uint32_t>((++s.keySeed * 0x9e3779b97f4a7c15ull) >> 32);
  } while (key == 0 || s.keys.count(key));
  mr->mr.context = handle->context;
  mr->mr.pd = handle;
  mr->mr.addr = reinterpret_cast<void*>(iova);
  mr->mr.length = length;
  mr->mr.handle = key;
  mr->mr.lkey = key;
  mr->mr.rkey = key;
  s.keys[key] = mr;
  s.mrs[&mr->mr] = mr;
  mr->pd->users++;
  return &mr->mr;
}

// Whether p is CUDA device memory, as the process's CUDA runtime (when one
// is loaded) says. Without GPUDirect RDMA (the nvidia-peermem module) the
// kernel cannot pin device pages, and ibv_reg_mr fails with EFAULT.
bool deviceMemory(const void* p) {
  using Query = int (*)(void* attributes, const void* ptr);
  static const Query query = reinterpret_cast<Query>(dlsym(RTLD_DEFAULT, "cudaPointerGetAttributes"));
  if (query == nullptr) return false;
  // cudaPointerAttributes: type (cudaMemoryTypeDevice = 2), device, two
  // pointers; room to spare for fields a runtime may add.
  struct {
    int type;
    int device;
    void* pointers[2];
    long reserved[16];
  } attributes{};
  return query(&attributes, p) == 0 && attributes.type == 2;
}

bool unpinnable(const void* p) { return !config().gpuDirect && deviceMemory(p); }

// Whether every page of [p, +n) is mapped: the kernel pins them at
// registration and fails with EFAULT otherwise.
bool mapped(const void* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  std::vector<unsigned char> v((end - start + page - 1) / page);
  return mincore(reinterpret_cast<void*>(start), end - start, v.data()) == 0;
}

}  // namespace
}  // namespace ibvdouble

extern "C" {

ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  if (addr == nullptr || !mapped(addr, length) || ibvdouble::unpinnable(addr)) {
    errno = EFAULT;
    return nullptr;
  }
  return registerRange(pd, static_cast<char*>(addr), length, reinterpret_cast<uint64_t>(addr), access, nullptr, 0,
                       "ibv_reg_mr");
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (addr == nullptr || !mapped(addr, length) || ibvdouble::unpinnable(addr)) {
    errno = EFAULT;
    return nullptr;
  }
  return registerRange(pd, static_cast<char*>(addr), length, iova, static_cast<int>(access), nullptr, 0,
                       "ibv_reg_mr_iova2");
}

// ibv_reg_dmabuf_mr(3): the region is `length` bytes at `offset` of the
// dma-buf `fd`, addressed from `iova`, which "must have the same page offset
// as offset". The double maps the file, which stands in for the exporter's
// device memory (a GPU's, for GPUDirect RDMA): writes land in the file.
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if ((offset & (page - 1)) != (iova & (page - 1)) || length == 0) {
    errno = EINVAL;
    return nullptr;
  }
  const uint64_t base = offset & ~(page - 1);
  const size_t bytes = static_cast<size_t>(offset - base + length);
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(base));
  if (m == MAP_FAILED) {
    errno = errno == EACCES || errno == ENODEV ? EINVAL : errno;
    return nullptr;
  }
  return registerRange(pd, static_cast<char*>(m) + (offset - base), length, iova, access, m, bytes,
                       "ibv_reg_dmabuf_mr");
}

// ibv_dereg_mr(3).
int ibv_dereg_mr(ibv_mr* handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  State& s = state();
  auto it = s.mrs.find(handle);
  if (it == s.mrs.end()) {
    misuse("ibv_dereg_mr(%p): not a registered memory region", static_cast<void*>(handle));
    return EINVAL;
  }
  Mr* mr = it->second;
  s.keys.erase(mr->mr.lkey);
  s.mrs.erase(it);
  mr->pd->users--;
  if (mr->mapping) munmap(mr->mapping, mr->mappingBytes);
  delete mr;
  return 0;
}

// ibv_create_cq(3): "at least cqe entries"; completion channels and vectors
// beyond num_comp_vectors are refused.
ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel, int vector) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Context* c = contextOf(context);
  if (c == nullptr) {
    misuse("ibv_create_cq(%p): not an open device context", static_cast<void*>(context));
    errno = EINVAL;
    return nullptr;
  }
  if (cqe < 1 || cqe > config().devices[static_cast<size_t>(c->device)].maxCqe || vector != 0) {
    errno = EINVAL;
    return nullptr;
  }
  if (channel != nullptr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  auto* cq = new Cq;
  cq->ctx = c;
  cq->capacity = cqe;
  cq->cq.context = context;
  cq->cq.cq_context = cqContext;
  cq->cq.cqe = cqe;
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  state().cqs[&cq->cq] = cq;
  c->users++;
  return &cq->cq;
}

// ibv_create_cq(3): "ibv_destroy_cq() fails if any queue pair is still
// associated with this CQ."
int ibv_destroy_cq(ibv_cq* handle) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().cqs.find(handle);
  if (it == state().cqs.end()) {
    misuse("ibv_destroy_cq(%p): not a completion queue", static_cast<void*>(handle));
    return EINVAL;
  }
  Cq* cq = it->second;
  if (cq->users > 0) return EBUSY;
  cq->ctx->users--;
  state().cqs.erase(it);
  delete cq;
  return 0;
}

// The strings of rdma-core's ibv_wc_status_str.
const char* ibv_wc_status_str(ibv_wc_status status) {
  static const char* const names[] = {"success",
                                      "local length error",
                                      "local QP operation error",
                                      "local EE context operation error",
                                      "local protection error",
                                      "Work Request Flushed Error",
                                      "memory management operation error",
                                      "bad response error",
                                      "local access error",
                                      "remote invalid request error",
                                      "remote access error",
                                      "remote operation error",
                                      "transport retry counter exceeded",
                                      "RNR retry counter exceeded",
                                      "local RDD violation error",
                                      "remote invalid RD request",
                                      "aborted error",
                                      "invalid EE context number",
                                      "invalid EE context state",
                                      "fatal error",
                                      "response timeout error",
                                      "general error",
                                      "TM error",
                                      "TM software rendezvous"};
  const unsigned i = static_cast<unsigned>(status);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
}

}  // extern "C"
