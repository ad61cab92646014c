// Stream capture, CUDA graphs and user objects in the CUDA double; the rules
// followed are in docs/cuda-double.md, "What it implements". A captured
// stream records each operation, arguments copied, into the graph; an
// instantiated graph replays them in capture order on the launch stream.
// Global and ThreadLocal captures refuse "potentially unsafe" calls and are
// invalidated; Relaxed allows them. A user object's destructor runs on the
// double's callback thread once its count is zero and the graphs' launches
// completed, and must not call CUDA.
#ifndef CUDA_DOUBLE_GRAPHS_HPP_
#define CUDA_DOUBLE_GRAPHS_HPP_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <thread>

namespace cudadouble {

struct Capture {
  cudaGraph_t graph = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  uint64_t id = 0;
  bool invalidated = false;
};

// Appends captured work to the capture's graph (the stream's device mutex is held).
void captureAppend(Capture& capture, std::function<void()> work, bool kernel);

// Called by every "potentially unsafe" API call (device-synchronising ones):
// fails with cudaErrorStreamCaptureUnsupported, invalidating the capture, when
// a Global capture runs anywhere or a ThreadLocal one on this thread.
cudaError_t checkUnsafeDuringCapture(const char* what);

}  // namespace cudadouble

#endif  // CUDA_DOUBLE_GRAPHS_HPP_
