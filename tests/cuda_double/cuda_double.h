// The CUDA device double's own interface (docs/cuda-double.md): what the double needs from the
// outside (host bodies for device kernels) and what tests may ask it (misuse counts, faults, live
// allocations, the adversarial scheduling knob). Everything else the double offers is the CUDA
// runtime API itself (as the toolkit's runtime header declares it), under libcudart's soname, so
// the production library runs against it unchanged.
//
// Thread-safety: every function may be called from any thread.
#ifndef CUDA_DOUBLE_CUDA_DOUBLE_H_
#define CUDA_DOUBLE_CUDA_DOUBLE_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cudadouble {

// One block of a kernel, run on a host thread: args are the launch's argument
// values (copied at launch, as CUDA copies kernel parameters), in declaration
// order.
using HostBlockFn = void (*)(void* const* args, dim3 grid, dim3 block, unsigned blockIndex, size_t dynamicShared,
                             const void* user);

struct HostKernel {
  HostBlockFn body = nullptr;
  const void* user = nullptr;     // passed to body (e.g. which dtype and op)
  std::vector<size_t> argSizes;   // bytes of each parameter
  int maxThreadsPerBlock = 1024;  // __launch_bounds__
  int numRegs = 32;               // registers per thread (occupancy)
  size_t staticSharedBytes = 0;   // the kernel's own __shared__ variables
};

// Registers the host body of the device kernel whose demangled name, without
// return type and parameter list, is `name` (e.g.
// "mscclpp::exec::executorKernel<float, mscclpp::exec::OpSum>"). Device kernels
// are matched by the names nvcc registers (__cudaRegisterFunction); a launch of
// a kernel with no host body fails with cudaErrorInvalidDeviceFunction and is
// counted as a misuse.
void registerHostKernel(const std::string& name, const HostKernel& kernel);

// What tests can observe.
struct Stats {
  uint64_t misuses = 0;  // API uses CUDA leaves undefined (destroyed handles, ...), each reported on stderr
  std::string lastMisuse;
  uint64_t faults = 0;  // kernel or copy accesses to unmapped (freed) device memory
  std::string lastFault;
  uint64_t liveAllocations =
      0;  // device and host allocations, mappings and cuMem handles not yet freed (IPC imports not counted)
  uint64_t liveBytes = 0;
  uint64_t deviceSyncs = 0;  // device-wide synchronisations (explicit and implicit)
  uint64_t kernelsLaunched = 0;
  uint64_t cooperativeLaunches = 0;  // of kernelsLaunched, through cudaLaunchCooperativeKernel
  uint64_t multicastBinds = 0;       // successful cuMulticastBindMem calls
  uint64_t streamsCreated = 0;
  uint64_t pageTableChanges = 0;  // cudaMalloc, cudaFree, cudaHostAlloc, cudaFreeHost, cudaIpcCloseMemHandle
  uint64_t kernelLoads = 0;       // kernels loaded on a device (lazy loading), by any use
  uint64_t loadsAtLaunch = 0;     // of those, loaded by their first launch rather than a query before it
};
Stats stats();

// Adversarial scheduling (also CUDA_DOUBLE_ADVERSARIAL_SYNC_MS): every
// device-synchronising call first waits up to `ms` for a kernel launched by
// another host thread to be running on the device, so a synchronisation that a
// concurrently launched kernel could deadlock deadlocks every time.
void setAdversarialSync(int ms);

// Adversarial ordering of the legacy default stream (also
// CUDA_DOUBLE_ADVERSARIAL_LEGACY_MS): every operation on it starts `ms` late,
// so work on non-blocking streams that it does not order overtakes it.
void setAdversarialLegacy(int ms);

// The hardware queue a stream was mapped to (streams share CUDA_DEVICE_MAX_CONNECTIONS queues).
int queueOf(cudaStream_t stream);

// True in this library: lets a test check it runs against the double, not a real libcudart.
bool active();

}  // namespace cudadouble

// The calling thread's CUDA API calls, as a benchmark reads them to tell the
// double's time from its own. C names, so a program built against the real
// libcudart finds them with dlsym only when the double is loaded. A call made
// inside another (a forwarding entry point) counts once, as the outer one.
extern "C" {
#define CUDADOUBLE_TALLY_NAMES 64
struct cudadouble_tally {
  uint64_t ns;     // time inside the calls
  uint64_t calls;  // outermost calls
  int names;       // entries below; the last one is "(other)" once the table is full
  const char* name[CUDADOUBLE_TALLY_NAMES];
  uint64_t count[CUDADOUBLE_TALLY_NAMES];
};
// Copies the tally into *out (when not null); resets it when `reset` is not 0.
void cudadouble_api_tally(cudadouble_tally* out, int reset);
// 1 while the calling thread is inside an API call of the double.
int cudadouble_inside_api(void);
}

#endif  // CUDA_DOUBLE_CUDA_DOUBLE_H_
