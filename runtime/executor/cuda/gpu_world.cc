#include "executor/cuda/gpu_world.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "comm/host_identity.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "executor/cuda/cuda_check.hpp"

namespace mscclpp::exec {

GpuDeviceLimits queryDeviceLimits(int device) {
  GpuDeviceLimits l;
  l.device = device;
  cudaDeviceProp prop{};
  MSCCLPP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device), "GPU executor: the properties of CUDA device %d", device);
  l.name = prop.name;
  l.smCount = prop.multiProcessorCount;
  l.maxThreadsPerBlock = prop.maxThreadsPerBlock;
  l.sharedPerBlockOptin = prop.sharedMemPerBlockOptin;
  l.ccMajor = prop.major;
  l.ccMinor = prop.minor;
  l.cooperativeLaunch = prop.cooperativeLaunch != 0;
  return l;
}

GpuWorld::GpuWorld(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {
  MSCCLPP_ENFORCE(comm_ != nullptr, ErrorCode::InvalidArgument, "GPU executor: the communicator is null");
  device_ = comm_->device();
  MSCCLPP_ENFORCE(device_ >= 0, ErrorCode::InternalError,
                  "GPU executor: rank %d's communicator has no CUDA device (GpuBackend::create refuses it)",
                  comm_->rank());
  limits_ = queryDeviceLimits(device_);
  exchange_ = comm_->bootstrap()->withNamespace("mscclpp.executor.gpu");
  buildBarrier_ = comm_->bootstrap()->withNamespace("mscclpp.executor.gpu.builds");
  // An exchange waiting for a live peer has no deadline. A failed
  // communicator ends it: a dead peer, or a mismatch the monitor found.
  std::weak_ptr<Bootstrap> view = exchange_, barrierView = buildBarrier_;
  failureHook_ = comm_->onFailure([view, barrierView]() {
    if (auto b = view.lock()) b->abort();
    if (auto b = barrierView.lock()) b->abort();
  });
  memory_ = std::make_unique<ContextMemory>(device_);
  const std::string mps = params::gpuMps();
  mps_ = mps == "on" || (mps == "auto" && mpsDaemonVisible(params::mpsPipeDirectory()));
  // CUDA's own variable, read here as CUDA reads it at initialisation, to
  // count the queues the ranks' streams share.
  if (const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != v && *end == 0 && n >= 1) hardwareQueues_ = static_cast<int>(std::min<long>(n, 32));
  }
}

void GpuWorld::awaitBuild(int tag, const std::string& who) {
  const uint64_t mine = static_cast<uint64_t>(tag);
  for (int q = 0; q < size(); ++q)
    if (q != rank()) buildBarrier_->send(&mine, sizeof(mine), q, tag);
  for (int q = 0; q < size(); ++q) {
    if (q == rank()) continue;
    std::vector<char> got;
    try {
      got = buildBarrier_->recv(q, tag, sizeof(uint64_t));
    } catch (const Error& e) {
      throw Error(e.code(), strFormat("%s: waiting for rank %d to reach context build #%d (every rank must make the "
                                      "same calls in the same order, with buffers that change together): %s",
                                      who.c_str(), q, tag, e.what()));
    }
    uint64_t theirs = UINT64_MAX;
    if (got.size() == sizeof(theirs)) std::memcpy(&theirs, got.data(), sizeof(theirs));
    MSCCLPP_ENFORCE(theirs == mine, ErrorCode::RemoteError, "%s: rank %d's build message is not for build #%d",
                    who.c_str(), q, tag);
  }
}

void GpuWorld::recordLoad(const void* owner, const ResidentLoad& load) {
  for (auto& [o, l] : loads_) {
    if (o == owner) {
      l = load;
      return;
    }
  }
  loads_.emplace_back(owner, load);
}

void GpuWorld::updateLoad(const void* owner, const ResidentLoad& load) {
  for (auto& [o, l] : loads_)
    if (o == owner) l = load;
}

void GpuWorld::forgetLoad(const void* owner) {
  loads_.erase(std::remove_if(loads_.begin(), loads_.end(), [&](const auto& e) { return e.first == owner; }),
               loads_.end());
}

std::vector<ResidentLoad> GpuWorld::loadsExcept(const void* owner) const {
  std::vector<ResidentLoad> v;
  for (const auto& [o, l] : loads_)
    if (o != owner) v.push_back(l);
  return v;
}

cudaStream_t GpuWorld::proxyStream() {
  if (!proxyStream_) proxyStream_ = std::make_unique<OwnedStream>(strFormat("rank %d: proxy copies", rank()));
  return proxyStream_->get();
}

const GpuTopology& GpuWorld::topology() {
  if (hasTopology_) return topology_;
  GpuRankIdentity me{};
  me.magic = kGpuIdentityMagic;
  me.hostHash = comm::hostIdHash(comm::computeHostId());
  comm::ProcessIdentity p = comm::thisProcess();
  me.processToken = p.token;
  me.pid = p.pid;
  me.device = device_;
  me.rank = comm_->rank();
  me.smCount = limits_.smCount;
  me.hardwareQueues = hardwareQueues_;
  me.flags = (limits_.cooperativeLaunch ? kGpuCooperativeLaunch : 0) |
             (params::gpuCooperative() == "off" ? kGpuCooperativeOff : 0);
  cudaDeviceProp prop{};
  MSCCLPP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_), "GPU executor: the UUID of CUDA device %d", device_);
  static_assert(sizeof(prop.uuid) == sizeof(me.uuid), "a CUDA UUID is 16 bytes");
  std::memcpy(me.uuid, &prop.uuid, sizeof(me.uuid));
  std::vector<GpuRankIdentity> all(static_cast<size_t>(comm_->size()));
  all[static_cast<size_t>(comm_->rank())] = me;
  exchange_->allGather(all.data(), sizeof(GpuRankIdentity));
  topology_ = GpuTopology(comm_->rank(), std::move(all));
  hasTopology_ = true;
  const std::vector<int> shared = topology_.sameGpuOtherProcesses();
  if (!shared.empty() && !mps_) {
    MSCCLPP_WARN(LogExec,
                 "rank %d: ranks %s share GPU %d (%s) from other processes and no CUDA MPS daemon is visible "
                 "(MSCCLPP_GPU_MPS=%s): their kernels are time-sliced, not co-resident, so every wait on another "
                 "process's rank may cost a scheduler time slice (milliseconds). Plans still complete; start "
                 "nvidia-cuda-mps-control -d for speed, or run the ranks as threads of one process",
                 comm_->rank(), rankList(shared).c_str(), device_, limits_.name.c_str(), params::gpuMps().c_str());
  }
  return topology_;
}

}  // namespace mscclpp::exec
