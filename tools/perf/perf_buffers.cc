#include "perf/perf_buffers.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if PERF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp::perf {
namespace {

#if PERF_HAVE_CUDA
void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("# mscclpp-perf: %s failed: %s\n", what, cudaGetErrorString(e));
    std::fflush(stdout);
    std::_Exit(1);
  }
}
#endif

}  // namespace

bool Device::gpuVisible() {
#if PERF_HAVE_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#else
  return false;
#endif
}

std::string Device::whyNoGpu() {
#if PERF_HAVE_CUDA
  return "no CUDA device is visible";
#else
  return "this build has no CUDA (configured with -Dgpu=disabled or without a toolkit)";
#endif
}

Device::Device(bool gpu, int rank) : gpu_(gpu) {
#if PERF_HAVE_CUDA
  if (gpu_) {
    int n = 0;
    cudaCheck(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
    cudaCheck(cudaSetDevice(rank % n), "cudaSetDevice");
    cudaStream_t s = nullptr;
    cudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    stream_ = s;
  }
#else
  (void)rank;
#endif
}

Device::~Device() {
#if PERF_HAVE_CUDA
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
#endif
}

void Device::synchronize() const {
#if PERF_HAVE_CUDA
  if (gpu_) cudaCheck(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
#endif
}

void* Device::allocate(size_t bytes) const {
  bytes = bytes == 0 ? 1 : bytes;
#if PERF_HAVE_CUDA
  if (gpu_) {
    void* p = nullptr;
    cudaCheck(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
#endif
  void* p = std::malloc(bytes);
  if (p == nullptr) {
    std::printf("# mscclpp-perf: out of host memory for %zu bytes\n", bytes);
    std::fflush(stdout);
    std::_Exit(1);
  }
  return p;
}

void Device::release(void* p) const {
#if PERF_HAVE_CUDA
  if (gpu_) {
    cudaFree(p);
    return;
  }
#endif
  std::free(p);
}

void Device::toDevice(void* dst, const void* src, size_t bytes) const {
#if PERF_HAVE_CUDA
  // On the collectives' stream, then waited for: cudaMemcpy and cudaMemset go on the legacy
  // stream, which orders nothing against a non-blocking one, and return before a pageable
  // upload or a memset has landed.
  if (gpu_) {
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream_)),
              "cudaMemcpyAsync");
    return synchronize();
  }
#endif
  std::memcpy(dst, src, bytes);
}

void Device::toHost(void* dst, const void* src, size_t bytes) const {
#if PERF_HAVE_CUDA
  if (gpu_) {
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream_)),
              "cudaMemcpyAsync");
    return synchronize();
  }
#endif
  std::memcpy(dst, src, bytes);
}

void Device::poison(void* p, size_t bytes) const {
#if PERF_HAVE_CUDA
  if (gpu_) {
    cudaCheck(cudaMemsetAsync(p, 0xff, bytes, static_cast<cudaStream_t>(stream_)), "cudaMemsetAsync");
    return synchronize();
  }
#endif
  std::memset(p, 0xff, bytes);
}

Buffers::Buffers(const Device& device, Coll coll, const Shape& shape, size_t elementBytes, bool inPlace, int rank)
    : device_(device),
      sendBytes_(shape.sendCount * elementBytes),
      recvBytes_(shape.recvCount * elementBytes),
      inPlace_(inPlace) {
  if (!inPlace) {
    send_ = device_.allocate(sendBytes_);
    recv_ = device_.allocate(recvBytes_);
    owned_ = {send_, recv_};
    return;
  }
  const size_t slot = static_cast<size_t>(rank);
  if (coll == Coll::AllGather) {
    recv_ = device_.allocate(recvBytes_);
    send_ = static_cast<char*>(recv_) + slot * sendBytes_;
  } else if (coll == Coll::ReduceScatter) {
    send_ = device_.allocate(sendBytes_);
    recv_ = static_cast<char*>(send_) + slot * recvBytes_;
  } else {
    send_ = recv_ = device_.allocate(std::max(sendBytes_, recvBytes_));
  }
  owned_ = {coll == Coll::ReduceScatter ? send_ : recv_};
}

Buffers::~Buffers() {
  for (void* p : owned_) device_.release(p);
}

void Buffers::fillSend(const std::vector<char>& image) {
  // In place the send data lies inside the receive buffer (or holds it):
  // poison first, then write the data.
  if (!inPlace_ || recvBytes_ > sendBytes_) device_.poison(recv_, recvBytes_);
  device_.toDevice(send_, image.data(), image.size());
}

std::vector<char> Buffers::readRecv() const {
  std::vector<char> image(recvBytes_);
  device_.toHost(image.data(), recv_, recvBytes_);
  return image;
}

}  // namespace mscclpp::perf
