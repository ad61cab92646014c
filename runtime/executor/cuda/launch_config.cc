#include "executor/cuda/launch_config.hpp"

#include <algorithm>

#include "core/enforce.hpp"
#include "core/format.hpp"

namespace mscclpp::exec {

uint64_t roundUpTo16(uint64_t n) { return (n + 15) / 16 * 16; }

uint64_t blockOpListBytes(const ThreadblockDevice& tb) {
  // Must match executorKernel's layout (executor_kernel.cuh).
  return roundUpTo16(uint64_t{tb.nOps} * sizeof(plan::Op)) + roundUpTo16(uint64_t{tb.nRefs} * sizeof(ResolvedRef)) +
         roundUpTo16(uint64_t{tb.nIds} * sizeof(uint32_t));
}

SharedMemoryChoice chooseSharedMemory(const std::vector<uint64_t>& blockBytes, uint64_t availableBytes) {
  SharedMemoryChoice c;
  for (uint64_t b : blockBytes) {
    c.largestBlockBytes = std::max(c.largestBlockBytes, b);
    if (b <= availableBytes) {
      c.dynamicBytes = static_cast<uint32_t>(std::max<uint64_t>(c.dynamicBytes, b));
      ++c.blocksInShared;
    } else {
      ++c.blocksInGlobal;
    }
  }
  return c;
}

Refusal threadsPerBlockRefusal(const plan::PlanHeader& header, int rank, int threads, const GpuDeviceLimits& device,
                               const GpuKernelLimits& kernel) {
  if (threads <= 0) {
    return strFormat("plan %s (%s) rank %d: num_threads_per_block is %d", header.name.c_str(), header.source.c_str(),
                     rank, threads);
  }
  int limit = kExecutorKernelMaxThreads;
  const char* why = "the executor kernel's __launch_bounds__";
  if (device.maxThreadsPerBlock > 0 && device.maxThreadsPerBlock < limit) {
    limit = device.maxThreadsPerBlock;
    why = "the device's maxThreadsPerBlock";
  }
  if (kernel.maxThreadsPerBlock > 0 && kernel.maxThreadsPerBlock < limit) {
    limit = kernel.maxThreadsPerBlock;
    why = "the compiled kernel's register use (cudaFuncGetAttributes maxThreadsPerBlock)";
  }
  if (threads <= limit) return std::nullopt;
  return strFormat("plan %s (%s) rank %d: num_threads_per_block %d exceeds %d, the limit of %s on GPU %d (%s)",
                   header.name.c_str(), header.source.c_str(), rank, threads, limit, why, device.device,
                   device.name.c_str());
}

void checkThreadsPerBlock(const plan::PlanHeader& header, int rank, int threads, const GpuDeviceLimits& device,
                          const GpuKernelLimits& kernel) {
  if (Refusal r = threadsPerBlockRefusal(header, rank, threads, device, kernel))
    throw Error(ErrorCode::NotSupported, *r);
}

uint64_t groupBlocks(const plan::Plan& plan, const std::vector<int>& ranks) {
  uint64_t total = 0;
  for (int r : ranks) {
    if (r >= 0 && r < static_cast<int>(plan.ranks.size())) total += plan.ranks[r].threadblocks.size();
  }
  return total;
}

std::string rankList(const std::vector<int>& ranks) {
  std::vector<int> v(ranks);
  std::sort(v.begin(), v.end());
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += j == i ? std::to_string(v[i]) : std::to_string(v[i]) + "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

ResidencyVerdict checkResidency(const plan::PlanHeader& header, const std::vector<int>& groupRanks,
                                uint64_t totalBlocks, int threads, uint32_t sharedBytes, int blocksPerSm,
                                const GpuDeviceLimits& device, const std::vector<int>& otherProcessRanks,
                                const std::vector<std::string>& alsoInFlight) {
  ResidencyVerdict v;
  v.capacity = static_cast<uint64_t>(std::max(0, blocksPerSm)) * static_cast<uint64_t>(std::max(0, device.smCount));
  if (totalBlocks <= v.capacity) return v;
  v.ok = false;
  const bool several = groupRanks.size() > 1;
  const std::string where =
      otherProcessRanks.empty()
          ? std::string("in this process")
          : strFormat("(%s %s of them in %s, whose kernels run at the same time under CUDA MPS)",
                      otherProcessRanks.size() > 1 ? "ranks" : "rank", rankList(otherProcessRanks).c_str(),
                      otherProcessRanks.size() > 1 ? "other processes" : "another process");
  v.reason = strFormat(
      "plan %s (%s): %s %s on GPU %d (%s) %s need%s %llu blocks of %d threads resident at once "
      "(%u bytes of shared memory each), but the GPU holds at most %llu (%d per SM x %d SMs for this kernel); the "
      "plan's %s wait on each other, so the launch would not complete: run fewer ranks per GPU, or use a plan with "
      "fewer threadblocks or threads per block",
      header.name.c_str(), header.source.c_str(), several ? "ranks" : "rank", rankList(groupRanks).c_str(),
      device.device, device.name.c_str(), where.c_str(), several ? "" : "s",
      static_cast<unsigned long long>(totalBlocks), threads, sharedBytes, static_cast<unsigned long long>(v.capacity),
      blocksPerSm, device.smCount, several ? "ranks and blocks" : "blocks");
  if (!alsoInFlight.empty()) {
    std::string names;
    for (const std::string& n : alsoInFlight) names += (names.empty() ? "" : ", ") + n;
    v.reason += strFormat(
        " (the count includes the kernels of plan%s %s, cached for earlier calls: a rank may start this call while "
        "another still runs one of those, so each rank counts with its largest kernel)",
        alsoInFlight.size() > 1 ? "s" : "", names.c_str());
  }
  return v;
}

ResidentLoad residentLoadOf(const plan::Plan& plan, const std::vector<int>& ranks, int blocksPerSm) {
  ResidentLoad l;
  l.plan = strFormat("%s (%s)", plan.header.name.c_str(), plan.header.source.c_str());
  for (int r : ranks) l.blocks.push_back(groupBlocks(plan, {r}));
  l.blocksPerSm = blocksPerSm;
  return l;
}

InFlightBlocks inFlightBlocks(const ResidentLoad& mine, const std::vector<ResidentLoad>& cached) {
  InFlightBlocks f;
  f.blocksPerSm = mine.blocksPerSm;
  std::vector<uint64_t> most = mine.blocks;
  for (const ResidentLoad& c : cached) {
    bool counts = false;
    for (size_t i = 0; i < most.size() && i < c.blocks.size(); ++i) {
      if (c.blocks[i] > most[i]) {
        most[i] = c.blocks[i];
        counts = true;
      }
    }
    if (c.blocksPerSm > 0 && c.blocksPerSm < f.blocksPerSm) {
      f.blocksPerSm = c.blocksPerSm;
      counts = true;
    }
    if (counts && std::find(f.others.begin(), f.others.end(), c.plan) == f.others.end()) f.others.push_back(c.plan);
  }
  for (uint64_t b : most) f.blocks += b;
  return f;
}

bool blocksWaitOnEachOther(const plan::Plan& plan, int rank) {
  if (rank < 0 || rank >= static_cast<int>(plan.ranks.size()) || plan.ranks[rank].threadblocks.size() < 2) return false;
  using plan::OpType;
  for (const plan::RankPlan& rp : plan.ranks) {
    for (const plan::ThreadblockPlan& tb : rp.threadblocks) {
      for (const plan::Op& op : tb.ops) {
        switch (op.type) {
          case OpType::Barrier:
          case OpType::Wait:
          case OpType::RelaxedWait:
          case OpType::SemAcquire:
          case OpType::ReadPutPackets:
          case OpType::UnpackPackets:
          case OpType::ReducePackets:
          case OpType::ReduceSendPackets:
          case OpType::ReduceCopyPackets:
          case OpType::ReduceCopySendPackets:
            return true;
          default:
            break;
        }
      }
    }
  }
  return false;
}

std::string cooperativeProblem(const plan::Plan& plan, const std::vector<bool>& cooperative,
                               const std::vector<int>& devices) {
  for (size_t q = 0; q < cooperative.size() && q < plan.ranks.size(); ++q) {
    if (cooperative[q] || !blocksWaitOnEachOther(plan, static_cast<int>(q))) continue;
    return strFormat(
        "plan %s (%s): rank %zu's %zu blocks wait on each other, which CUDA guarantees to be resident together "
        "only for a cooperative launch, and rank %zu's GPU %d offers none (cudaDevAttrCooperativeLaunch is 0): "
        "use a plan with one threadblock per rank there",
        plan.header.name.c_str(), plan.header.source.c_str(), q, plan.ranks[q].threadblocks.size(), q,
        q < devices.size() ? devices[q] : -1);
  }
  return std::string();
}

int concurrentStreams(const plan::Plan& plan, const std::vector<int>& groupRanks) {
  int n = 0;
  for (int r : groupRanks) {
    if (r < 0 || r >= static_cast<int>(plan.ranks.size())) continue;
    n += plan.ranks[r].portChannels.empty() ? 1 : 2;
  }
  return n;
}

std::string queueProblem(const plan::PlanHeader& header, const std::vector<int>& groupRanks, int streams, int queues) {
  if (streams <= queues) return std::string();
  return strFormat(
      "plan %s (%s): ranks %s share one GPU in one process and need %d streams progressing at once (each rank's "
      "kernel stream, its proxy's copy stream where it has port channels, and the process's runtime stream where "
      "they reach other hosts), but CUDA spreads the process's streams "
      "over CUDA_DEVICE_MAX_CONNECTIONS=%d hardware queues and serialises streams that share one, so a kernel would "
      "wait behind another that waits for it: set CUDA_DEVICE_MAX_CONNECTIONS to at least %d (at most 32) before "
      "CUDA initialises, or run fewer ranks per GPU",
      header.name.c_str(), header.source.c_str(), rankList(groupRanks).c_str(), streams, queues, streams);
}

std::string streamProblem(const std::string& who, const std::vector<int>& coResidentRanks, const void* stream,
                          const void* legacyHandle) {
  if (coResidentRanks.size() < 2 || (stream != nullptr && stream != legacyHandle)) return std::string();
  return strFormat(
      "%s: ranks %s share this process and GPU and wait on each other within one launch, but the call "
      "uses the legacy default stream, on which kernels of different ranks cannot run at the same time "
      "(it would deadlock until MSCCLPP_TIMEOUT_S): give each rank its own stream "
      "(cudaStreamCreateWithFlags(..., cudaStreamNonBlocking))",
      who.c_str(), rankList(coResidentRanks).c_str());
}

}  // namespace mscclpp::exec
