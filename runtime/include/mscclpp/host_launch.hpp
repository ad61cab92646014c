// launchKernel: one kernel body, written as __host__ __device__ code, on either backend. On a GPU
// it is a real <<<blocks, threadsPerBlock>>> launch from a file nvcc compiles; on the CPU backend
// each block runs on its own host thread, all at once, because grid barriers need every block.
// A host block is ONE thread: threadIndex() is 0, blockThreads() 1, syncBlockThreads() a no-op.
// A kernel is a trivially copyable functor with `MSCCLPP_HOST_DEVICE void operator()() const`
// that reads its place with blockIndex(), gridBlocks(), threadIndex() and blockThreads().
// launchKernel returns when the kernel completed and throws mscclpp::Error for a failed block.
// Thread-safety: several threads may launch at once; the position functions are valid only in
// a body launchKernel runs. Example and details: docs/cpp-api.md, "Writing a kernel".
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
  uint32_t threadsPerBlock = 1;  // GPU only: the CPU backend runs a block as one thread
  size_t sharedMemBytes = 0;     // GPU only: dynamic shared memory
  void* stream = nullptr;        // GPU only: a cudaStream_t, or null for a fresh stream per launch
};

namespace detail {

// Where the calling host thread is in the grid of the launch it runs, on the CPU backend.
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

// Runs kernel() once per block on `blocks` host threads, block 0 on the calling thread, and
// returns when all have finished. Rethrows the first exception a block threw; the other blocks
// still run to their end, bounded by their own deadlines.
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

// Launches kernel on `device`, made current on the calling thread, and waits for it; nvcc only.
// Without config.stream the launch gets a fresh non-blocking stream: ranks that are threads
// sharing a GPU must not queue behind each other on the legacy default stream, since each may
// wait for another's signal.
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

// Runs kernel on the backend of `device`: kHostDevice for the CPU backend, or a CUDA device
// ordinal, which needs this translation unit compiled by nvcc. Returns when the kernel has
// completed; failures are thrown as mscclpp::Error.
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
