/* The C API of native algorithms (docs/algorithms.md): collective kernels written on the channel
 * API that the NCCL shim runs when no DSL plan fits a call, before it falls back to the real NCCL.
 * The runtime builds each algorithm's context (a channel to every peer, the peers' buffers, scratch)
 * from the resources it declares, caches it per call shape, and launches its kernel. Registration
 * goes through these C functions so that a library of kernels reaches whichever runtime the process
 * runs: libmscclpp.so, or the preloaded NCCL shim with its own copy. The C++ helpers are in
 * mscclpp/algorithm.hpp. Any function from any thread; status as in status.h. */
#ifndef MSCCLPP_ALGORITHM_API_H_
#define MSCCLPP_ALGORITHM_API_H_

#include <stddef.h>
#include <stdint.h>

#include "mscclpp/export.h"
#include "mscclpp/plan_api.h"
#include "mscclpp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSCCLPP_ALGORITHM_API_VERSION 1

/* What a kernel needs besides its own buffers; the runtime builds them for every communicator. */
enum {
  MSCCLPP_ALGORITHM_MEMORY_CHANNELS = 1 << 0, /* a memory channel to every peer on this host */
  MSCCLPP_ALGORITHM_PORT_CHANNELS = 1 << 1,   /* a port channel to every peer */
  MSCCLPP_ALGORITHM_PORT_CHANNELS_ACROSS = 1
                                           << 2, /* a port channel to the rank of our local index on each other host */
  MSCCLPP_ALGORITHM_PEER_INPUT = 1 << 3,       /* every peer's input: mapped on this host, by port channels elsewhere */
  MSCCLPP_ALGORITHM_PEER_OUTPUT = 1 << 4,      /* every peer's output, alike */
  MSCCLPP_ALGORITHM_PEER_SCRATCH = 1 << 5,     /* every peer's scratch, alike */
  MSCCLPP_ALGORITHM_SWITCH_INPUT = 1 << 6,     /* a switch channel over the inputs of this host's ranks */
  MSCCLPP_ALGORITHM_SWITCH_OUTPUT = 1 << 7,    /* a switch channel over their outputs */
  MSCCLPP_ALGORITHM_PACKETS = 1 << 8,          /* scratch holds LL16 packets: twice the data; calls padded to 8 bytes */
  MSCCLPP_ALGORITHM_DOUBLE_SCRATCH = 1 << 9,   /* two scratch halves, one per launch in turn */
  MSCCLPP_ALGORITHM_RUNS_IN_PLACE = 1 << 10,   /* the kernel is correct on an in-place call; else it is staged */
  MSCCLPP_ALGORITHM_ONE_HOST = 1 << 11,        /* every rank on one host (refused otherwise) */
  MSCCLPP_ALGORITHM_UNIFORM_HOSTS = 1 << 12,   /* every host has as many ranks */
  MSCCLPP_ALGORITHM_MULTICAST = 1 << 13,       /* needs NVLS multicast of the call's buffers (a GPU with NVSwitch) */
  MSCCLPP_ALGORITHM_REDUCES = 1 << 14,         /* the kernel applies the launch's reduce op */
  MSCCLPP_ALGORITHM_SCRATCH_PER_RANK = 1 << 15 /* scratchParts counts per rank: scratchParts x ranks parts */
};

/* Which calls an algorithm serves. */
enum {
  MSCCLPP_ALGORITHM_ANY_BUFFERS = 0,
  MSCCLPP_ALGORITHM_IN_PLACE_ONLY = 1,
  MSCCLPP_ALGORITHM_OUT_OF_PLACE_ONLY = 2
};

/* The entry points (mscclpp/algorithm_device.hpp makes them from one kernel source):
 * hostBlock runs block `block` on the calling host thread (CPU backend); gpuLaunch enqueues the
 * kernel on a cudaStream_t and gpuQuery tells its limits on the current device, both returning a
 * cudaError_t value. context and args point to an AlgorithmDeviceContext and AlgorithmLaunchArgs. */
typedef void (*mscclppAlgorithmHostBlockFn)(const void* context, const void* args, uint32_t block);
typedef int (*mscclppAlgorithmGpuLaunchFn)(const void* deviceContext, const void* args, uint32_t nBlocks,
                                           uint32_t threadsPerBlock, void* stream);
typedef int (*mscclppAlgorithmGpuQueryFn)(int dtype, int threadsPerBlock, int* maxThreadsPerBlock, int* blocksPerSm);

/* A native algorithm. The registry copies everything but the functions, which must stay loaded. */
typedef struct mscclppAlgorithmDesc {
  int version; /* MSCCLPP_ALGORITHM_API_VERSION */
  const char* name;
  const char* collective;   /* "allreduce", "allgather", "reducescatter", "broadcast", "alltoall" */
  uint64_t minMessageBytes; /* as plans state it: allgather's output, else the input */
  uint64_t maxMessageBytes;
  int bufferMode;    /* MSCCLPP_ALGORITHM_ANY_BUFFERS, ... */
  int worldSize;     /* 0: any number of ranks, at least 2 */
  int nRanksPerNode; /* 0: any */
  const char* const* tags;
  int nTags;
  uint32_t resources;    /* MSCCLPP_ALGORITHM_* flags */
  uint32_t scratchParts; /* scratch: this many parts of the call (allgather: the send size; reducescatter: the
                            receive size; alltoall: one peer's part; else the input), doubled as flags say */
  uint32_t blocks;       /* blocks per rank on a GPU */
  uint32_t hostBlocks;   /* blocks per rank on the CPU backend (host threads); 0: as blocks */
  uint32_t threadsPerBlock;
  uint32_t gpuDtypes;           /* bit DataType: the types gpuLaunch has code for */
  const char* const* stepNames; /* what AlgorithmBlock::step(i) means, for diagnostics */
  int nSteps;
  mscclppAlgorithmHostBlockFn hostBlock;
  mscclppAlgorithmGpuLaunchFn gpuLaunch; /* NULL: no GPU code */
  mscclppAlgorithmGpuQueryFn gpuQuery;
} mscclppAlgorithmDesc;

/* A registered algorithm, DSL plan or native, as a selector sees it. */
typedef struct mscclppAlgorithmInfo {
  const char* name;
  const char* kind; /* "plan" or "native" */
  const char* collective;
  uint64_t minMessageBytes;
  uint64_t maxMessageBytes;
  int bufferMode;
  int worldSize;
  int nRanksPerNode;
  const char* const* tags;
  int nTags;
  int builtin; /* 1 for the runtime's own native algorithms */
} mscclppAlgorithmInfo;

/* The algorithm selector: gets the algorithms that can serve the request, in the default order
 * (the DSL plan the plan registry chose, then native algorithms: registered ones first, then the
 * built-in ones) and returns the index of the one to run, -1 for none (the real NCCL runs the
 * call) or -2 for the default, the first. Every rank must answer alike for the same request. */
typedef int (*mscclppAlgorithmSelectorFn)(const mscclppAlgorithmInfo* candidates, int nCandidates,
                                          const mscclppPlanRequest* request, void* userData);

/* Registers a native algorithm ahead of those registered before and of the built-in ones. Fails
 * with mscclppAlreadyExists for a name taken, mscclppInvalidArgument for a bad description. */
MSCCLPP_API int mscclppAlgorithmRegister(const mscclppAlgorithmDesc* desc, char* errBuf, size_t errLen);
/* Removes a registered native algorithm (not a built-in one); contexts built from it stay valid. */
MSCCLPP_API int mscclppAlgorithmUnregister(const char* name, char* errBuf, size_t errLen);
/* Installs the selector, or removes it when fn is NULL. */
MSCCLPP_API int mscclppAlgorithmSetSelector(mscclppAlgorithmSelectorFn fn, void* userData);
/* The native algorithms, registered ones first; the strings stay valid until unregistered. */
MSCCLPP_API int mscclppAlgorithmCount(void);
MSCCLPP_API int mscclppAlgorithmGetInfo(int i, mscclppAlgorithmInfo* info);
/* The whole choice the NCCL shim makes for request on one rank, every rank on one host unless
 * request->nRanksPerNode says otherwise: writes the algorithm's name and kind ("plan", "native" or
 * "" for none) and the reason. Returns 1 when one was chosen, 0 when the real NCCL would run. */
MSCCLPP_API int mscclppAlgorithmSelect(const mscclppPlanRequest* request, char* nameBuf, size_t nameLen, char* kindBuf,
                                       size_t kindLen, char* reasonBuf, size_t reasonLen);
MSCCLPP_API int mscclppAlgorithmApiVersion(void);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_ALGORITHM_API_H_ */
