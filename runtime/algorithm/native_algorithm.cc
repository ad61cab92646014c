#include "algorithm/native_algorithm.hpp"

#include <algorithm>

#include "channel/nvls_binding.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan_names.hpp"
#include "plan/plan_sizing.hpp"

namespace mscclpp::algo {
namespace {

constexpr uint32_t kKnownResources = (MSCCLPP_ALGORITHM_SCRATCH_PER_RANK << 1) - 1;
constexpr uint32_t kMaxBlocks = 1024;

bool has(uint32_t resources, uint32_t flag) { return (resources & flag) != 0; }

std::string text(const char* s) { return s == nullptr ? std::string() : std::string(s); }

// The chunk counts that make the plan's chunk the call's part (plan_sizing.hpp).
void chunksOf(plan::Collective c, int n, uint32_t* input, uint32_t* output) { plan::bufferParts(c, n, input, output); }

std::string bytesRange(uint64_t lo, uint64_t hi) {
  return hi == UINT64_MAX ? strFormat("at least %s", formatBytes(lo).c_str())
                          : strFormat("%s to %s", formatBytes(lo).c_str(), formatBytes(hi).c_str());
}

}  // namespace

NativeSpec specOf(const mscclppAlgorithmDesc& d, bool builtin) {
  MSCCLPP_ENFORCE(d.version == MSCCLPP_ALGORITHM_API_VERSION, ErrorCode::InvalidArgument,
                  "native algorithm: description version %d; this runtime reads version %d", d.version,
                  MSCCLPP_ALGORITHM_API_VERSION);
  NativeSpec s;
  s.name = text(d.name);
  MSCCLPP_ENFORCE(!s.name.empty() && s.name.size() <= 200, ErrorCode::InvalidArgument,
                  "native algorithm: a name of 1 to 200 characters is required (got %zu)", s.name.size());
  const std::string what = "native algorithm " + s.name;
  MSCCLPP_ENFORCE(d.collective != nullptr && plan::collectiveFromName(std::string(d.collective), &s.collective) &&
                      (s.collective == plan::Collective::AllReduce || s.collective == plan::Collective::AllGather ||
                       s.collective == plan::Collective::ReduceScatter || s.collective == plan::Collective::Broadcast ||
                       s.collective == plan::Collective::AllToAll),
                  ErrorCode::InvalidArgument,
                  "%s: collective '%s' is not one of allreduce, allgather, reducescatter, broadcast, alltoall",
                  what.c_str(), d.collective ? d.collective : "(null)");
  MSCCLPP_ENFORCE(d.minMessageBytes <= d.maxMessageBytes, ErrorCode::InvalidArgument,
                  "%s: minMessageBytes %llu is above maxMessageBytes %llu", what.c_str(), ull(d.minMessageBytes),
                  ull(d.maxMessageBytes));
  s.minBytes = d.minMessageBytes;
  s.maxBytes = d.maxMessageBytes;
  MSCCLPP_ENFORCE(d.bufferMode >= MSCCLPP_ALGORITHM_ANY_BUFFERS && d.bufferMode <= MSCCLPP_ALGORITHM_OUT_OF_PLACE_ONLY,
                  ErrorCode::InvalidArgument, "%s: bufferMode %d is not 0 (any), 1 (in place) or 2 (out of place)",
                  what.c_str(), d.bufferMode);
  s.bufferMode = d.bufferMode;
  MSCCLPP_ENFORCE(d.worldSize == 0 || d.worldSize >= 2, ErrorCode::InvalidArgument,
                  "%s: worldSize %d: 0 (any) or at least 2", what.c_str(), d.worldSize);
  MSCCLPP_ENFORCE(d.nRanksPerNode >= 0, ErrorCode::InvalidArgument, "%s: nRanksPerNode %d is negative", what.c_str(),
                  d.nRanksPerNode);
  s.worldSize = d.worldSize;
  s.nRanksPerNode = d.nRanksPerNode;
  MSCCLPP_ENFORCE(d.nTags >= 0 && (d.nTags == 0 || d.tags != nullptr), ErrorCode::InvalidArgument, "%s: %d tags at %p",
                  what.c_str(), d.nTags, static_cast<const void*>(d.tags));
  for (int i = 0; i < d.nTags; ++i) {
    MSCCLPP_ENFORCE(d.tags[i] != nullptr, ErrorCode::InvalidArgument, "%s: tags[%d] is NULL", what.c_str(), i);
    s.tags.emplace_back(d.tags[i]);
  }
  MSCCLPP_ENFORCE((d.resources & ~kKnownResources) == 0, ErrorCode::InvalidArgument, "%s: unknown resource flags 0x%x",
                  what.c_str(), d.resources & ~kKnownResources);
  s.resources = d.resources;
  MSCCLPP_ENFORCE(!has(s.resources, MSCCLPP_ALGORITHM_REDUCES) || s.collective == plan::Collective::AllReduce ||
                      s.collective == plan::Collective::ReduceScatter,
                  ErrorCode::InvalidArgument, "%s: only allreduce and reducescatter reduce", what.c_str());
  MSCCLPP_ENFORCE(has(s.resources, MSCCLPP_ALGORITHM_REDUCES) ||
                      (s.collective != plan::Collective::AllReduce && s.collective != plan::Collective::ReduceScatter),
                  ErrorCode::InvalidArgument, "%s: an %s must declare MSCCLPP_ALGORITHM_REDUCES", what.c_str(),
                  plan::collectiveName(s.collective));
  MSCCLPP_ENFORCE(d.scratchParts <= 4096, ErrorCode::InvalidArgument, "%s: %u scratch parts (at most 4096)",
                  what.c_str(), d.scratchParts);
  s.scratchParts = d.scratchParts;
  MSCCLPP_ENFORCE(d.blocks >= 1 && d.blocks <= kMaxBlocks && d.hostBlocks <= kMaxBlocks, ErrorCode::InvalidArgument,
                  "%s: %u blocks (%u on the CPU backend): 1 to %u", what.c_str(), d.blocks, d.hostBlocks, kMaxBlocks);
  s.blocks = d.blocks;
  s.hostBlocks = d.hostBlocks == 0 ? d.blocks : d.hostBlocks;
  MSCCLPP_ENFORCE(d.threadsPerBlock >= 1 && d.threadsPerBlock <= 1024, ErrorCode::InvalidArgument,
                  "%s: %u threads per block: 1 to 1024", what.c_str(), d.threadsPerBlock);
  s.threadsPerBlock = d.threadsPerBlock;
  s.gpuDtypes = d.gpuLaunch != nullptr ? d.gpuDtypes : 0;
  MSCCLPP_ENFORCE(d.hostBlock != nullptr, ErrorCode::InvalidArgument,
                  "%s: hostBlock is NULL (every algorithm runs on the CPU backend)", what.c_str());
  MSCCLPP_ENFORCE(d.gpuLaunch == nullptr || d.gpuQuery != nullptr, ErrorCode::InvalidArgument,
                  "%s: gpuLaunch without gpuQuery", what.c_str());
  MSCCLPP_ENFORCE(d.nSteps >= 0 && (d.nSteps == 0 || d.stepNames != nullptr), ErrorCode::InvalidArgument,
                  "%s: %d step names at %p", what.c_str(), d.nSteps, static_cast<const void*>(d.stepNames));
  auto kernel = std::make_shared<exec::NativeKernel>();
  kernel->name = s.name;
  for (int i = 0; i < d.nSteps; ++i) kernel->steps.push_back(text(d.stepNames[i]));
  kernel->hostBlock = d.hostBlock;
  kernel->gpuLaunch = d.gpuLaunch;
  kernel->gpuQuery = d.gpuQuery;
  s.kernel = std::move(kernel);
  s.builtin = builtin;
  return s;
}

NativeAlgorithm::NativeAlgorithm(NativeSpec spec) : spec_(std::move(spec)) {
  uint64_t h = hashString(spec_.name);
  for (uint64_t v :
       {static_cast<uint64_t>(spec_.collective), spec_.minBytes, spec_.maxBytes,
        static_cast<uint64_t>(spec_.bufferMode), static_cast<uint64_t>(spec_.worldSize),
        static_cast<uint64_t>(spec_.nRanksPerNode), uint64_t{spec_.resources}, uint64_t{spec_.scratchParts},
        uint64_t{spec_.blocks}, uint64_t{spec_.hostBlocks}, uint64_t{spec_.threadsPerBlock}, uint64_t{spec_.gpuDtypes}})
    h = mix64(h, v);
  for (const std::string& s : spec_.kernel->steps) h = mix64(h, hashString(s));
  fingerprint_ = h;
  for (const std::string& t : spec_.tags) tagPointers_.push_back(t.c_str());
  info_.name = spec_.name.c_str();
  info_.kind = "native";
  info_.collective = plan::collectiveName(spec_.collective);
  info_.minMessageBytes = spec_.minBytes;
  info_.maxMessageBytes = spec_.maxBytes;
  info_.bufferMode = spec_.bufferMode;
  info_.worldSize = spec_.worldSize;
  info_.nRanksPerNode = spec_.nRanksPerNode;
  info_.tags = tagPointers_.empty() ? nullptr : tagPointers_.data();
  info_.nTags = static_cast<int>(tagPointers_.size());
  info_.builtin = spec_.builtin ? 1 : 0;
}

exec::Refusal NativeAlgorithm::refusal(const Request& r) const {
  const plan::SelectRequest& c = r.call;
  const uint32_t res = spec_.resources;
  const char* name = spec_.name.c_str();
  if (c.collective != spec_.collective)
    return strFormat("%s is an %s algorithm", name, plan::collectiveName(spec_.collective));
  if (c.worldSize < 2) return strFormat("%s needs at least 2 ranks", name);
  if (spec_.worldSize != 0 && spec_.worldSize != c.worldSize)
    return strFormat("%s is written for %d ranks, not %d", name, spec_.worldSize, c.worldSize);
  if (spec_.nRanksPerNode != 0 && spec_.nRanksPerNode != c.nRanksPerNode)
    return strFormat("%s is written for %d ranks per node, not %d", name, spec_.nRanksPerNode, c.nRanksPerNode);
  if (c.messageBytes < spec_.minBytes || c.messageBytes > spec_.maxBytes)
    return strFormat("%s serves %s, not %s", name, bytesRange(spec_.minBytes, spec_.maxBytes).c_str(),
                     formatBytes(c.messageBytes).c_str());
  if (spec_.bufferMode == MSCCLPP_ALGORITHM_IN_PLACE_ONLY && !c.inPlace)
    return strFormat("%s serves in-place calls only", name);
  if (spec_.bufferMode == MSCCLPP_ALGORITHM_OUT_OF_PLACE_ONLY && c.inPlace)
    return strFormat("%s serves out-of-place calls only", name);
  for (int i = 0; i < c.nTags; ++i) {
    if (std::find(spec_.tags.begin(), spec_.tags.end(), c.tags[i]) == spec_.tags.end())
      return strFormat("%s lacks tag '%s'", name, c.tags[i]);
  }
  if (r.hostOf == nullptr || static_cast<int>(r.hostOf->size()) != c.worldSize)
    return strFormat("%s: where the ranks are is not known", name);
  const std::vector<int32_t>& hosts = *r.hostOf;
  const int nHosts = *std::max_element(hosts.begin(), hosts.end()) + 1;
  if (has(res, MSCCLPP_ALGORITHM_ONE_HOST) && nHosts > 1)
    return strFormat("%s needs every rank on one host; the ranks are on %d hosts", name, nHosts);
  if (has(res, MSCCLPP_ALGORITHM_UNIFORM_HOSTS)) {
    std::vector<int> perHost(static_cast<size_t>(nHosts), 0);
    for (int32_t h : hosts) ++perHost[static_cast<size_t>(h)];
    if (std::count(perHost.begin(), perHost.end(), perHost[0]) != nHosts)
      return strFormat("%s needs as many ranks on every host", name);
  }
  if (r.backend == Backend::Cuda) {
    if (!spec_.kernel->gpuLaunch) return strFormat("%s has no GPU code", name);
    if (c.dtype < 0 || c.dtype >= 32 || ((spec_.gpuDtypes >> c.dtype) & 1u) == 0)
      return strFormat("%s has no GPU code for %s", name, dataTypeName(static_cast<DataType>(c.dtype)));
  }
  if (has(res, MSCCLPP_ALGORITHM_MULTICAST)) {
    if (r.backend != Backend::Cuda) return strFormat("%s needs NVLS multicast, which the CPU backend has not", name);
    uint64_t in = 0, out = 0;
    std::string sizeProblem;
    if (!plan::callBytesFromMessage(c.collective, c.messageBytes, c.worldSize, &in, &out, &sizeProblem))
      return strFormat("%s: %s", name, sizeProblem.c_str());
    const size_t members = static_cast<size_t>(std::count(hosts.begin(), hosts.end(), hosts[c.rank < 0 ? 0 : c.rank]));
    for (const auto& [buffer, bytes, what] :
         {std::tuple<const void*, uint64_t, const char*>{c.sendBuffer, in, "send"}, {c.recvBuffer, out, "receive"}}) {
      const std::string why = detail::NvlsBinding::incapability(r.device, buffer, bytes, members);
      if (!why.empty()) return strFormat("%s: NVLS cannot bind the %s buffer: %s", name, what, why.c_str());
    }
  }
  return std::nullopt;
}

plan::PlanPtr NativeAlgorithm::makePlan(const std::vector<int32_t>& hostOf, bool inPlace, int root,
                                        Backend backend) const {
  const int n = static_cast<int>(hostOf.size());
  const uint32_t res = spec_.resources;
  auto p = std::make_shared<plan::Plan>();
  plan::PlanHeader& h = p->header;
  h.name = spec_.name;
  h.source = "native algorithm";
  h.collective = spec_.collective;
  h.protocol = has(res, MSCCLPP_ALGORITHM_PACKETS) ? plan::Protocol::LL : plan::Protocol::Simple;
  h.inPlace = inPlace && has(res, MSCCLPP_ALGORITHM_RUNS_IN_PLACE);
  h.worldSize = n;
  h.numThreadsPerBlock = static_cast<int>(spec_.threadsPerBlock);
  h.useDoubleScratchBuffer = has(res, MSCCLPP_ALGORITHM_DOUBLE_SCRATCH);
  // LL16 packets carry 8 bytes: the executor pads other sizes (docs/plan-core.md, "Any count").
  h.bufferAlignment = has(res, MSCCLPP_ALGORITHM_PACKETS) ? 8 : 1;
  h.tags = spec_.tags;
  h.root = root;
  // A plan of sums serves every op: the kernel applies the launch's.
  h.reduceOps = has(res, MSCCLPP_ALGORITHM_REDUCES) ? (1u << static_cast<unsigned>(plan::PlanReduceOp::Sum)) : 0;
  h.formatVersion = 0;
  const uint32_t blocks = backend == Backend::Cuda ? spec_.blocks : spec_.hostBlocks;
  std::vector<int32_t> localIndex(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < r; ++q) localIndex[static_cast<size_t>(r)] += hostOf[q] == hostOf[r] ? 1 : 0;
  for (int r = 0; r < n; ++r) {
    plan::RankPlan rp;
    rp.rank = r;
    chunksOf(h.collective, n, &rp.inputChunks, &rp.outputChunks);
    rp.scratchChunks =
        spec_.scratchParts * (has(res, MSCCLPP_ALGORITHM_SCRATCH_PER_RANK) ? static_cast<uint32_t>(n) : 1);
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      const bool sameHost = hostOf[q] == hostOf[r];
      const bool port = has(res, MSCCLPP_ALGORITHM_PORT_CHANNELS) ||
                        (has(res, MSCCLPP_ALGORITHM_PORT_CHANNELS_ACROSS) && !sameHost &&
                         localIndex[static_cast<size_t>(q)] == localIndex[static_cast<size_t>(r)]);
      if (has(res, MSCCLPP_ALGORITHM_MEMORY_CHANNELS) && sameHost) rp.memoryChannels.push_back({q, 0, false});
      if (port) rp.portChannels.push_back({q, 0, false});
      for (auto [flag, type] :
           {std::pair<uint32_t, plan::BufferType>{MSCCLPP_ALGORITHM_PEER_INPUT, plan::BufferType::Input},
            {MSCCLPP_ALGORITHM_PEER_OUTPUT, plan::BufferType::Output},
            {MSCCLPP_ALGORITHM_PEER_SCRATCH, plan::BufferType::Scratch}}) {
        if (!has(res, flag) || (!sameHost && !port)) continue;
        plan::RemoteBufferDecl d;
        d.rank = q;
        d.type = type;
        d.viaMemory = sameHost;
        d.viaPort = port;
        rp.remoteBuffers.push_back(d);
      }
    }
    std::vector<int> local;
    for (int q = 0; q < n; ++q)
      if (hostOf[q] == hostOf[r]) local.push_back(q);
    if (has(res, MSCCLPP_ALGORITHM_SWITCH_INPUT)) rp.switchChannels.push_back({plan::BufferType::Input, local});
    if (has(res, MSCCLPP_ALGORITHM_SWITCH_OUTPUT)) rp.switchChannels.push_back({plan::BufferType::Output, local});
    for (uint32_t b = 0; b < blocks; ++b) {
      plan::ThreadblockPlan tb;
      tb.id = static_cast<int>(b);
      rp.threadblocks.push_back(std::move(tb));
    }
    rp.numBarriers = 1;  // the kernel's grid barrier
    rp.hasOps = true;
    p->ranks.push_back(std::move(rp));
  }
  return p;
}

exec::NativeProgramPtr NativeAlgorithm::program(const std::vector<int32_t>& hostOf, bool inPlace, int root,
                                                Backend backend) const {
  const bool ip = inPlace && has(spec_.resources, MSCCLPP_ALGORITHM_RUNS_IN_PLACE);
  const int backendKey = backend == Backend::Cuda ? 1 : 0;
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(hostOf, ip, root, backendKey);
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;
  auto program = std::make_shared<exec::NativeProgram>();
  program->plan = makePlan(hostOf, ip, root, backend);
  program->kernel = spec_.kernel;
  program->hostOf = hostOf;
  // A handful of shapes per process; a program outlives the map through its contexts.
  if (programs_.size() >= 64) programs_.clear();
  programs_.emplace(std::move(key), program);
  return program;
}

std::vector<int32_t> hostIndexes(const std::vector<std::string>& hostIds) {
  std::vector<int32_t> out(hostIds.size(), 0);
  std::vector<std::string> seen;
  for (size_t r = 0; r < hostIds.size(); ++r) {
    auto it = std::find(seen.begin(), seen.end(), hostIds[r]);
    out[r] = static_cast<int32_t>(it - seen.begin());
    if (it == seen.end()) seen.push_back(hostIds[r]);
  }
  return out;
}

}  // namespace mscclpp::algo
