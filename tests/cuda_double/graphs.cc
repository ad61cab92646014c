// Stream capture, CUDA graphs and user objects in the CUDA double (see graphs.hpp).
#include "graphs.hpp"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "core.hpp"
#include "streams.hpp"

namespace cudadouble {
namespace {

struct Node {
  std::function<void()> work;
  bool kernel = false;
};

}  // namespace
}  // namespace cudadouble

struct CUuserObject_st {
  void* ptr = nullptr;
  cudaHostFn_t destroy = nullptr;
  unsigned refs = 0;  // graphs mutex
};

struct CUgraph_st {
  std::vector<cudadouble::Node> nodes;
  std::map<CUuserObject_st*, unsigned> userObjects;
};

struct CUgraphExec_st {
  std::vector<cudadouble::Node> nodes;
  std::vector<CUuserObject_st*> userObjects;  // one reference each
  std::vector<cudadouble::OpPtr> launches;    // the last operation of each launch not yet known complete
};

namespace cudadouble {
namespace {

struct Graphs {
  std::mutex m;
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphExec_st*> execs;
  std::set<CUuserObject_st*> objects;
  std::vector<std::pair<CUstream_st*, std::shared_ptr<Capture>>> captures;
  uint64_t nextCaptureId = 1;
  // Destructors of user objects, run on the callback thread after the operations they wait for.
  std::deque<std::pair<std::vector<OpPtr>, CUuserObject_st*>> destructions;
  std::condition_variable cv;
};

void callbackLoop();

Graphs& graphs() {
  static Graphs* g = [] {
    auto* p = new Graphs();
    std::thread(callbackLoop).detach();
    return p;
  }();
  return *g;
}

void callbackLoop() {
  markCallbackThread();
  Graphs& g = graphs();
  std::unique_lock<std::mutex> lock(g.m);
  for (;;) {
    g.cv.wait(lock, [&] { return !g.destructions.empty(); });
    auto [ops, obj] = std::move(g.destructions.front());
    g.destructions.pop_front();
    lock.unlock();
    for (const OpPtr& op : ops) op->wait();
    obj->destroy(obj->ptr);
    lock.lock();
    g.objects.erase(obj);
    delete obj;
  }
}

// Drops `count` references (graphs mutex held); the last one schedules the destructor after `ops`.
cudaError_t releaseLocked(Graphs& g, CUuserObject_st* obj, unsigned count, std::vector<OpPtr> ops) {
  if (g.objects.count(obj) == 0) {
    misuse("%p is not a live user object", static_cast<void*>(obj));
    return fail(cudaErrorInvalidValue);
  }
  if (count == 0 || count > obj->refs) {
    misuse("user object %p: releasing %u references, %u held", static_cast<void*>(obj), count, obj->refs);
    return fail(cudaErrorInvalidValue);
  }
  obj->refs -= count;
  if (obj->refs == 0) {
    g.destructions.emplace_back(std::move(ops), obj);
    g.cv.notify_all();
  }
  return cudaSuccess;
}

bool liveGraph(Graphs& g, CUgraph_st* graph) {
  if (g.graphs.count(graph) != 0) return true;
  misuse("%p is not a live graph", static_cast<void*>(graph));
  return false;
}

bool liveExec(Graphs& g, CUgraphExec_st* exec) {
  if (g.execs.count(exec) != 0) return true;
  misuse("%p is not a live executable graph", static_cast<void*>(exec));
  return false;
}

}  // namespace

void captureAppend(Capture& capture, std::function<void()> work, bool kernel) {
  capture.graph->nodes.push_back(Node{std::move(work), kernel});
}

cudaError_t checkUnsafeDuringCapture(const char* what) {
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  const std::thread::id me = std::this_thread::get_id();
  for (auto& [stream, c] : g.captures) {
    const bool forbids =
        c->mode == cudaStreamCaptureModeGlobal || (c->mode == cudaStreamCaptureModeThreadLocal && c->thread == me);
    if (forbids) {
      c->invalidated = true;
      (void)what;
      return fail(cudaErrorStreamCaptureUnsupported);
    }
  }
  return cudaSuccess;
}

}  // namespace cudadouble

using namespace cudadouble;  // NOLINT: the C API below implements the runtime's names

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (s->legacy) return fail(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot be captured
  if (captureOf(s)) return fail(cudaErrorIllegalState);
  auto c = std::make_shared<Capture>();
  c->graph = new CUgraph_st();
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  {
    Graphs& g = graphs();
    std::lock_guard<std::mutex> lock(g.m);
    c->id = g.nextCaptureId++;
    g.graphs.insert(c->graph);
    g.captures.emplace_back(s, c);
  }
  setCapture(s, c);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (pGraph == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  std::shared_ptr<Capture> c = captureOf(s);
  if (!c) return fail(cudaErrorIllegalState);
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return fail(cudaErrorStreamCaptureWrongThread);
  setCapture(s, nullptr);
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  for (size_t i = 0; i < g.captures.size(); ++i) {
    if (g.captures[i].second == c) {
      g.captures.erase(g.captures.begin() + static_cast<long>(i));
      break;
    }
  }
  if (c->invalidated) {
    g.graphs.erase(c->graph);
    for (auto& [obj, n] : c->graph->userObjects) releaseLocked(g, obj, n, {});
    delete c->graph;
    *pGraph = nullptr;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *pGraph = c->graph;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  std::shared_ptr<Capture> c = captureOf(s);
  *status = !c ? cudaStreamCaptureStatusNone
               : (c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                     size_t* numDeps) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  std::shared_ptr<Capture> c = captureOf(s);
  *status = !c ? cudaStreamCaptureStatusNone
               : (c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive);
  if (id) *id = c ? c->id : 0;
  if (graph) *graph = c ? c->graph : nullptr;
  if (deps) *deps = nullptr;
  if (edges) *edges = nullptr;
  if (numDeps) *numDeps = 0;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (numNodes == nullptr || !liveGraph(g, graph)) return fail(cudaErrorInvalidValue);
  const size_t n = graph->nodes.size();
  if (nodes != nullptr) {
    for (size_t i = 0; i < n && i < *numNodes; ++i) nodes[i] = reinterpret_cast<cudaGraphNode_t>(&graph->nodes[i]);
    *numNodes = std::min(n, *numNodes);
  } else {
    *numNodes = n;
  }
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long /*flags*/) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (pGraphExec == nullptr || !liveGraph(g, graph)) return fail(cudaErrorInvalidValue);
  auto* exec = new CUgraphExec_st();
  exec->nodes = graph->nodes;
  // The executable graph holds its own reference to every user object the graph owns.
  for (auto& [obj, n] : graph->userObjects) {
    ++obj->refs;
    exec->userObjects.push_back(obj);
  }
  g.execs.insert(exec);
  *pGraphExec = exec;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  CD_ENTER();
  CUstream_st* s = nullptr;
  if (cudaError_t e = resolveStream(stream, &s); e != cudaSuccess) return e;
  if (captureOf(s)) return fail(cudaErrorNotSupported);  // graphs inside captures are not modelled
  std::vector<Node> nodes;
  {
    Graphs& g = graphs();
    std::lock_guard<std::mutex> lock(g.m);
    if (!liveExec(g, exec)) return fail(cudaErrorInvalidValue);
    nodes = exec->nodes;
  }
  OpPtr last;
  for (const Node& n : nodes) last = submit(s, n.work, n.kernel);
  if (last) {
    Graphs& g = graphs();
    std::lock_guard<std::mutex> lock(g.m);
    std::vector<OpPtr>& l = exec->launches;
    for (size_t i = 0; i < l.size();) {
      if (l[i]->done())
        l.erase(l.begin() + static_cast<long>(i));
      else
        ++i;
    }
    l.push_back(last);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (!liveExec(g, exec)) return fail(cudaErrorInvalidValue);
  g.execs.erase(exec);
  // References are released once the graph's launches have completed.
  for (CUuserObject_st* obj : exec->userObjects) releaseLocked(g, obj, 1, exec->launches);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (!liveGraph(g, graph)) return fail(cudaErrorInvalidValue);
  g.graphs.erase(graph);
  for (auto& [obj, n] : graph->userObjects) releaseLocked(g, obj, n, {});
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaUserObjectCreate(cudaUserObject_t* object, void* ptr, cudaHostFn_t destroy,
                                 unsigned int initialRefcount, unsigned int flags) {
  CD_ENTER();
  if (object == nullptr || destroy == nullptr || initialRefcount == 0 || flags != cudaUserObjectNoDestructorSync)
    return fail(cudaErrorInvalidValue);
  auto* obj = new CUuserObject_st();
  obj->ptr = ptr;
  obj->destroy = destroy;
  obj->refs = initialRefcount;
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  g.objects.insert(obj);
  *object = obj;
  return cudaSuccess;
}

cudaError_t cudaUserObjectRetain(cudaUserObject_t object, unsigned int count) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (g.objects.count(object) == 0 || count == 0) return fail(cudaErrorInvalidValue);
  object->refs += count;
  return cudaSuccess;
}

cudaError_t cudaUserObjectRelease(cudaUserObject_t object, unsigned int count) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  return releaseLocked(g, object, count, {});
}

cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count,
                                      unsigned int flags) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (!liveGraph(g, graph) || g.objects.count(object) == 0 || count == 0) return fail(cudaErrorInvalidValue);
  // cudaGraphUserObjectMove hands the caller's references to the graph; otherwise new ones.
  if ((flags & cudaGraphUserObjectMove) == 0) object->refs += count;
  graph->userObjects[object] += count;
  return cudaSuccess;
}

cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudaUserObject_t object, unsigned int count) {
  CD_ENTER();
  Graphs& g = graphs();
  std::lock_guard<std::mutex> lock(g.m);
  if (!liveGraph(g, graph)) return fail(cudaErrorInvalidValue);
  auto it = graph->userObjects.find(object);
  if (it == graph->userObjects.end() || it->second < count) return fail(cudaErrorInvalidValue);
  it->second -= count;
  if (it->second == 0) graph->userObjects.erase(it);
  return releaseLocked(g, object, count, {});
}

}  // extern "C"
