// Where mscclpp-perf's ranks keep their data: host memory (the CPU
// backend), or a GPU's when built with CUDA. A Buffers lays out one
// call's send and receive buffers, in place as nccl-tests does.
#ifndef MSCCLPP_TOOLS_PERF_PERF_BUFFERS_HPP_
#define MSCCLPP_TOOLS_PERF_PERF_BUFFERS_HPP_

#include <cstddef>
#include <string>
#include <vector>

#include "perf/perf_collectives.hpp"

namespace mscclpp::perf {

// A rank's device and stream: GPU rank % count, or none.
class Device {
 public:
  Device(bool gpu, int rank);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  bool gpu() const { return gpu_; }
  void* stream() const { return stream_; }
  void synchronize() const;
  void* allocate(size_t bytes) const;
  void release(void* p) const;
  void toDevice(void* dst, const void* src, size_t bytes) const;
  void toHost(void* dst, const void* src, size_t bytes) const;
  void poison(void* p, size_t bytes) const;

  static bool gpuVisible();
  static std::string whyNoGpu();

 private:
  bool gpu_;
  void* stream_ = nullptr;
};

class Buffers {
 public:
  // In place: allgather sends from the rank's slot of its receive buffer,
  // reducescatter receives into the rank's slot of its send buffer, and
  // the others send and receive in one buffer.
  Buffers(const Device& device, Coll coll, const Shape& shape, size_t elementBytes, bool inPlace, int rank);
  ~Buffers();
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  CallBuffers call() const { return {send_, recv_}; }
  // Writes the send image and poisons the rest of the receive buffer.
  void fillSend(const std::vector<char>& image);
  std::vector<char> readRecv() const;

 private:
  const Device& device_;
  size_t sendBytes_, recvBytes_;
  std::vector<void*> owned_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  bool inPlace_;
};

}  // namespace mscclpp::perf

#endif  // MSCCLPP_TOOLS_PERF_PERF_BUFFERS_HPP_
