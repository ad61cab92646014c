// Launching a kernel body written once, as __host__ __device__ code, on either backend:
//  * a GPU (device >= 0): a real <<<blocks, threadsPerBlock>>> launch. Only a translation unit
//    compiled by nvcc can do it (the launch is instantiated there).
//  * the CPU backend (device == kHostDevice, -1): the body runs once per block, each block on its
//    own host thread, all blocks at the same time (grid barriers such as DeviceSyncer need every
//    block running). A block is ONE host thread, as in the executor's CPU backend: threadIndex()
//    is 0 and blockThreads() is 1 whatever threadsPerBlock says, syncBlockThreads() is a no-op, and
//    cooperative copies (put/get/putPackets with threadId/numThreads) do the whole range alone.
//
// A kernel is a trivially copyable functor (it is copied by value into the launch, like kernel
// arguments) with `MSCCLPP_HOST_DEVICE void operator()() const`. It reads its position with
// blockIndex() / gridBlocks() / threadIndex() / blockThreads() instead of CUDA's blockIdx / gridDim
// / threadIdx / blockDim, which do not exist on the host:
//
//   struct PutKernel {
//     mscclpp::MemoryChannelDeviceHandle* chans;   // device memory on a GPU, host memory on the CPU
//     MSCCLPP_HOST_DEVICE void operator()() const {
//       chans[0].put(0, 0, 1024, mscclpp::threadIndex(), mscclpp::blockThreads());
//       mscclpp::syncBlockThreads();
//       if (mscclpp::threadIndex() == 0) chans[0].signal();
//     }
//   };
//   mscclpp::launchKernel(comm.device(), PutKernel{chans}, {/*blocks=*/1, /*threadsPerBlock=*/256});
//
// launchKernel returns when the kernel has completed, on both backends, and reports a failure of
// the kernel as mscclpp::Error: on the host the first exception a block threw (a wait() that
// passed its deadline throws Timeout), on a GPU the CUDA error of the launch or of the kernel (a
// wait() that passed its deadline traps, which CUDA reports as a launch failure).
//
// Thread-safety: launchKernel may be called from several threads at once (e.g. one per rank when
// ranks are threads); each launch has its own block threads. The position functions read
// thread-local state on the host, so they are valid only inside a kernel body run by launchKernel
// (elsewhere they describe a grid of one block of one thread).
#ifndef MSCCLPP_HOST_LAUNCH_HPP_
#define MSCCLPP_HOST_LAUNCH_HPP_

#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "mscclpp/device.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp {

// The most blocks one CPU-backend launch runs: each is a host thread, all alive at once.
constexpr uint32_t kMaxHostLaunchBlocks = 1024;

struct LaunchConfig {
  uint32_t blocks = 1;
  uint32_t threadsPerBlock = 1;  // GPU only (the CPU backend runs a block as one thread)
  size_t sharedMemBytes = 0;     // GPU only: dynamic shared memory
  void* stream = nullptr;        // GPU only: a cudaStream_t (nullptr: a non-blocking stream per launch)
};

namespace detail {

// Where the calling host thread is in the grid of the launch it runs (CPU backend).
struct HostGridPosition {
  uint32_t block = 0;
  uint32_t blocks = 1;
};

inline HostGridPosition& hostGridPosition() {
  static thread_local HostGridPosition position;
  return position;
}

}  // namespace detail

// ---- Position in the grid (CUDA's blockIdx.x, gridDim.x, threadIdx.x, blockDim.x) --------------
MSCCLPP_HOST_DEVICE_INLINE uint32_t blockIndex() {
#if defined(MSCCLPP_DEVICE_COMPILE)
  return blockIdx.x;
#else
  return detail::hostGridPosition().block;
#endif
}

MSCCLPP_HOST_DEVICE_INLINE uint32_t gridBlocks() {
#if defined(MSCCLPP_DEVICE_COMPILE)
  return gridDim.x;
#else
  return detail::hostGridPosition().blocks;
#endif
}

MSCCLPP_HOST_DEVICE_INLINE uint32_t threadIndex() {
#if defined(MSCCLPP_DEVICE_COMPILE)
  return threadIdx.x;
#else
  return 0;
#endif
}

MSCCLPP_HOST_DEVICE_INLINE uint32_t blockThreads() {
#if defined(MSCCLPP_DEVICE_COMPILE)
  return blockDim.x;
#else
  return 1;
#endif
}

// Runs kernel() once per block on `blocks` host threads (block 0 on the calling thread) and
// returns when all have finished. Rethrows the first exception a block threw (in time order);
// the other blocks still run to their end (their waits are bounded by their own deadlines).
template <class Kernel>
void launchOnHost(const Kernel& kernel, uint32_t blocks) {
  static_assert(std::is_trivially_copyable<Kernel>::value,
                "a kernel functor is copied to the device by value: it must be trivially copyable");
  if (blocks == 0 || blocks > kMaxHostLaunchBlocks) {
    throw Error(ErrorCode::InvalidArgument, "launchKernel: " + std::to_string(blocks) +
                                                " blocks requested; the CPU backend runs 1.." +
                                                std::to_string(kMaxHostLaunchBlocks) + " blocks per launch");
  }
  std::mutex mutex;
  std::exception_ptr first;
  auto runBlock = [&](uint32_t block) {
    detail::HostGridPosition saved = detail::hostGridPosition();
    detail::hostGridPosition() = detail::HostGridPosition{block, blocks};
    try {
      Kernel copy = kernel;  // each block gets its own copy, like kernel arguments
      copy();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!first) first = std::current_exception();
    }
    detail::hostGridPosition() = saved;
  };
  std::vector<std::thread> threads;
  threads.reserve(blocks - 1);
  std::string startError;
  for (uint32_t b = 1; b < blocks; ++b) {
    try {
      threads.emplace_back(runBlock, b);
    } catch (const std::system_error& e) {
      // The blocks already started may wait for the missing ones: they end at their deadlines.
      startError = "launchKernel: could not start the host thread of block " + std::to_string(b) + " of " +
                   std::to_string(blocks) + ": " + e.what();
      break;
    }
  }
  if (startError.empty()) runBlock(0);
  for (auto& t : threads) t.join();
  if (!startError.empty()) throw Error(ErrorCode::SystemError, startError);
  if (first) std::rethrow_exception(first);
}

#if defined(__CUDACC__)
namespace detail {
template <class Kernel>
__global__ void launchEntry(Kernel kernel) {
  kernel();
}

inline void throwIfCudaError(cudaError_t err, const char* what, int device) {
  if (err != cudaSuccess) {
    throw Error(ErrorCode::CudaError, std::string("launchKernel on device ") + std::to_string(device) + ": " + what +
                                          ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
  }
}
}  // namespace detail

// Launches kernel on `device` (made current on the calling thread) and waits for it. Available
// in translation units compiled by nvcc. Without config.stream the launch gets a fresh
// non-blocking stream: kernels of ranks that are threads of one process, sharing a GPU, must not
// queue behind each other (or behind another thread's cudaMemcpy) on the legacy default stream,
// since each may wait for another's signal.
template <class Kernel>
void launchOnDevice(int device, const Kernel& kernel, const LaunchConfig& config) {
  static_assert(std::is_trivially_copyable<Kernel>::value,
                "a kernel functor is copied to the device by value: it must be trivially copyable");
  detail::throwIfCudaError(cudaSetDevice(device), "cudaSetDevice", device);
  cudaStream_t stream = static_cast<cudaStream_t>(config.stream);
  bool ownStream = stream == nullptr;
  if (ownStream) {
    detail::throwIfCudaError(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate", device);
  }
  detail::launchEntry<Kernel><<<config.blocks, config.threadsPerBlock, config.sharedMemBytes, stream>>>(kernel);
  cudaError_t launched = cudaGetLastError();
  cudaError_t finished = launched == cudaSuccess ? cudaStreamSynchronize(stream) : cudaSuccess;
  if (ownStream) (void)cudaStreamDestroy(stream);
  detail::throwIfCudaError(launched, "the launch failed", device);
  detail::throwIfCudaError(finished, "the kernel failed", device);
}
#endif

// Runs kernel on the backend of `device`: kHostDevice (-1) for the CPU backend (launchOnHost),
// a CUDA device ordinal for a GPU (launchOnDevice; needs this translation unit compiled by nvcc).
// Returns when the kernel has completed; failures are thrown as mscclpp::Error.
template <class Kernel>
void launchKernel(int device, const Kernel& kernel, const LaunchConfig& config = LaunchConfig{}) {
  if (device == -1) {
    launchOnHost(kernel, config.blocks);
    return;
  }
  if (device < 0) {
    throw Error(ErrorCode::InvalidArgument,
                "launchKernel: device " + std::to_string(device) +
                    " is neither a CUDA device ordinal nor kHostDevice (-1); pass Communicator::device()");
  }
#if defined(__CUDACC__)
  launchOnDevice(device, kernel, config);
#else
  throw Error(ErrorCode::NotSupported,
              "launchKernel: CUDA device " + std::to_string(device) +
                  " requested from a translation unit not compiled by nvcc: compile the file that launches the "
                  "kernel with nvcc, or run on the CPU backend (device -1, MSCCLPP_BACKEND=cpu)");
#endif
}

}  // namespace mscclpp

#endif  // MSCCLPP_HOST_LAUNCH_HPP_
