#include "executor/cuda/gpu_context.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "channel/nvls_binding.hpp"
#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "core/serial.hpp"
#include "executor/cuda/context_releaser.hpp"
#include "executor/cuda/cuda_check.hpp"
#include "executor/cuda/device_image.hpp"
#include "executor/cuda/far_ports.hpp"
#include "executor/cuda/far_wiring.hpp"
#include "executor/cuda/launch_config.hpp"
#include "executor/diagnostics.hpp"
#include "executor/host_reach.hpp"
#include "executor/native_view.hpp"
#include "executor/scale_steps.hpp"
#include "mscclpp/communicator.hpp"
#include "plan/variable_sizes.hpp"
#include "transport/device_memory.hpp"

namespace mscclpp::exec {

// The call monitor's handle on the live-wait slots: the context detaches it before freeing them.
struct GpuContext::LiveWaitReader {
  std::mutex mutex;
  plan::PlanPtr plan;
  NativeProgramPtr native;  // a native kernel's step names
  int rank = 0;
  uint32_t nBlocks = 0;
  const LiveWaitSlot* slots = nullptr;  // guarded by mutex; null once the context went
  const uint32_t* abortHost = nullptr;  // the abort flag's host mapping, valid while slots is
};

namespace {

constexpr uint64_t kDirectoryMagic = 0x4d53434c47444952ull;  // "MSCLGDIR"
constexpr uint64_t kDirectoryVersion = 3;                    // 2: the call's descriptor; 3: network reaches
constexpr size_t kMaxDirectoryBytes = 1 << 20;
// How a peer reaches a region: a raw pointer (this process), a CUDA IPC
// registration (this host), or a TCP/IB registration (another host).
constexpr uint64_t kReachRaw = 1, kReachIpc = 2, kReachNet = 3;

uint64_t reserve(uint64_t* size, uint64_t bytes, uint64_t align) {
  *size = (*size + align - 1) / align * align;
  uint64_t off = *size;
  *size += bytes;
  return off;
}

// FNV-1a: the same plan name hashes alike in every process.
uint64_t nameHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

using CounterKey = FarPeer::CounterKey;

}  // namespace

// A peer's buffers and counters as reachable from this process.
struct GpuContext::Peer {
  int rank = -1;
  std::vector<char*> reach;
  std::vector<uint64_t> reachBytes;
  std::vector<RegisteredMemory> imports;  // keeps CUDA IPC mappings open
  FarPeer far;  // on another host: reach pointers null, its memory reached through its registrations
  char* input = nullptr;
  char* output = nullptr;
  char* scratch = nullptr;
  uint64_t inputBytes = 0, outputBytes = 0, scratchBytes = 0;
  std::map<CounterKey, uint64_t*> counters;
};

Refusal GpuContext::create(std::shared_ptr<GpuWorld> world, const plan::PlanPtr& plan, int rank, const CallShape& shape,
                           const CallRequest& request, const CallDescriptor& call, DataType dtype, ReduceOp nativeOp,
                           void* stream, std::shared_ptr<GpuContext>* built, NativeProgramPtr native) {
  std::shared_ptr<GpuContext> ctx(new GpuContext(std::move(world), plan, rank));
  ctx->native_ = std::move(native);
  DeviceGuard guard(ctx->world_->device());
  if (Refusal r = ctx->admit(dtype, nativeOp)) return r;  // nothing allocated or exchanged yet
  ctx->build(shape, request, call, stream);
  *built = std::move(ctx);
  return std::nullopt;
}

GpuContext::GpuContext(std::shared_ptr<GpuWorld> world, const plan::PlanPtr& plan, int rank)
    : world_(std::move(world)), plan_(plan), rank_(rank) {
  const plan::PlanHeader& h = plan_->header;
  MSCCLPP_ENFORCE(rank_ >= 0 && rank_ < static_cast<int>(plan_->ranks.size()), ErrorCode::InvalidArgument,
                  "plan %s has %zu ranks; rank %d is out of range", h.name.c_str(), plan_->ranks.size(), rank_);
  name_ = strFormat("plan %s (%s) rank %d", h.name.c_str(), h.source.c_str(), rank_);
  timeoutSeconds_ = world_->comm().timeoutSeconds();  // MSCCLPP_TIMEOUT_S or the communicator's own
  if (*world_->comm().timeoutSetting()) timeoutSetting_ = world_->comm().timeoutSetting();
  timeoutNs_ = timeoutSeconds_ > 0 ? static_cast<uint64_t>(timeoutSeconds_ * 1e9) : kNoDeadline;
}

Refusal GpuContext::admit(DataType dtype, ReduceOp nativeOp) {
  const plan::PlanHeader& h = plan_->header;
  const plan::RankPlan& rp = plan_->ranks[static_cast<size_t>(rank_)];
  // ---- Facts every rank shares: refuse before anything is exchanged. ----
  const GpuTopology& topo = world_->topology();
  if (!topo.otherHosts().empty()) {
    if (Refusal across = loadStoreAcrossHosts(*plan_, world_->comm(), "CUDA")) return across;
  }
  // Ranks that are threads of this process on other GPUs hand us raw
  // pointers, so our device needs peer access to theirs. CUDA IPC mappings
  // enable it themselves.
  for (int q = 0; q < topo.size(); ++q) {
    if (q == rank_ || !topo.sameProcess(q) || topo.sameGpu(q)) continue;
    const int peerDevice = topo.of(q).device;
    int can = 0;
    MSCCLPP_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, world_->device(), peerDevice),
                       "%s: can GPU %d access GPU %d (rank %d)", name_.c_str(), world_->device(), peerDevice, q);
    if (can == 0) {
      return strFormat(
          "%s: rank %d runs in this process on GPU %d, which GPU %d cannot access directly (no peer access over NVLink "
          "or PCIe): the CUDA backend needs direct access between the GPUs of one process",
          name_.c_str(), q, peerDevice, world_->device());
    }
    cudaError_t e = cudaDeviceEnablePeerAccess(peerDevice, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
    } else {
      MSCCLPP_CUDA_CHECK(e, "%s: enabling peer access from GPU %d to GPU %d (rank %d)", name_.c_str(), world_->device(),
                         peerDevice, q);
    }
  }
  threads_ = h.numThreadsPerBlock;
  for (const plan::ThreadblockPlan& tb : rp.threadblocks) {
    ThreadblockDevice counts{};
    counts.nOps = static_cast<uint32_t>(tb.ops.size());
    counts.nRefs = static_cast<uint32_t>(tb.refs.size());
    counts.nIds = static_cast<uint32_t>(tb.ids.size());
    blockListBytes_.push_back(blockOpListBytes(counts));
  }
  // Residency: every rank whose kernels share this GPU's SMs, other
  // processes' too under MPS. All ranks see the same facts and refuse alike.
  coResident_ = topo.residentRanks(world_->mpsActive());
  for (int q : coResident_)
    if (!topo.sameProcess(q)) residentElsewhere_.push_back(q);
  load_ = residentLoadOf(*plan_, coResident_, 0);
  // Blocks that wait on each other need a cooperative launch, on every
  // rank's GPU, unless that rank's process turned them off.
  std::vector<bool> cooperative;
  std::vector<int> devices;
  for (int q = 0; q < topo.size(); ++q) {
    cooperative.push_back((topo.of(q).flags & (kGpuCooperativeLaunch | kGpuCooperativeOff)) != 0);
    devices.push_back(topo.of(q).device);
  }
  // A native kernel's blocks may wait on each other whenever there are several.
  auto waitOnEachOther = [&](int q) {
    return native_ ? plan_->ranks[q].threadblocks.size() > 1 : blocksWaitOnEachOther(*plan_, q);
  };
  std::string noGang = native_ ? std::string() : cooperativeProblem(*plan_, cooperative, devices);
  for (int q = 0; native_ && noGang.empty() && q < static_cast<int>(plan_->ranks.size()) && q < topo.size(); ++q) {
    if (!cooperative[q] && waitOnEachOther(q)) {
      noGang = strFormat(
          "native algorithm %s: rank %d's %zu blocks wait on each other, which CUDA guarantees to be resident "
          "together only for a cooperative launch, and rank %d's GPU %d offers none",
          native_->kernel->name.c_str(), q, plan_->ranks[q].threadblocks.size(), q, devices[q]);
    }
  }
  if (!noGang.empty()) return strFormat("%s: %s (or set MSCCLPP_GPU_COOPERATIVE=off)", name_.c_str(), noGang.c_str());
  cooperative_ = (topo.of(rank_).flags & kGpuCooperativeOff) == 0 && waitOnEachOther(rank_);
  // Hardware queues: checked for every process and GPU group of the plan,
  // so a rank whose own group is fine refuses with the others.
  // A group with port channels to other hosts counts one stream more: the
  // process's runtime stream, on which the transports copy between the
  // network and device memory while the kernels spin.
  for (const std::vector<int>& group : topo.processGpuGroups()) {
    bool far = false;
    for (int q : group) far |= hasFarPorts(*plan_, topo, q);
    const std::string problem =
        queueProblem(h, group, concurrentStreams(*plan_, group) + (far ? 1 : 0), topo.of(group.front()).hardwareQueues);
    if (!problem.empty()) return strFormat("%s: %s", name_.c_str(), problem.c_str());
  }
  return precheck(dtype, nativeOp);
}

void GpuContext::build(const CallShape& shape, const CallRequest& request, const CallDescriptor& call, void* stream) {
  const plan::RankPlan& rp = plan_->ranks[static_cast<size_t>(rank_)];
  const GpuTopology& topo = world_->topology();

  // The devices whose work may touch our memory when we are destroyed: ours
  // and those of this process's other ranks, which hold raw pointers.
  quiesceDevices_.push_back(world_->device());
  for (int q = 0; q < topo.size(); ++q) {
    const int d = topo.of(q).device;
    if (topo.sameProcess(q) && std::find(quiesceDevices_.begin(), quiesceDevices_.end(), d) == quiesceDevices_.end())
      quiesceDevices_.push_back(d);
  }

  // ---- The quiet point: every rank has issued its earlier calls (they all
  // reached this build) and our device has finished them, so page-table
  // changes wait for nothing that waits for us. They end at the exchange. ----
  const int tag = world_->nextTag();  // alike on every rank: all build in the same order
  world_->awaitBuild(tag, name_);
  ContextMemory& memory = world_->memory();
  memory.quiesce(name_);

  // ---- Every allocation before the exchange, the collective build point. ----
  // Buffers: the user's where possible; ours for scratch, counters, staging.
  // Peers of other processes on this host map our buffers through CUDA IPC;
  // those on other hosts reach them through the transports.
  bool crossProcess = false;
  for (int r = 0; r < topo.size(); ++r) crossProcess |= r != rank_ && topo.sameHost(r) && !topo.sameProcess(r);
  CallRequest shaped = request;
  shaped.geometry = shape.geometry;  // a padded call binds staged buffers at the plan's padded pitch
  bindBuffers(shaped, crossProcess);
  uint64_t size = 0;
  scratchOffset_ = reserve(&size, shape.scratchBytes, 256);
  for (int port = 0; port < 2; ++port) {
    for (const plan::ChannelDecl& c : port ? rp.portChannels : rp.memoryChannels)
      counters_.push_back({CounterKey{c.peer, c.pairIndex, port != 0}, reserve(&size, sizeof(uint64_t), 64)});
  }
  stagingOffset_ = reserve(&size, binding_.stagingBytes, 256);
  // Zeroed: LL packets start with flag 0 (never valid) and counters at 0.
  region_ = memory.device(size, name_ + ": scratch, counters and staging");
  abort_ = memory.pinned(64, name_ + ": abort flag");
  // A dead or unreachable peer fails the communicator, which raises this
  // flag from the host: every device wait in flight polls it and stops.
  failureRegistration_ = world_->comm().raiseOnFailure(static_cast<uint32_t*>(abort_->host()));
  const uint32_t nBlocks = static_cast<uint32_t>(rp.threadblocks.size());
  liveWaits_ = memory.pinned(sizeof(LiveWaitSlot) * std::max<uint32_t>(1, nBlocks), name_ + ": live-wait slots");
  liveWaitReader_ = std::make_shared<LiveWaitReader>();
  liveWaitReader_->plan = plan_;
  liveWaitReader_->native = native_;
  liveWaitReader_->rank = rank_;
  liveWaitReader_->nBlocks = nBlocks;
  liveWaitReader_->slots = static_cast<const LiveWaitSlot*>(liveWaits_->host());
  liveWaitReader_->abortHost = static_cast<const uint32_t*>(abort_->host());
  failureSource_ = std::make_shared<const std::function<std::string()>>([reader = liveWaitReader_]() {
    std::lock_guard<std::mutex> lock(reader->mutex);
    // One load while nothing failed; a raised flag without a published failure is a wait that ended.
    if (reader->slots == nullptr || reader->native != nullptr ||
        __atomic_load_n(reader->abortHost, __ATOMIC_ACQUIRE) == 0)
      return std::string();
    return describeSlotFailure(*reader->plan, reader->rank, reader->slots, reader->nBlocks);
  });
  liveSource_ = std::make_shared<const std::function<LiveCall()>>([reader = liveWaitReader_]() {
    LiveCall call;
    std::lock_guard<std::mutex> lock(reader->mutex);
    if (reader->slots == nullptr) {
      call.gone = true;
      return call;
    }
    call.waits = describeWaitSlots(*reader->plan, reader->rank, reader->slots, reader->nBlocks, &call.progress,
                                   &call.launch, reader->native ? &reader->native->kernel->steps : nullptr);
    return call;
  });
  // The image's size depends only on the plan's counts, so its memory is
  // allocated before the exchange too, and the pinned memory it is uploaded
  // from: a copy from pageable memory may wait for the stream it is on.
  const ImageCounts counts = imageCountsOf(rp);
  // Variable-size plans: the count matrix and the segment table follow the image.
  const uint64_t imageBytes = roundUpTo16(packedImageBytes(counts));
  const uint64_t nRanks = plan_->ranks.size();
  uint64_t totalRefs = 0;
  for (const ImageCounts::Block& b : counts.blocks) totalRefs += b.nRefs;
  const uint64_t countsBytes = roundUpTo16(nRanks * nRanks * sizeof(uint64_t));
  const uint64_t beginBytes = roundUpTo16((counts.blocks.size() + 1) * sizeof(uint32_t));
  const uint64_t segmentBytes =
      plan_->header.variableSizes ? countsBytes + beginBytes + totalRefs * sizeof(DeviceSegment) : 0;
  imageMemory_ = memory.device(imageBytes + segmentBytes, name_ + ": device image");
  imageUpload_ = memory.pinned(imageBytes + segmentBytes, name_ + ": device image upload");
  if (native_) {
    const size_t viewBytes = NativeView::packedBytes(static_cast<int>(plan_->ranks.size()));
    nativeMemory_ = memory.device(viewBytes, name_ + ": the native kernel's view");
    nativeUpload_ = memory.pinned(viewBytes, name_ + ": the native kernel's view upload");
  }
  // The proxy for port channels: its FIFO is mapped host memory and a device counter.
  FifoDeviceHandle fifo{};
  if (!rp.portChannels.empty()) {
    const int64_t slots = params::proxyFifoSize();
    MSCCLPP_ENFORCE(slots > 0 && slots <= (1 << 20), ErrorCode::InvalidArgument,
                    "MSCCLPP_PROXY_FIFO_SIZE=%lld: expected 1 to 1048576 slots", static_cast<long long>(slots));
    proxyStream_ = world_->proxyStream();
    // The FIFO's convenience waits take the communicator's deadline too.
    proxy_ =
        std::make_unique<ProxyService>(static_cast<int>(slots), world_->device(), timeoutSeconds_, timeoutSetting_);
    fifo = proxy_->fifoDeviceHandle();
    fifoHead_ = fifo.head;
    writeValue64_ = resolveStreamWriteValue64(world_->device());
  }
  memory.trim();  // the idle blocks this build did not take

  // The NVLS bindings and the directory exchange use the build's tag.
  bindSwitchChannels(shape, tag);

  exchange(shape, tag, call);

  // ---- After the build point: host work, and the stream-ordered upload. ----
  image_ = ContextImage::build(plan_, rank_, shape, resources_, proxy_ ? &fifo : nullptr, timeoutNs_);
  const ExecContextDevice& hostImage = image_->device();
  MSCCLPP_ENFORCE(imageCountsOf(hostImage) == counts, ErrorCode::InternalError,
                  "%s: the built image's arrays differ from the plan's counts the device memory was sized for",
                  name_.c_str());
  PackedImage packed = packDeviceImage(hostImage, reinterpret_cast<uint64_t>(imageMemory_->get()));
  MSCCLPP_ENFORCE(packed.bytes.size() <= imageUpload_->bytes(), ErrorCode::InternalError,
                  "%s: the packed image (%zu bytes) outgrew the memory sized for it", name_.c_str(),
                  packed.bytes.size());
  std::memcpy(imageUpload_->host(), packed.bytes.data(), packed.bytes.size());
  uint64_t uploadBytes = packed.bytes.size();
  if (segmentBytes > 0) {
    char* host = static_cast<char*>(imageUpload_->host()) + imageBytes;
    char* dev = imageMemory_->get() + imageBytes;
    std::vector<uint32_t> begin(counts.blocks.size() + 1, 0);
    std::vector<DeviceSegment> table;
    for (const SegmentRef& r : image_->segments()) ++begin[r.block + 1];
    for (size_t b = 1; b < begin.size(); ++b) begin[b] += begin[b - 1];
    table.resize(image_->segments().size());
    std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
    for (const SegmentRef& r : image_->segments()) {
      DeviceSegment d{};
      d.fixedOffset = r.fixedOffset;
      d.limit = r.limit;
      d.slotBytes = r.slotBytes;
      d.ref = r.ref;
      d.op = r.op;
      d.sender = r.sender;
      d.receiver = r.receiver;
      d.line = r.line;
      d.prefix = r.prefix;
      d.factor = static_cast<uint8_t>(r.factor);
      d.alongRow = r.alongRow ? 1 : 0;
      d.placed = r.placed ? 1 : 0;
      table[next[r.block]++] = d;
    }
    MSCCLPP_ENFORCE(table.size() <= totalRefs, ErrorCode::InternalError, "%s: more segments than references",
                    name_.c_str());
    std::memset(host, 0, countsBytes);
    std::memcpy(host + countsBytes, begin.data(), begin.size() * sizeof(uint32_t));
    std::memcpy(host + countsBytes + beginBytes, table.data(), table.size() * sizeof(DeviceSegment));
    deviceCounts_ = reinterpret_cast<uint64_t*>(dev);
    deviceSegmentBegin_ = reinterpret_cast<const uint32_t*>(dev + countsBytes);
    deviceSegments_ = reinterpret_cast<const DeviceSegment*>(dev + countsBytes + beginBytes);
    uploadBytes = imageBytes + segmentBytes;
  }
  // Stream-ordered on the building call's stream, from pinned memory: a
  // synchronous copy, or one from pageable memory, may wait for work that
  // waits for the peers' kernels, which wait for ours. imageUpload_ lives
  // as long as the context.
  MSCCLPP_CUDA_CHECK(cudaMemcpyAsync(imageMemory_->get(), imageUpload_->host(), uploadBytes, cudaMemcpyHostToDevice,
                                     static_cast<cudaStream_t>(stream)),
                     "%s: uploading the %llu-byte device image", name_.c_str(), ull(uploadBytes));
  deviceContext_ = reinterpret_cast<const ExecContextDevice*>(imageMemory_->get() + packed.contextOffset);
  if (native_) uploadNativeView(packed, stream);
  mutableOffset_ = packed.mutableOffset;
  mutableBytes_ = packed.mutableBytes;
  stateOffset_ = packed.stateOffset;
  recordsOffset_ = packed.recordsOffset;
  if (proxy_) {
    signalsSent_.assign(rp.portChannels.size(), 0);
    // The handler reads this context's tables. A failure raises the abort
    // flag from the proxy thread, so every device wait of the launch stops.
    proxy_->setRequestHandler([this](const TriggerFields& f) {
      std::string error = handleRequest(f);
      requestsHandled_.fetch_add(1, std::memory_order_release);
      return error;
    });
    proxy_->setFailureFlag(static_cast<uint32_t*>(abort_->host()));
    proxy_->startProxy();
  }
  MSCCLPP_INFO(LogExec,
               "%s: GPU context built: %u blocks x %d threads, %u shared bytes per block, %llu device bytes, %s%s",
               name_.c_str(), hostImage.nBlocks, threads_, sharedBytes_, ull(deviceBytes()),
               binding_.stagingBytes ? "staged: " : "zero-copy", binding_.why.c_str());
}

GpuContext::~GpuContext() {
  if (liveWaitReader_) {
    std::lock_guard<std::mutex> lock(liveWaitReader_->mutex);
    liveWaitReader_->slots = nullptr;  // before liveWaits_ goes
  }
  // On the releaser's thread, never a rank's. Our last launches may still
  // use our proxy, and this process's ranks on other GPUs may still read our
  // memory: wait for those devices, then stop the proxy. Every device wait
  // has a deadline, so this ends. The members free the memory after. The
  // caller's streams are not touched: the user may have destroyed them.
  cudaSetDevice(world_->device());
  for (int d : quiesceDevices_) {
    if (cudaSetDevice(d) != cudaSuccess) continue;
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      MSCCLPP_WARN(LogExec, "%s: waiting for GPU %d before freeing the context: %s", name_.c_str(), d,
                   cudaGetErrorString(e));
    }
  }
  cudaSetDevice(world_->device());
  finishProxyRequests();
  if (proxy_) proxy_->stopProxy();
  far_.reset();  // its connections and the peers' registrations, once the proxy is done with them
  // Nothing is freed here: page-table changes would block the CUDA calls of
  // this process's ranks while peers' kernels spin on them. The blocks go
  // back to the rank's memory for the next build; what unmaps or frees when
  // it goes waits there for the next quiet point.
  failureRegistration_.reset();  // the communicator no longer raises abort_
  ContextMemory& memory = world_->memory();
  memory.giveBack(std::move(region_));
  memory.giveBack(std::move(imageMemory_));
  memory.giveBack(std::move(imageUpload_));
  memory.giveBack(std::move(nativeMemory_));
  memory.giveBack(std::move(nativeUpload_));
  memory.giveBack(std::move(abort_));
  memory.giveBack(std::move(liveWaits_));
  if (proxy_) memory.retire(std::shared_ptr<ProxyService>(std::move(proxy_)));
  if (!peers_.empty())  // their CUDA IPC mappings
    memory.retire(std::make_shared<std::vector<std::shared_ptr<Peer>>>(std::move(peers_)));
  if (!nvls_.empty())
    memory.retire(std::make_shared<std::vector<std::shared_ptr<detail::NvlsBinding>>>(std::move(nvls_)));
}

// Our kernels ended, but the requests they pushed last may still be in the
// FIFO: a final signal a peer still waits for, to another host or through
// the proxy stream. The proxy performs them before it stops, unless the
// context failed (a claimed slot may never be published). Bounded by the
// communicator's deadline, else 10 s: each request ends or fails on its own.
void GpuContext::finishProxyRequests() {
  if (!proxy_ || fifoHead_ == nullptr || failed_ || failureRaised()) return;
  uint64_t head = 0;
  try {
    transport::copyDeviceToHost(&head, fifoHead_, sizeof(head), (name_ + ": reading the proxy FIFO's head").c_str());
  } catch (const Error& e) {
    MSCCLPP_WARN(LogExec, "%s: %s", name_.c_str(), e.what());
    return;
  }
  const double limit = timeoutSeconds_ > 0 ? timeoutSeconds_ : 10.0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  while (requestsHandled_.load(std::memory_order_acquire) < head) {
    if (failureRaised() || !proxy_->errorMessage().empty()) return;
    if (std::chrono::steady_clock::now() > end) {
      MSCCLPP_WARN(LogExec, "%s: %llu port-channel requests still not performed after %.3g s; stopping the proxy",
                   name_.c_str(), ull(head - requestsHandled_.load()), limit);
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

uint64_t GpuContext::deviceBytes() const {
  return (region_ ? region_->bytes() : 0) + (imageMemory_ ? imageMemory_->bytes() : 0);
}

char* GpuContext::placePtr(const BufferPlace& p) const {
  if (p.staged) return region_->get() + stagingOffset_ + p.stagingOffset;
  return p.user;
}

void GpuContext::uploadNativeView(const PackedImage& packed, void* stream) {
  // The relocated root and handles, as the kernel sees them (device addresses), read from the packed bytes.
  const char* bytes = packed.bytes.data();
  auto hostCopy = [&](const void* devicePtr) {
    return bytes + (reinterpret_cast<uintptr_t>(devicePtr) - static_cast<uintptr_t>(packed.base));
  };
  const ExecContextDevice& dev = *reinterpret_cast<const ExecContextDevice*>(bytes + packed.contextOffset);
  NativeView view(*native_, *image_, dev,
                  reinterpret_cast<const MemoryChannelDeviceHandle*>(hostCopy(dev.memoryChannels)),
                  reinterpret_cast<const PortChannelDeviceHandle*>(hostCopy(dev.portChannels)));
  const std::vector<char> viewBytes = view.pack(reinterpret_cast<uint64_t>(nativeMemory_->get()));
  MSCCLPP_ENFORCE(viewBytes.size() <= nativeUpload_->bytes(), ErrorCode::InternalError,
                  "%s: the native kernel's view (%zu bytes) outgrew the memory sized for it", name_.c_str(),
                  viewBytes.size());
  std::memcpy(nativeUpload_->host(), viewBytes.data(), viewBytes.size());
  // From pinned memory, stream-ordered, as the image.
  MSCCLPP_CUDA_CHECK(cudaMemcpyAsync(nativeMemory_->get(), nativeUpload_->host(), viewBytes.size(),
                                     cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
                     "%s: uploading the native kernel's %zu-byte view", name_.c_str(), viewBytes.size());
}

Refusal GpuContext::queryKernel(DataType dtype, ReduceOp op, int threads, uint32_t sharedBytes, GpuKernelQuery* out) {
  if (!native_) {
    *out = queryExecutorKernel(dtype, op, threads, sharedBytes);
    return std::nullopt;
  }
  const NativeKernel& k = *native_->kernel;
  if (k.gpuLaunch == nullptr || k.gpuQuery == nullptr)
    return strFormat("%s: native algorithm %s has no GPU code", name_.c_str(), k.name.c_str());
  int maxThreads = 0, blocksPerSm = 0;
  const int e = k.gpuQuery(static_cast<int>(dtype), threads, &maxThreads, &blocksPerSm);
  if (e != 0) {
    return strFormat("%s: native algorithm %s has no GPU code for %s here (%s)", name_.c_str(), k.name.c_str(),
                     dataTypeName(dtype), cudaGetErrorString(static_cast<cudaError_t>(e)));
  }
  *out = GpuKernelQuery{maxThreads, 0, blocksPerSm};
  return std::nullopt;
}

Refusal GpuContext::precheck(DataType dtype, ReduceOp op) {
  if (!native_) {
    if (Refusal r = gpuDtypeRefusal(dtype)) return r;
  } else if (native_->kernel->gpuQuery != nullptr) {
    // Loads the native kernel for every datatype before the exchange, as
    // the backend loads the executor's: a later call's first query or
    // launch of it would load it while peers' kernels wait for ours.
    for (int d = 0; d < kNumDataTypes; ++d) {
      int maxThreads = 0, blocksPerSm = 0;
      (void)native_->kernel->gpuQuery(d, 32, &maxThreads, &blocksPerSm);
    }
  }
  const GpuDeviceLimits& dev = world_->limits();
  // Queried with a block size CUDA accepts, so that an oversized plan gets
  // threadsPerBlockRefusal's message.
  GpuKernelQuery q0;
  if (Refusal r = queryKernel(dtype, op, std::clamp(threads_, 1, kExecutorKernelMaxThreads), 0, &q0)) return r;
  if (Refusal r = threadsPerBlockRefusal(plan_->header, rank_, threads_, dev,
                                         GpuKernelLimits{q0.maxThreadsPerBlock, q0.staticSharedBytes}))
    return r;
  KernelChoice& k = kernels_[static_cast<int>(dtype)][static_cast<int>(op)];
  if (Refusal r = decideKernel(dtype, op, &k)) return r;
  sharedBytes_ = k.sharedBytes;
  return std::nullopt;
}

Refusal GpuContext::decideKernel(DataType dtype, ReduceOp op, KernelChoice* choice) {
  const GpuDeviceLimits& dev = world_->limits();
  GpuKernelQuery q0;
  if (Refusal r = queryKernel(dtype, op, threads_, 0, &q0)) return r;
  const uint64_t available =
      dev.sharedPerBlockOptin > q0.staticSharedBytes ? dev.sharedPerBlockOptin - q0.staticSharedBytes : 0;
  // A native kernel has no op lists to stage in shared memory.
  SharedMemoryChoice smem = native_ ? SharedMemoryChoice{} : chooseSharedMemory(blockListBytes_, available);
  KernelChoice& k = *choice;
  k = KernelChoice();
  k.sharedBytes = smem.dynamicBytes;
  GpuKernelQuery q = k.sharedBytes ? queryExecutorKernel(dtype, op, threads_, k.sharedBytes) : q0;
  // The blocks of every call that can be in flight: ours and those of the
  // plans this rank's cache holds, each rank at its largest.
  const std::vector<ResidentLoad> cached = world_->loadsExcept(this);
  auto verdict = [&](uint32_t sharedBytes, int blocksPerSm, InFlightBlocks* out) {
    ResidentLoad mine = load_;
    mine.blocksPerSm = mine.blocksPerSm > 0 ? std::min(mine.blocksPerSm, blocksPerSm) : blocksPerSm;
    *out = inFlightBlocks(mine, cached);
    return checkResidency(plan_->header, coResident_, out->blocks, threads_, sharedBytes, out->blocksPerSm, dev,
                          residentElsewhere_, out->others);
  };
  InFlightBlocks inFlight;
  ResidencyVerdict v = verdict(k.sharedBytes, q.blocksPerSm, &inFlight);
  int blocksPerSm = q.blocksPerSm;
  if (!v.ok && k.sharedBytes > 0) {
    // Op lists in shared memory cost residency: read them from global memory instead.
    InFlightBlocks inFlight0;
    ResidencyVerdict v0 = verdict(0, q0.blocksPerSm, &inFlight0);
    if (v0.ok) {
      MSCCLPP_INFO(LogExec,
                   "%s: op lists read from global memory (%u shared bytes per block would not let %llu blocks "
                   "be resident)",
                   name_.c_str(), k.sharedBytes, ull(inFlight0.blocks));
      k.sharedBytes = 0;
      v = v0;
      blocksPerSm = q0.blocksPerSm;
    }
  }
  if (!v.ok) return v.reason;
  load_.blocksPerSm = load_.blocksPerSm > 0 ? std::min(load_.blocksPerSm, blocksPerSm) : blocksPerSm;
  world_->updateLoad(this, load_);
  if (smem.blocksInGlobal > 0 && k.sharedBytes > 0) {
    MSCCLPP_INFO(LogExec, "%s: %u blocks read their op lists from global memory (largest %llu bytes > %llu available)",
                 name_.c_str(), smem.blocksInGlobal, ull(smem.largestBlockBytes), ull(available));
  }
  k.ready = true;
  return std::nullopt;
}

Refusal GpuContext::kernelFor(DataType dtype, ReduceOp op, const KernelChoice** choice) {
  KernelChoice& k = kernels_[static_cast<int>(dtype)][static_cast<int>(op)];
  *choice = &k;
  if (k.ready) return std::nullopt;
  if (!native_) {
    if (Refusal r = gpuDtypeRefusal(dtype)) return r;
  }
  return decideKernel(dtype, op, &k);
}

void GpuContext::bindBuffers(const CallRequest& request, bool crossProcessPeers) {
  binding_ = bindCall(request);
  if (!crossProcessPeers) return;
  // Peers in other processes map our user buffers through CUDA IPC, so CUDA
  // must export them. cudaMalloc memory can; cuMemCreate or pool memory
  // usually cannot.
  std::vector<std::pair<char*, uint64_t>> ranges;
  if (binding_.inPlacePlan) {
    if (!binding_.data.staged && binding_.data.bytes > 0) ranges.push_back({binding_.data.user, binding_.data.bytes});
  } else {
    if (!binding_.input.staged && binding_.input.bytes > 0)
      ranges.push_back({binding_.input.user, binding_.input.bytes});
    if (!binding_.output.staged && binding_.output.bytes > 0)
      ranges.push_back({binding_.output.user, binding_.output.bytes});
  }
  for (const auto& r : ranges) {
    try {
      exported_.push_back(world_->comm().registerMemory(r.first, r.second, Transport::CudaIpc));
    } catch (const Error& e) {
      MSCCLPP_INFO(LogExec, "%s: a user buffer cannot be shared through CUDA IPC (%s): staging the call", name_.c_str(),
                   e.what());
      exported_.clear();
      CallRequest staged = request;
      staged.zeroCopy = false;
      binding_ = bindCall(staged);
      return;
    }
  }
}

void GpuContext::bindSwitchChannels(const CallShape& shape, int tag) {
  const plan::RankPlan& rp = plan_->ranks.at(static_cast<size_t>(rank_));
  multicast_.assign(rp.switchChannels.size(), nullptr);
  // One binding per buffer and group, shared by the plan's switch channels
  // over that buffer and those ranks.
  std::vector<std::pair<std::pair<plan::BufferType, std::vector<int>>, void*>> made;
  for (size_t i = 0; i < rp.switchChannels.size(); ++i) {
    const plan::SwitchChannelDecl& s = rp.switchChannels[i];
    bool found = false;
    for (const auto& [key, mc] : made) {
      if (key.first == s.bufferType && key.second == s.ranks) {
        multicast_[i] = mc;
        found = true;
      }
    }
    if (found) continue;
    char* buffer = nullptr;
    uint64_t bytes = 0;
    switch (s.bufferType) {
      case plan::BufferType::Input:
        buffer = placePtr(binding_.input);
        bytes = shape.inputBytes;
        break;
      case plan::BufferType::Output:
        buffer = placePtr(binding_.output);
        bytes = shape.outputBytes;
        break;
      case plan::BufferType::Scratch:
        buffer = region_->get() + scratchOffset_;
        bytes = shape.scratchBytes;
        break;
    }
    int myIndex = 0;
    for (size_t k = 0; k < s.ranks.size(); ++k)
      if (s.ranks[k] == rank_) myIndex = static_cast<int>(k);
    // Collective over the group: all members bind or none does. It comes
    // before the exchange, after which nothing may synchronise the device.
    // Each binding takes five tags (NvlsBinding::tryCreate): eight per binding, 32 bindings per build.
    const int nvlsTag = (1 << 30) | ((tag & 0x1fffff) << 8) | static_cast<int>((made.size() & 31) << 3);
    std::shared_ptr<detail::NvlsBinding> b =
        buffer != nullptr && bytes > 0
            ? detail::NvlsBinding::tryCreate(world_->comm(), s.ranks, myIndex, bytes, nvlsTag, buffer)
            : nullptr;
    void* mc = b ? b->multicastPointer() : nullptr;
    if (b) nvls_.push_back(b);
    made.push_back({{s.bufferType, s.ranks}, mc});
    multicast_[i] = mc;
  }
}

void GpuContext::exchange(const CallShape& shape, int tag, const CallDescriptor& call) {
  const plan::PlanHeader& h = plan_->header;
  const plan::RankPlan& rp = plan_->ranks.at(static_cast<size_t>(rank_));
  const GpuTopology& topo = world_->topology();
  const int n = topo.size();
  char* const base = region_->get();

  // Our reaches: 0 = the context region, then the user ranges the plan works in.
  std::vector<MemoryRange> reaches{{base, region_->bytes()}};
  auto userReach = [&](const BufferPlace& p) -> uint64_t {
    if (p.staged || p.user == nullptr || p.bytes == 0) return kNoReach;
    for (size_t i = 1; i < reaches.size(); ++i)
      if (p.user >= reaches[i].ptr && p.user + p.bytes <= reaches[i].ptr + reaches[i].bytes) return i;
    reaches.push_back({p.user, p.bytes});
    return reaches.size() - 1;
  };
  if (binding_.inPlacePlan) userReach(binding_.data);
  auto refOf = [&](const BufferPlace& p) -> BufferRef {
    if (p.bytes == 0) return BufferRef{};
    if (p.staged) return BufferRef{0, stagingOffset_ + p.stagingOffset, p.bytes};
    uint64_t r = userReach(p);
    return r == kNoReach ? BufferRef{} : BufferRef{r, static_cast<uint64_t>(p.user - reaches[r].ptr), p.bytes};
  };
  const BufferRef myInput = refOf(binding_.input), myOutput = refOf(binding_.output);
  const BufferRef myScratch{0, scratchOffset_, shape.scratchBytes};

  // Registrations for peers of other processes on this host (the user ranges may already be registered).
  std::vector<std::vector<char>> ipc(reaches.size());
  bool crossProcess = false;
  for (int q = 0; q < n; ++q) crossProcess |= q != rank_ && topo.sameHost(q) && !topo.sameProcess(q);
  if (crossProcess) {
    for (size_t i = 0; i < reaches.size(); ++i) {
      RegisteredMemory reg = world_->comm().registerMemory(reaches[i].ptr, reaches[i].bytes, Transport::CudaIpc);
      ipc[i] = reg.serialize();
      exported_.push_back(reg);
    }
  }
  // Peers on other hosts: our reaches registered for them, and a connection
  // to each port-channel peer among them.
  Bootstrap& bs = world_->exchange();
  FarWiring far(name_, world_->comm(), bs, topo, rank_, rp.portChannels, reaches, tag);
  exported_.insert(exported_.end(), far.registrations().begin(), far.registrations().end());
  auto message = [&](uint64_t kind) {
    ByteWriter w;
    for (uint64_t v : {kDirectoryMagic, kDirectoryVersion, static_cast<uint64_t>(rank_), static_cast<uint64_t>(tag),
                       nameHash(h.name), shape.inputBytes, shape.outputBytes, shape.scratchBytes})
      w.put<uint64_t>(v);
    call.write(w);
    w.put<uint64_t>(reaches.size());
    for (size_t i = 0; i < reaches.size(); ++i) {
      w.put<uint64_t>(reaches[i].bytes);
      w.put<uint64_t>(kind);
      if (kind == kReachRaw) {
        w.put<uint64_t>(reinterpret_cast<uint64_t>(reaches[i].ptr));
      } else {
        const std::vector<char>& reg = kind == kReachIpc ? ipc[i] : far.serialized(i);
        w.put<uint64_t>(reg.size());
        w.putBytes(reg.data(), reg.size());
      }
    }
    for (const BufferRef& b : {myInput, myOutput, myScratch}) {
      w.put<uint64_t>(b.reach);
      w.put<uint64_t>(b.offset);
      w.put<uint64_t>(b.bytes);
    }
    w.put<uint64_t>(counters_.size());
    for (const auto& [key, off] : counters_) {
      w.put<uint64_t>(static_cast<uint64_t>(std::get<0>(key)));
      w.put<uint64_t>(static_cast<uint64_t>(std::get<1>(key)));
      w.put<uint64_t>(std::get<2>(key) ? 1 : 0);
      w.put<uint64_t>(off);
    }
    return std::move(w.bytes());
  };
  const std::vector<char> rawMessage = message(kReachRaw);
  const std::vector<char> ipcMessage = crossProcess ? message(kReachIpc) : std::vector<char>();
  const std::vector<char> netMessage = far.farPeers() ? message(kReachNet) : std::vector<char>();
  for (int q = 0; q < n; ++q) {
    if (q == rank_) continue;
    const std::vector<char>& m = !topo.sameHost(q) ? netMessage : topo.sameProcess(q) ? rawMessage : ipcMessage;
    bs.send(m.data(), m.size(), q, tag);
  }

  peers_.assign(static_cast<size_t>(n), nullptr);
  for (int q = 0; q < n; ++q) {
    if (q == rank_) continue;
    std::vector<char> data;
    try {
      data = bs.recv(q, tag, kMaxDirectoryBytes);
    } catch (const Error& e) {
      throw Error(e.code(), strFormat("%s: waiting for rank %d's execution-context directory (context build #%d of "
                                      "this rank; every rank must make the same calls in the same order, with "
                                      "buffers that change together): %s",
                                      name_.c_str(), q, tag, e.what()));
    }
    const std::string what = strFormat("%s: rank %d's execution-context directory", name_.c_str(), q);
    ByteReader r(data, what.c_str());
    MSCCLPP_ENFORCE(r.get<uint64_t>("magic") == kDirectoryMagic && r.get<uint64_t>("version") == kDirectoryVersion &&
                        r.get<uint64_t>("rank") == static_cast<uint64_t>(q),
                    ErrorCode::RemoteError, "%s is not a version-%llu GPU directory", what.c_str(),
                    ull(kDirectoryVersion));
    const uint64_t peerTag = r.get<uint64_t>("tag"), planHash = r.get<uint64_t>("plan");
    const uint64_t in = r.get<uint64_t>("input bytes"), out = r.get<uint64_t>("output bytes");
    const uint64_t scr = r.get<uint64_t>("scratch bytes");
    const CallDescriptor theirs = CallDescriptor::read(r);
    MSCCLPP_ENFORCE(peerTag == static_cast<uint64_t>(tag) && planHash == nameHash(h.name), ErrorCode::InvalidUsage,
                    "%s: rank %d built context #%llu for another plan while this rank builds #%d for plan %s: every "
                    "rank must make the same calls in the same order",
                    name_.c_str(), q, ull(peerTag), tag, h.name.c_str());
    // Every rank gets every peer's descriptor: all of them refuse, each naming both calls.
    MSCCLPP_ENFORCE(sameCall(call, theirs), ErrorCode::InvalidUsage,
                    "mismatched calls: rank %d called %s but rank %d called %s (every rank must make the same "
                    "collective calls, with the same counts, datatype, reduce op and root, in the same order)",
                    rank_, call.describe().c_str(), q, theirs.describe().c_str());
    auto peer = std::make_shared<Peer>();
    peer->rank = q;
    const uint64_t nReach = r.get<uint64_t>("reach count");
    MSCCLPP_ENFORCE(nReach >= 1 && nReach <= 8, ErrorCode::RemoteError, "%s: %llu reaches", what.c_str(), ull(nReach));
    for (uint64_t i = 0; i < nReach; ++i) {
      const uint64_t bytes = r.get<uint64_t>("reach bytes");
      const uint64_t kind = r.get<uint64_t>("reach kind");
      char* ptr = nullptr;
      if (kind == kReachRaw) {
        MSCCLPP_ENFORCE(topo.sameProcess(q), ErrorCode::RemoteError, "%s: a raw pointer from another process",
                        what.c_str());
        ptr = reinterpret_cast<char*>(r.get<uint64_t>("reach pointer"));
      } else if (kind == kReachIpc || kind == kReachNet) {
        const uint64_t len = r.get<uint64_t>("registration size");
        MSCCLPP_ENFORCE(len <= kMaxDirectoryBytes, ErrorCode::RemoteError, "%s: a %llu-byte registration", what.c_str(),
                        ull(len));
        std::vector<char> reg(len);
        r.getBytes(reg.data(), len, "registration");
        RegisteredMemory m = RegisteredMemory::deserialize(reg);
        MSCCLPP_ENFORCE(m.size() >= bytes, ErrorCode::RemoteError, "%s: a registration of %zu bytes for %llu",
                        what.c_str(), m.size(), ull(bytes));
        if (kind == kReachIpc) {
          MSCCLPP_ENFORCE(topo.sameHost(q), ErrorCode::RemoteError, "%s: CUDA IPC from another host", what.c_str());
          ptr = static_cast<char*>(m.data());
          MSCCLPP_ENFORCE(ptr != nullptr, ErrorCode::RemoteError, "%s: its memory is not mapped here (CUDA IPC)",
                          what.c_str());
          peer->imports.push_back(m);
        } else {
          MSCCLPP_ENFORCE(!topo.sameHost(q), ErrorCode::RemoteError, "%s: a network registration from this host",
                          what.c_str());
          peer->far.regions.push_back(m);  // reached through the proxy's connection; ptr stays null
        }
      } else {
        MSCCLPP_THROW(ErrorCode::RemoteError, "%s: unknown reach kind %llu", what.c_str(), ull(kind));
      }
      peer->reach.push_back(ptr);
      peer->reachBytes.push_back(bytes);
    }
    auto buffer = [&](const char* field, char** ptr, uint64_t* bytes, BufferRef* ref) {
      BufferRef b{r.get<uint64_t>(field), r.get<uint64_t>(field), r.get<uint64_t>(field)};
      *bytes = b.bytes;
      *ref = b;
      if (b.reach == kNoReach) return;
      MSCCLPP_ENFORCE(
          b.reach < nReach && b.offset <= peer->reachBytes[b.reach] && b.bytes <= peer->reachBytes[b.reach] - b.offset,
          ErrorCode::RemoteError, "%s: its %s points outside its memory", what.c_str(), field);
      if (peer->reach[b.reach] != nullptr) *ptr = peer->reach[b.reach] + b.offset;
    };
    buffer("input", &peer->input, &peer->inputBytes, &peer->far.input);
    buffer("output", &peer->output, &peer->outputBytes, &peer->far.output);
    buffer("scratch", &peer->scratch, &peer->scratchBytes, &peer->far.scratch);
    MSCCLPP_ENFORCE(peer->inputBytes == in && peer->outputBytes == out && peer->scratchBytes == scr,
                    ErrorCode::RemoteError, "%s: inconsistent sizes", what.c_str());
    const uint64_t nCounters = r.get<uint64_t>("counter count");
    MSCCLPP_ENFORCE(nCounters <= (1u << 20), ErrorCode::RemoteError, "%s: %llu counters", what.c_str(), ull(nCounters));
    for (uint64_t i = 0; i < nCounters; ++i) {
      const int sender = static_cast<int>(r.get<uint64_t>("counter sender"));
      const int pair = static_cast<int>(r.get<uint64_t>("counter pair"));
      const bool port = r.get<uint64_t>("counter kind") != 0;
      const uint64_t off = r.get<uint64_t>("counter offset");
      MSCCLPP_ENFORCE(off % 8 == 0 && off + 8 <= peer->reachBytes[0], ErrorCode::RemoteError,
                      "%s: counter offset %llu is outside its region or unaligned", what.c_str(), ull(off));
      peer->far.counterOffsets[CounterKey{sender, pair, port}] = off;
      if (peer->reach[0] != nullptr)
        peer->counters[CounterKey{sender, pair, port}] = reinterpret_cast<uint64_t*>(peer->reach[0] + off);
    }
    r.expectEnd();
    peers_[static_cast<size_t>(q)] = std::move(peer);
  }

  // ---- The resources of the image, all device pointers valid in this process. ----
  RankResources& res = resources_;
  res.input = placePtr(binding_.input);
  res.output = placePtr(binding_.output);
  res.scratch = base + scratchOffset_;
  res.inputBytes = shape.inputBytes;
  res.outputBytes = shape.outputBytes;
  res.scratchBytes = shape.scratchBytes;
  auto bufferOf = [&](int owner, plan::BufferType t, uint64_t* bytes) -> char* {
    if (owner == rank_) {
      switch (t) {
        case plan::BufferType::Input:
          *bytes = res.inputBytes;
          return res.input;
        case plan::BufferType::Output:
          *bytes = res.outputBytes;
          return res.output;
        case plan::BufferType::Scratch:
          *bytes = res.scratchBytes;
          return res.scratch;
      }
    }
    const Peer& p = *peers_.at(static_cast<size_t>(owner));
    switch (t) {
      case plan::BufferType::Input:
        *bytes = p.inputBytes;
        return p.input;
      case plan::BufferType::Output:
        *bytes = p.outputBytes;
        return p.output;
      case plan::BufferType::Scratch:
        *bytes = p.scratchBytes;
        return p.scratch;
    }
    return nullptr;
  };
  for (const plan::RemoteBufferDecl& d : rp.remoteBuffers) {
    uint64_t bytes = 0;
    char* b = bufferOf(d.rank, d.type, &bytes);
    res.remoteBuffers.push_back({b, bytes});
  }
  auto myCounter = [&](const CounterKey& key) {
    for (const auto& [k, off] : counters_)
      if (k == key) return reinterpret_cast<uint64_t*>(base + off);
    MSCCLPP_THROW(ErrorCode::InternalError, "%s: no counter for its own channel", name_.c_str());
  };
  auto peerCounter = [&](int owner, const CounterKey& key) {
    const Peer& p = *peers_.at(static_cast<size_t>(owner));
    auto it = p.counters.find(key);
    MSCCLPP_ENFORCE(it != p.counters.end(), ErrorCode::RemoteError,
                    "%s: rank %d has no %s channel paired with this rank's channel %d", name_.c_str(), owner,
                    std::get<2>(key) ? "port" : "memory", std::get<1>(key));
    return it->second;
  };
  for (const plan::ChannelDecl& c : rp.memoryChannels) {
    res.memoryInbound.push_back(myCounter(CounterKey{c.peer, c.pairIndex, false}));
    res.memoryOutbound.push_back(peerCounter(c.peer, CounterKey{rank_, c.pairIndex, false}));
  }
  std::vector<const FarPeer*> farDirectories(peers_.size(), nullptr);
  for (size_t q = 0; q < peers_.size(); ++q)
    if (peers_[q] && !topo.sameHost(static_cast<int>(q))) farDirectories[q] = &peers_[q]->far;
  far_ = far.connect(rp, {myInput, myOutput, myScratch}, farDirectories);
  for (size_t c = 0; c < rp.portChannels.size(); ++c) {
    const plan::ChannelDecl& d = rp.portChannels[c];
    res.portInbound.push_back(myCounter(CounterKey{d.peer, d.pairIndex, true}));
    // Across hosts the proxy signals through the connection; the outbound word is its local source.
    res.portOutbound.push_back(far_ && far_->crosses(static_cast<uint32_t>(c))
                                   ? far_->outboundOf(static_cast<uint32_t>(c))
                                   : peerCounter(d.peer, CounterKey{rank_, d.pairIndex, true}));
  }
  for (const plan::SwitchChannelDecl& s : rp.switchChannels) {
    // The members' buffers, and the multicast address when the group bound
    // one: the interpreter uses multimem where it can, the members otherwise.
    SwitchGroupResource g;
    g.bytes = s.ranks.empty() ? 0 : UINT64_MAX;
    for (size_t i = 0; i < s.ranks.size(); ++i) {
      uint64_t bytes = 0;
      g.members.push_back(bufferOf(s.ranks[i], s.bufferType, &bytes));
      g.bytes = std::min(g.bytes, bytes);
      if (s.ranks[i] == rank_) g.myIndex = static_cast<uint32_t>(i);
    }
    g.multicast = multicast_.at(res.switchGroups.size());
    res.switchGroups.push_back(std::move(g));
  }
  res.abortFlag = static_cast<uint32_t*>(abort_->device());
  res.liveWaits = static_cast<LiveWaitSlot*>(liveWaits_->device());
}

void GpuContext::writeSignal(uint32_t channel, uint64_t value, std::string* error) {
  cudaStream_t s = proxyStream_;
  uint64_t* target = image_->resources().portOutbound[channel];
  if (writeValue64_ != nullptr) {
    // Stream-ordered after this proxy's earlier copies, with the fence the
    // default flags give: the peer's acquire of the value sees their data.
    CUresult r = reinterpret_cast<WriteValue64Fn>(writeValue64_)(reinterpret_cast<CUstream>(s),
                                                                 reinterpret_cast<CUdeviceptr>(target), value, 0);
    if (r != CUDA_SUCCESS)
      *error = strFormat("cuStreamWriteValue64 to the peer's counter failed (CUresult %d)", int(r));
    return;
  }
  // Without stream memory operations: a copy from pageable memory. CUDA
  // reads it before returning, so a later value never overtakes this one.
  cudaError_t e = cudaMemcpyAsync(target, &signalsSent_[channel], sizeof(uint64_t), cudaMemcpyHostToDevice, s);
  if (e != cudaSuccess)
    *error = strFormat("cudaMemcpyAsync of the signal to the peer's counter: %s", cudaGetErrorString(e));
}

std::string GpuContext::handleRequest(const TriggerFields& f) {
  if (!proxyDeviceSet_) {
    cudaError_t e = cudaSetDevice(world_->device());
    if (e != cudaSuccess)
      return strFormat("proxy thread: cudaSetDevice(%d): %s", world_->device(), cudaGetErrorString(e));
    proxyDeviceSet_ = true;
  }
  cudaStream_t stream = proxyStream_;
  if (far_ && far_->crosses(f.channelId)) {
    // Another host: the put and signal go on the channel's connection.
    std::string error = far_->perform(f, image_->memoryTable());
    if (!error.empty()) return error;
  } else if (f.type & TriggerPut) {
    char *src = nullptr, *dst = nullptr;
    std::string error = image_->resolvePut(f, &src, &dst);
    if (!error.empty()) return error;
    if (f.size > 0) {
      // The copy engine reads what the kernel wrote before its release push of this trigger.
      cudaError_t e = cudaMemcpyAsync(dst, src, f.size, cudaMemcpyDeviceToDevice, stream);
      if (e != cudaSuccess) return strFormat("cudaMemcpyAsync of %llu bytes: %s", ull(f.size), cudaGetErrorString(e));
    }
  }
  if ((f.type & TriggerSignal) && !(far_ && far_->crosses(f.channelId))) {
    if (f.channelId >= signalsSent_.size())
      return strFormat("signal on port channel %u; %zu declared", f.channelId, signalsSent_.size());
    std::string error;
    writeSignal(f.channelId, ++signalsSent_[f.channelId], &error);
    if (!error.empty()) return error;
  }
  if (f.type & TriggerFlush) {
    // Every earlier copy and signal of this proxy completed (one stream serves all channels).
    Deadline deadline(timeoutSeconds_, timeoutSetting_);
    cudaError_t last = cudaSuccess;
    try {
      waitUntil(
          [&] {
            last = cudaStreamQuery(stream);
            return last != cudaErrorNotReady;
          },
          deadline, name_ + ": proxy flush (waiting for the copy stream)");
    } catch (const Error& e) {
      return e.what();
    }
    if (last != cudaSuccess) return strFormat("flush: cudaStreamQuery: %s", cudaGetErrorString(last));
    // And every write and signal to other hosts reached its peer.
    if (far_) {
      std::string error = far_->flush(timeoutSeconds_);
      if (!error.empty()) return error;
    }
  }
  return std::string();
}

bool GpuContext::failureRaised() const {
  // Acquire: pairs with the proxy's release store. The device's relaxed
  // store publishes nothing; the diagnosis synchronises with the stream.
  return __atomic_load_n(static_cast<const uint32_t*>(abort_->host()), __ATOMIC_ACQUIRE) != 0;
}

void GpuContext::throwFailure() {
  failed_ = true;
  std::string cudaProblem;
  if (lastStream_ != nullptr) {
    cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(lastStream_));
    if (e != cudaSuccess) cudaProblem = cudaGetErrorString(e);
  }
  const plan::Plan& plan = *plan_;
  std::vector<char> state(mutableBytes_);
  // On a stream of ours: cudaMemcpy would wait behind the legacy stream's work.
  bool stateRead = true;
  try {
    transport::copyDeviceToHost(state.data(), imageMemory_->get() + mutableOffset_, mutableBytes_,
                                (name_ + ": reading the failed launch's state").c_str());
  } catch (const Error& err) {
    stateRead = false;
    if (cudaProblem.empty()) cudaProblem = err.what();
  }
  const ExecState* st = reinterpret_cast<const ExecState*>(state.data() + (stateOffset_ - mutableOffset_));
  const BlockRecord* records = reinterpret_cast<const BlockRecord*>(state.data() + (recordsOffset_ - mutableOffset_));
  const uint32_t nBlocks = image_->device().nBlocks;
  bool timedOut = false, invalid = false;
  uint32_t flag = 0;
  for (uint32_t b = 0; b < nBlocks && stateRead; ++b) {
    timedOut |= records[b].state == kBlockTimedOut;
    invalid |= records[b].state == kBlockInvalid;
    if (blockStopped(records[b])) flag = records[b].launchFlag;
  }
  std::string msg =
      strFormat("%s: a launch%s failed", name_.c_str(), flag ? strFormat(" with flag %u", flag).c_str() : "");
  if (timedOut) msg += " (" + describeTimeout(timeoutSetting_, timeoutSeconds_) + ")";
  const std::string proxyError = proxy_ ? proxy_->errorMessage() : std::string();
  if (!proxyError.empty()) msg += "; " + proxyError;
  if (!cudaProblem.empty()) msg += "; CUDA: " + cudaProblem;
  if (stateRead) {
    for (const std::string& line : describeUnfinishedBlocks(plan, rank_, records, nBlocks, flag, st->firstFailedBlock,
                                                            native_ ? &native_->kernel->steps : nullptr))
      msg += "\n  " + line;
  }
  MSCCLPP_WARN(LogExec, "%s", msg.c_str());
  // A connection to another host meets a dead peer a moment before the bootstrap names it.
  if (far_ && !proxyError.empty()) world_->comm().throwIfFailedAfter(Error(ErrorCode::RemoteError, msg));
  ErrorCode commCode;
  std::string commFailure;
  if (world_->comm().failed(&commCode, &commFailure)) throw Error(commCode, commFailure + "\n" + msg);
  if (!cudaProblem.empty()) throw Error(ErrorCode::CudaError, msg);
  if (timedOut) throw TimeoutError(msg);
  if (far_ && !proxyError.empty() && !invalid) throw Error(ErrorCode::RemoteError, msg);
  if (invalid || !proxyError.empty()) throw Error(ErrorCode::NotSupported, msg);
  throw Error(ErrorCode::Aborted, msg);
}

Refusal GpuContext::launch(const GpuCallArgs& a) {
  MSCCLPP_ENFORCE(!failed_, ErrorCode::InvalidUsage, "%s: this execution context failed in an earlier launch",
                  name_.c_str());
  if (failureRaised()) throwFailure();
  const ReduceOp native = nativeOpOf(a.op);
  const size_t elem = dataTypeSize(a.dtype);
  if (elem == 0 || (image_->reduceGranularity() % elem) != 0) {
    return strFormat("%s: its reductions touch offsets/sizes in steps of %llu bytes, not whole %s elements",
                     name_.c_str(), ull(image_->reduceGranularity()), dataTypeName(a.dtype));
  }
  const KernelChoice* chosen = nullptr;
  if (Refusal r = kernelFor(a.dtype, native, &chosen)) return r;
  const KernelChoice& k = *chosen;
  cudaStream_t s = static_cast<cudaStream_t>(a.stream);
  CallSteps steps;
  steps.preBytes = binding_.preBytes;
  steps.postBytes = binding_.postBytes;
  steps.divideBytes = binding_.divideBytes;
  if (deviceSegments_ != nullptr) {
    if (Refusal r = bindCounts(a, &steps)) return r;
  }
  char* input = placePtr(binding_.input);
  char* output = placePtr(binding_.output);
  // All below is enqueued on the caller's stream: no sync, no allocation.
  if (steps.preBytes > 0 && binding_.planPartBytes > 0) {
    // A padded call: one copy puts the send buffer's parts at the plan's pitch.
    MSCCLPP_CUDA_CHECK(cudaMemcpy2DAsync(input, binding_.planPartBytes, binding_.preSrc, binding_.userPartBytes,
                                         binding_.userPartBytes, binding_.preParts, cudaMemcpyDeviceToDevice, s),
                       "%s: staging the send buffer's parts at the padded pitch", name_.c_str());
    if (a.op == ReduceOp::PreMulSum) launchPreMultiply(a.dtype, input, input, binding_.input.bytes, a.scalar, s);
  } else if (steps.preBytes > 0) {
    if (a.op == ReduceOp::PreMulSum) {
      launchPreMultiply(a.dtype, input, binding_.preInPlace ? input : binding_.preSrc, steps.preBytes, a.scalar, s);
    } else {
      MSCCLPP_CUDA_CHECK(cudaMemcpyAsync(input, binding_.preSrc, steps.preBytes, cudaMemcpyDeviceToDevice, s),
                         "%s: staging the send buffer", name_.c_str());
    }
  }
  if (steps.fillOutput) {
    MSCCLPP_CUDA_CHECK(
        cudaMemcpyAsync(output, binding_.postDst, binding_.postBytes, cudaMemcpyDeviceToDevice, s),
        "%s: filling the staged output with the receive buffer (variable sizes, counts in device memory)",
        name_.c_str());
  }
  const uint32_t nBlocks = image_->device().nBlocks;
  if (nBlocks > 0) {
    GpuLaunch l;
    l.deviceContext = deviceContext_;
    l.nBlocks = nBlocks;
    l.threadsPerBlock = static_cast<uint32_t>(threads_);
    l.sharedBytes = k.sharedBytes;
    l.cooperative = cooperative_ && nBlocks > 1;
    l.args = LaunchArgs{timeoutNs_, static_cast<uint32_t>(a.packet), a.call};
    if (deviceSegments_ != nullptr) {
      l.args.counts = a.countsOnDevice ? a.counts : deviceCounts_;
      l.args.segments = deviceSegments_;
      l.args.segmentBegin = deviceSegmentBegin_;
      l.args.nRanks = static_cast<uint32_t>(plan_->ranks.size());
      l.args.elementBytes = static_cast<uint32_t>(elem);
    }
    l.stream = a.stream;
    if (native_) {
      const AlgorithmLaunchArgs args{timeoutNs_, a.call, static_cast<int32_t>(a.dtype), static_cast<int32_t>(native),
                                     kAlgorithmLaunchAbortCopy | (l.cooperative ? kAlgorithmLaunchCooperative : 0u)};
      const int e = native_->kernel->gpuLaunch(nativeMemory_->get(), &args, nBlocks, l.threadsPerBlock, a.stream);
      MSCCLPP_ENFORCE(e == 0, ErrorCode::CudaError,
                      "%s: launching native algorithm %s's kernel (%u blocks of %u threads): %s", name_.c_str(),
                      native_->kernel->name.c_str(), nBlocks, l.threadsPerBlock,
                      cudaGetErrorString(static_cast<cudaError_t>(e)));
    } else {
      launchExecutorKernel(a.dtype, native, l);
    }
  }
  if (steps.postBytes > 0 && binding_.planPartBytes > 0) {
    MSCCLPP_CUDA_CHECK(cudaMemcpy2DAsync(binding_.postDst, binding_.userPartBytes, output, binding_.planPartBytes,
                                         binding_.userPartBytes, binding_.postParts, cudaMemcpyDeviceToDevice, s),
                       "%s: copying the padded output's parts to the receive buffer", name_.c_str());
  } else if (steps.postBytes > 0) {
    MSCCLPP_CUDA_CHECK(cudaMemcpyAsync(binding_.postDst, output, steps.postBytes, cudaMemcpyDeviceToDevice, s),
                       "%s: copying the staged output to the receive buffer", name_.c_str());
  }
  if (a.op == ReduceOp::Avg && steps.divideBytes > 0) {
    char* recv = binding_.postDst != nullptr ? binding_.postDst : output;
    launchDivide(a.dtype, recv, steps.divideBytes, static_cast<uint32_t>(plan_->ranks.size()), s);
  }
  if (a.capturing) retainInCapturedGraph(a.captureId, a.graph);
  lastStream_ = a.stream;
  launched_ = true;
  return std::nullopt;
}

Refusal GpuContext::bindCounts(const GpuCallArgs& a, CallSteps* steps) {
  const plan::Plan& p = *plan_;
  const plan::PlanHeader& h = p.header;
  const uint32_t n = static_cast<uint32_t>(p.ranks.size());
  MSCCLPP_ENFORCE(a.counts != nullptr, ErrorCode::InvalidArgument, "%s: a variable-size call without counts",
                  name_.c_str());
  if (a.countsOnDevice) {
    // The kernel checks each segment against its buffer. The host does not
    // know the counts: the pre-step stages (or premulsum scales) the whole
    // send buffer, and a staged output is filled from the receive buffer
    // first, so the post-step's whole copy changes only the segments.
    // Every rank of the collective divides (sizes apart): every rank refuses alike.
    if (a.op == ReduceOp::Avg && reducedOutputBytes(h.collective, rank_, h.root, 1) > 0) {
      return strFormat(
          "%s: avg on a variable-size %s plan divides the bytes its counts name, which the host cannot know when "
          "the counts are in device memory: pass the splits in host memory (SplitSizes::onDevice false), or sum "
          "and divide after the call",
          name_.c_str(), plan::collectiveName(h.collective));
    }
    steps->fillOutput = steps->postBytes > 0;
    return std::nullopt;
  }
  // Host counts: checked here, then stored by a kernel that takes them by value.
  if (n * n > kInlineCounts) {
    return strFormat("%s: %u ranks' counts in host memory exceed the %u a launch passes: pass them on the device",
                     name_.c_str(), n, kInlineCounts);
  }
  const size_t elem = dataTypeSize(a.dtype);
  const std::string rule = checkCountRule(p, rank_, a.counts);
  if (!rule.empty())
    throw Error(ErrorCode::InvalidArgument, withRankCounts(rule, rank_, static_cast<int>(n), a.counts));
  std::string why = checkCounts(p, rank_, a.counts, elem, binding_.input.bytes, binding_.output.bytes);
  if (why.empty()) why = image_->bindSegments(a.counts, elem);
  if (!why.empty()) throw CountsError(withRankCounts(why, rank_, static_cast<int>(n), a.counts));
  // The steps move only what the segments cover, from offset 0, as the
  // CPU backend does: the receive bytes past them stay untouched.
  uint64_t inBytes = 0, outBytes = 0;
  plan::variableCallBytes(h.collective, h.worldSize, a.counts, elem, rank_, &inBytes, &outBytes);
  steps->preBytes = std::min(steps->preBytes, inBytes);
  steps->postBytes = std::min(steps->postBytes, outBytes);
  steps->divideBytes = std::min(steps->divideBytes, reducedOutputBytes(h.collective, rank_, h.root, outBytes));
  launchStoreCounts(a.counts, n * n, deviceCounts_, a.stream);
  return std::nullopt;
}

void GpuContext::retainInCapturedGraph(uint64_t captureId, void* graph) {
  // One reference per capture sequence: the graph holds it until the graph,
  // its executable graphs and their launches are gone, so the sequence's
  // later calls on this context need none (no allocation, no CUDA call).
  if (graph == nullptr || (retainedAny_ && captureId == retainedCapture_)) return;
  // The destructor runs on a CUDA thread, which must not call CUDA: it only
  // hands the reference to the releaser.
  auto* held = new std::shared_ptr<GpuContext>(shared_from_this());
  cudaUserObject_t object = nullptr;
  cudaError_t e = cudaUserObjectCreate(
      &object, held,
      [](void* p) {
        auto* ref = static_cast<std::shared_ptr<GpuContext>*>(p);
        ContextReleaser::instance().retire(std::move(*ref));
        delete ref;
      },
      1, cudaUserObjectNoDestructorSync);
  if (e != cudaSuccess) {
    delete held;
    MSCCLPP_CUDA_CHECK(e, "%s: a user object keeping the context alive for the captured graph", name_.c_str());
  }
  e = cudaGraphRetainUserObject(static_cast<cudaGraph_t>(graph), object, 1, cudaGraphUserObjectMove);
  if (e != cudaSuccess) {
    cudaUserObjectRelease(object, 1);
    MSCCLPP_CUDA_CHECK(e, "%s: cudaGraphRetainUserObject for the captured graph", name_.c_str());
  }
  retainedAny_ = true;
  retainedCapture_ = captureId;
}

}  // namespace mscclpp::exec
