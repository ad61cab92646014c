// The built-in native algorithms, in the order the default selection tries
// them (docs/algorithms.md, "Built-in algorithms"): for an allreduce, NVLS
// where the buffers allow it, LL packets up to kPacketsMaxBytes, the
// read-reduce one on one host, the two-level one across hosts.
#include "algorithm/algorithm_registry.hpp"
#include "algorithm/builtin/allreduce_kernels.hpp"
#include "algorithm/builtin/builtin_entries.hpp"

namespace mscclpp::algo {
namespace {

// The largest allreduce the one-shot LL algorithm takes by default: above
// it every rank would write (ranks - 1) packet copies of a large message.
// Not yet tuned on a GPU (docs/algorithms.md).
constexpr uint64_t kPacketsMaxBytes = 256 * 1024;

const char* const kStepNames[] = {"enter: barrier with the peers", "exchange", "reduce",
                                  "leave: barrier with the peers", "across hosts"};

struct Builtin {
  const char* name;
  const char* collective;
  BuiltinKernel kernel;
  uint32_t resources;
  uint32_t scratchParts;
  uint64_t maxBytes;
  uint32_t blocks;
  uint32_t threads;
};

constexpr uint32_t kMem = MSCCLPP_ALGORITHM_MEMORY_CHANNELS;
constexpr uint32_t kOneHost = MSCCLPP_ALGORITHM_ONE_HOST;
constexpr uint32_t kInPlace = MSCCLPP_ALGORITHM_RUNS_IN_PLACE;
constexpr uint32_t kReduces = MSCCLPP_ALGORITHM_REDUCES;

const Builtin kBuiltins[] = {
    {"allreduce_nvls", "allreduce", BuiltinKernel::AllreduceSwitch,
     kMem | MSCCLPP_ALGORITHM_SWITCH_INPUT | MSCCLPP_ALGORITHM_SWITCH_OUTPUT | MSCCLPP_ALGORITHM_MULTICAST | kOneHost |
         kInPlace | kReduces,
     0, UINT64_MAX, 16, 512},
    {"allreduce_packets", "allreduce", BuiltinKernel::AllreducePackets,
     MSCCLPP_ALGORITHM_PEER_SCRATCH | MSCCLPP_ALGORITHM_PACKETS | MSCCLPP_ALGORITHM_DOUBLE_SCRATCH |
         MSCCLPP_ALGORITHM_SCRATCH_PER_RANK | kOneHost | kInPlace | kReduces,
     1, kPacketsMaxBytes, 4, 512},
    {"allreduce_read_reduce", "allreduce", BuiltinKernel::AllreduceReadReduce,
     kMem | MSCCLPP_ALGORITHM_PEER_INPUT | MSCCLPP_ALGORITHM_PEER_OUTPUT | kOneHost | kInPlace | kReduces, 0,
     UINT64_MAX, 16, 512},
    {"allreduce_two_level", "allreduce", BuiltinKernel::AllreduceTwoLevel,
     kMem | MSCCLPP_ALGORITHM_PORT_CHANNELS_ACROSS | MSCCLPP_ALGORITHM_PEER_INPUT | MSCCLPP_ALGORITHM_PEER_OUTPUT |
         MSCCLPP_ALGORITHM_PEER_SCRATCH | MSCCLPP_ALGORITHM_DOUBLE_SCRATCH | MSCCLPP_ALGORITHM_SCRATCH_PER_RANK |
         MSCCLPP_ALGORITHM_UNIFORM_HOSTS | kInPlace | kReduces,
     1, UINT64_MAX, 16, 512},
    {"allgather_mesh", "allgather", BuiltinKernel::AllgatherMesh,
     kMem | MSCCLPP_ALGORITHM_PEER_OUTPUT | kOneHost | kInPlace, 0, UINT64_MAX, 16, 512},
    {"reducescatter_mesh", "reducescatter", BuiltinKernel::ReduceScatterMesh,
     kMem | MSCCLPP_ALGORITHM_PEER_INPUT | kOneHost | kInPlace | kReduces, 0, UINT64_MAX, 16, 512},
    {"broadcast_copy", "broadcast", BuiltinKernel::BroadcastCopy,
     kMem | MSCCLPP_ALGORITHM_PEER_INPUT | kOneHost | kInPlace, 0, UINT64_MAX, 16, 512},
    {"alltoall_mesh", "alltoall", BuiltinKernel::AlltoallMesh, kMem | MSCCLPP_ALGORITHM_PEER_OUTPUT | kOneHost, 0,
     UINT64_MAX, 16, 512},
};

}  // namespace

std::vector<NativeSpec> builtinSpecs() {
  std::vector<NativeSpec> out;
  for (const Builtin& b : kBuiltins) {
    const BuiltinGpuEntry gpu = builtinGpuEntry(b.kernel);
    mscclppAlgorithmDesc d{};
    d.version = MSCCLPP_ALGORITHM_API_VERSION;
    d.name = b.name;
    d.collective = b.collective;
    d.minMessageBytes = 0;
    d.maxMessageBytes = b.maxBytes;
    d.bufferMode = MSCCLPP_ALGORITHM_ANY_BUFFERS;
    d.resources = b.resources;
    d.scratchParts = b.scratchParts;
    d.blocks = b.blocks;
    // The CPU backend runs a block per host thread: two, so the grid barrier is exercised.
    d.hostBlocks = 2;
    d.threadsPerBlock = b.threads;
    d.gpuDtypes = gpu.dtypes;
    d.stepNames = kStepNames;
    d.nSteps = static_cast<int>(sizeof(kStepNames) / sizeof(kStepNames[0]));
    d.hostBlock = builtinHostBlock(b.kernel);
    d.gpuLaunch = gpu.launch;
    d.gpuQuery = gpu.query;
    out.push_back(specOf(d, true));
  }
  return out;
}

}  // namespace mscclpp::algo
