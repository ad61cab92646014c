// Streams and hardware queues of the CUDA double. The semantics, and the
// CUDA documentation each follows, are in docs/cuda-double.md, "What it
// implements". Each device has CUDA_DEVICE_MAX_CONNECTIONS queues, each a
// worker thread that runs its operations one at a time, in order. Streams
// map to queues round-robin in creation order, the legacy default stream
// first. deviceSync is the device-wide wait that cudaDeviceSynchronize does
// explicitly; a PageTableChange (cudaMalloc, cudaFree, ...) does it holding
// the device's driver lock, which blocks other threads' calls on the device.
#ifndef CUDA_DOUBLE_STREAMS_HPP_
#define CUDA_DOUBLE_STREAMS_HPP_

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cudadouble {

// One piece of work on a hardware queue: a kernel, a copy, a memset, a value write, a free.
class Op {
 public:
  Op(int device, std::function<void()> work, std::vector<std::shared_ptr<Op>> after, bool kernel);
  // On the queue's worker: waits for the operations it depends on, then runs
  // (skipped once the device has a sticky error: the context is lost).
  void execute();
  void wait();
  bool waitFor(std::chrono::milliseconds timeout);  // false when still not done
  bool done();
  int device() const { return device_; }
  bool kernel() const { return kernel_; }
  std::thread::id launcher() const { return launcher_; }

 private:
  int device_;
  std::function<void()> work_;
  std::vector<std::shared_ptr<Op>> after_;
  bool kernel_;
  std::thread::id launcher_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
};
using OpPtr = std::shared_ptr<Op>;

struct Capture;  // graphs.hpp

}  // namespace cudadouble

// The object behind a cudaStream_t.
struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;
  int queue = 0;
  uint64_t id = 0;
  bool destroyed = false;
  cudadouble::OpPtr last;                        // the stream's newest operation (device mutex)
  std::shared_ptr<cudadouble::Capture> capture;  // non-null while the stream is being captured
};

namespace cudadouble {

// Resolves a stream argument: 0 and cudaStreamLegacy name the current device's
// legacy default stream, cudaStreamPerThread the calling thread's default
// stream, anything else a stream created here (a destroyed or unknown handle is
// a misuse: cudaErrorInvalidResourceHandle).
cudaError_t resolveStream(cudaStream_t stream, CUstream_st** out);

// Enqueues work on the stream in stream order (with the legacy default stream's
// implicit dependencies), or, while the stream is captured, appends it to the
// capture's graph. `out` receives the operation (null when captured).
cudaError_t enqueue(CUstream_st* stream, std::function<void()> work, bool kernel, OpPtr* out = nullptr);
// Enqueues without looking at capture (graph launches).
OpPtr submit(CUstream_st* stream, std::function<void()> work, bool kernel);

// The device-wide synchronisation of `what` on `device` (see the header
// comment). Refused (cudaErrorStreamCaptureUnsupported) while a capture forbids
// it, unless `duringCapture` (a kernel's lazy loading, which capture allows).
cudaError_t deviceSync(int device, const char* what, bool duringCapture = false);

// A page-table change: memory mapped or unmapped in the device's context. It
// takes the device's driver lock, then waits for all earlier work of the
// device, and keeps the lock until destroyed; meanwhile every other thread's
// call that reaches the device waits (awaitDriverLock). result() is the
// call's error (the capture refusal, a sticky error), cudaSuccess otherwise.
class PageTableChange {
 public:
  PageTableChange(int device, const char* what);
  ~PageTableChange();
  PageTableChange(const PageTableChange&) = delete;
  PageTableChange& operator=(const PageTableChange&) = delete;
  cudaError_t result() const { return result_; }

 private:
  int device_;
  bool held_ = false;
  cudaError_t result_ = cudaSuccess;
};

// Waits while another thread holds the device's driver lock; `what` names the
// waiting call in the diagnosis printed every second.
void awaitDriverLock(int device, const char* what);

// Waits until everything issued on the stream so far has run.
void streamWait(CUstream_st* stream);

// Kernels running now, for the adversarial scheduling option.
void kernelStarted(int device, std::thread::id launcher);
void kernelFinished(int device, std::thread::id launcher);

// Streams of the device that synchronise with the legacy default stream (graphs.cc checks them).
std::vector<CUstream_st*> blockingStreams(int device);

// The stream's capture, read and replaced under its device's lock.
std::shared_ptr<Capture> captureOf(CUstream_st* stream);
void setCapture(CUstream_st* stream, std::shared_ptr<Capture> capture);

}  // namespace cudadouble

#endif  // CUDA_DOUBLE_STREAMS_HPP_
