// Stream capture and CUDA graphs in the CUDA double (CUDA Programming Guide, "CUDA Graphs" and
// "Stream Capture"; Runtime API "Graph Management" and "Stream Management").
//
// A captured stream records each operation (its work, with its arguments copied as CUDA copies
// kernel parameters) into the graph instead of running it; an instantiated graph replays the
// operations in capture order on the launch stream. Capture modes follow
// cudaStreamBeginCapture: in Global mode (any thread) and ThreadLocal mode (the capturing thread)
// "potentially unsafe" calls -- the device-synchronising ones, and synchronising or querying the
// captured stream -- fail with cudaErrorStreamCaptureUnsupported and invalidate the capture;
// Relaxed mode allows them. Work on the legacy default stream while a blocking stream of its
// device is captured fails with cudaErrorStreamCaptureImplicit.
//
// User objects (cudaUserObjectCreate, cudaGraphRetainUserObject): reference counted; graphs and
// the executable graphs instantiated from them hold references; the destructor runs on the
// double's callback thread once the count reaches zero and the executable graphs' launches
// completed, and it must not call CUDA (such calls fail and count as misuses).
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
