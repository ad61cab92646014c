// Events of the CUDA double: cudaEventCreate[WithFlags], cudaEventRecord,
// cudaEventQuery, cudaEventSynchronize, cudaEventElapsedTime and
// cudaEventDestroy (Runtime API "Event Management"). A record is an operation
// in stream order that takes the host clock when the stream reaches it; the
// elapsed time between two completed records is the difference, in ms.
// Recording into a captured stream is not modelled (docs/cuda-double.md).
#include <chrono>
#include <memory>
#include <mutex>
#include <set>

#include "core.hpp"
#include "cuda_double.h"
#include "streams.hpp"

namespace cudadouble {
namespace {

struct Stamp {
  std::chrono::steady_clock::time_point at;
};

struct Events {
  std::mutex m;
  std::set<const void*> live;
};

Events& events() {
  static Events* e = new Events();
  return *e;
}

}  // namespace
}  // namespace cudadouble

// The object behind a cudaEvent_t.
struct CUevent_st {
  int device = 0;
  bool timing = true;
  cudadouble::OpPtr record;               // the newest record's operation (null: never recorded)
  std::shared_ptr<cudadouble::Stamp> at;  // written when that operation runs
};

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

namespace {

// The event behind a handle, or null after a misuse report (a destroyed or unknown handle).
CUevent_st* eventOf(cudaEvent_t e, const char* what) {
  Events& ev = events();
  std::lock_guard<std::mutex> lock(ev.m);
  if (e == nullptr || ev.live.count(e) == 0) {
    misuse("%s of an event that is not live", what);
    return nullptr;
  }
  return e;
}

}  // namespace

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  CD_ENTER();
  if (event == nullptr || (flags & ~(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess)) != 0)
    return fail(cudaErrorInvalidValue);
  if (flags & cudaEventInterprocess) return fail(cudaErrorNotSupported);
  auto* e = new CUevent_st();
  e->device = currentDevice();
  e->timing = (flags & cudaEventDisableTiming) == 0;
  Events& ev = events();
  std::lock_guard<std::mutex> lock(ev.m);
  ev.live.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  CD_TALLY();
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  CD_ENTER();
  CUevent_st* e = eventOf(event, "cudaEventRecord");
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = nullptr;
  if (cudaError_t r = resolveStream(stream, &s); r != cudaSuccess) return r;
  if (s->device != e->device) return fail(cudaErrorInvalidResourceHandle);
  if (captureOf(s) != nullptr) {
    misuse("cudaEventRecord into a stream being captured (event nodes are not modelled)");
    return fail(cudaErrorNotSupported);
  }
  auto at = std::make_shared<Stamp>();
  OpPtr op;
  if (cudaError_t r = enqueue(
          s, [at] { at->at = std::chrono::steady_clock::now(); }, false, &op);
      r != cudaSuccess)
    return r;
  e->record = op;
  e->at = at;
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  CD_ENTER();
  CUevent_st* e = eventOf(event, "cudaEventQuery");
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  // An event never recorded has completed (Runtime API cudaEventQuery).
  return e->record && !e->record->done() ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  CD_ENTER();
  CUevent_st* e = eventOf(event, "cudaEventSynchronize");
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (e->record) e->record->wait();
  const cudaError_t sticky = stickyOf(e->device);
  return sticky != cudaSuccess ? fail(sticky) : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  CD_ENTER();
  CUevent_st* a = eventOf(start, "cudaEventElapsedTime");
  CUevent_st* b = eventOf(end, "cudaEventElapsedTime");
  if (ms == nullptr || a == nullptr || b == nullptr) return fail(cudaErrorInvalidValue);
  if (!a->timing || !b->timing || !a->record || !b->record) return fail(cudaErrorInvalidResourceHandle);
  if (!a->record->done() || !b->record->done()) return fail(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(b->at->at - a->at->at).count();
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  CD_ENTER();
  Events& ev = events();
  {
    std::lock_guard<std::mutex> lock(ev.m);
    if (event == nullptr || ev.live.erase(event) == 0) {
      misuse("cudaEventDestroy of an event that is not live");
      return fail(cudaErrorInvalidResourceHandle);
    }
  }
  // A pending record keeps its own stamp, so the event can go now.
  delete event;
  return cudaSuccess;
}

}  // extern "C"
