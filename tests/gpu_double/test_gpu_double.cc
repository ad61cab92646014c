// The CUDA backend's orchestration against the CUDA device double: one test
// per finding of docs/cuda-double.md's table, tagged [findingN]. Ranks are
// threads of this process; gpu_double_mp_worker runs them as processes and
// test_gpu_double_shim drives four communicators from one thread.
// A fault is a sticky error that leaves the double's device context
// unusable, so meson.build runs the cases that may fault in processes of
// their own.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda_double.h"
#include "executor/cuda/gpu_launch.hpp"
#include "executor/cuda/gpu_memory.hpp"
#include "executor/dtypes.hpp"
#include "executor/emulation/emulator.hpp"
#include "executor/emulation/reference.hpp"
#include "executor/exec_layout.hpp"
#include "gpu_harness.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/proxy.hpp"
#include "plan/plan_loader.hpp"
#include "support/allocation_counter.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

std::string planPath(const std::string& name) { return std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/" + name; }

// Sets an environment variable for the scope (before any rank thread reads it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// One collective call of a plan on a test world: inputs, the call, the check
// (the emulator's reference).
class Collective {
 public:
  Collective(plan::PlanPtr plan, uint64_t messageBytes)
      : ref_(std::move(plan), messageBytes, DataType::Float32, ReduceOp::Sum, 3) {}
  const plan::PlanPtr& plan() const { return ref_.plan(); }

  // Fills rank r's send buffer and poisons its receive buffer (stream-ordered on s).
  void prepare(GpuRanks& w, int r) const {
    GPUTEST_CUDA(cudaMemcpyAsync(w.send(r), ref_.input(r), ref_.inBytes(), cudaMemcpyHostToDevice, w.stream(r)));
    GPUTEST_CUDA(cudaMemsetAsync(w.recv(r), exec::kPoisonByte, ref_.outBytes(), w.stream(r)));
    GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
  }
  void call(GpuRanks& w, int r) const {
    w.executor(r).execute(r, w.send(r), w.recv(r), ref_.inBytes(), ref_.outBytes(), DataType::Float32, plan(),
                          w.stream(r));
  }
  // Throws when rank r's output differs from the reference.
  void check(GpuRanks& w, int r) const {
    std::vector<char> host(ref_.outBytes() + 16);
    GPUTEST_CUDA(cudaMemcpy(host.data(), w.recv(r), ref_.outBytes(), cudaMemcpyDeviceToHost));
    exec::CheckResult cr = ref_.check(r, host.data());
    if (cr.mismatches != 0)
      throw std::runtime_error(plan()->header.name + ": " + std::to_string(cr.mismatches) + " mismatches\n" + cr.text);
  }

 private:
  ReferenceCall ref_;
};

Collective collective(const std::string& name, uint64_t factor = 4) {
  plan::PlanPtr p = plan::loadPlanFile(planPath(name));
  return Collective(p, messageSizeFor(*p, factor));
}

// Runs each collective once on every rank (prepare, barrier, call, synchronise, barrier, check).
void runEach(GpuRanks& w, const std::vector<const Collective*>& calls) {
  ThreadBarrier barrier(w.size());
  std::string err = onRanks(
      w.size(),
      [&](int r) {
        try {
          for (const Collective* c : calls) {
            c->prepare(w, r);
            barrier.arriveAndWait(60);
            c->call(w, r);
            GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
            std::string async;
            if (w.executor(r).pollAsyncError(&async)) throw std::runtime_error("asynchronous failure: " + async);
            barrier.arriveAndWait(60);
            c->check(w, r);
          }
        } catch (...) {
          barrier.abort();
          throw;
        }
      },
      w.devices());
  REQUIRE(err == "");
}

// A one-rank plan whose only threadblock's op list is larger than 48 KiB (500 copies of chunk 0).
plan::PlanPtr bigOpListPlan() {
  std::string ops;
  for (int i = 0; i < 500; ++i) {
    if (i) ops += ",";
    ops += R"({"name": "copy", "src_buff": [{"type": "i", "index": 0, "size": 1}],
               "dst_buff": [{"type": "o", "index": 0, "size": 1}]})";
  }
  const std::string text = R"({"name": "big_op_list", "collective": "custom", "protocol": "Simple", "inplace": false,
    "num_threads_per_block": 256, "buffer_alignment": 16,
    "gpus": [{"id": 0, "input_chunks": 1, "output_chunks": 1, "scratch_chunks": 0,
      "channels": [], "remote_buffers": [], "semaphores": [],
      "threadblocks": [{"id": 0, "channels": [], "ops": [)" +
                           ops + "]}]}]}";
  return plan::loadPlanJson(text, "big_op_list.json");
}

// Runs a one-rank plan with a copy from send to recv and checks it.
void runOneRankCopy(GpuRanks& w, const plan::PlanPtr& p, cudaStream_t stream) {
  const uint64_t bytes = 4096;
  std::vector<char> in(bytes), out(bytes);
  for (uint64_t i = 0; i < bytes; ++i) in[i] = static_cast<char>(i * 7 + 1);
  std::string err = onRanks(
      1,
      [&](int r) {
        GPUTEST_CUDA(cudaMemcpyAsync(w.send(r), in.data(), bytes, cudaMemcpyHostToDevice, stream));
        w.executor(r).execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, stream);
        GPUTEST_CUDA(cudaStreamSynchronize(stream));
        GPUTEST_CUDA(cudaMemcpy(out.data(), w.recv(r), bytes, cudaMemcpyDeviceToHost));
      },
      w.devices());
  REQUIRE(err == "");
  REQUIRE(out == in);
}

// Sets one of the double's adversarial knobs for the scope.
class ScopedAdversarial {
 public:
  ScopedAdversarial(void (*set)(int), int ms) : set_(set) { set_(ms); }
  ~ScopedAdversarial() { set_(0); }

 private:
  void (*set_)(int);
};

}  // namespace

// Not a finding: the ground every other test stands on. The runtime's layers
// are static libraries, and the linker takes a kernel's object out of one only
// if something refers to it strongly (a weak reference reads null: a CUDA build
// with no kernels, whose every call is refused). Every type of gpu_types must
// have its kernel in the dispatch, and a call must run it on the double.
TEST_CASE("every compiled type's kernel is linked and runs", "[kernels]") {
  const std::string compiled = std::string(",") + MSCCLPP_TEST_GPU_TYPES + ",";
  REQUIRE(compiled != ",,");
#define MSCCLPP_X(E, T, S)                                                                     \
  {                                                                                            \
    INFO("datatype " #S);                                                                      \
    CHECK(exec::gpuHasDtype(DataType::E) == (compiled.find("," #S ",") != std::string::npos)); \
  }
  MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
  if (!exec::gpuHasDtype(DataType::Float32)) return;  // the calls below are float's
  GpuRanks w(2, 1 << 20);
  Collective ll = collective("allreduce_ll_n2_oop.json"), pairs = collective("allreduce_allpairs_n2_oop.json");
  const uint64_t before = cudadouble::stats().kernelsLaunched;
  runEach(w, {&ll, &pairs});
  CHECK(cudadouble::stats().kernelsLaunched >= before + 4);  // two calls on each of two ranks
}

// Finding 1: after a context's peers are exchanged, the build must not
// synchronise the device (cudaMalloc, cudaMemset, cudaMemcpy, the FIFO's
// allocations; cudaFree of evicted contexts): the implicit synchronisation
// waits for a peer's kernel that spins on this rank, which cannot launch until
// its build returns. The double's adversarial scheduling makes every such
// synchronisation meet the peer's kernel.
TEST_CASE("finding 1: no device sync after a build's exchange point", "[finding1]") {
  ScopedEnv cache("MSCCLPP_EXEC_CONTEXT_CACHE", "1");  // every call builds, every build evicts
  GpuRanks w(2, 1 << 20);
  Collective ll = collective("allreduce_ll_n2_oop.json"), pairs = collective("allreduce_allpairs_n2_oop.json");
  cudadouble::setAdversarialSync(150);
  try {
    runEach(w, {&ll, &pairs, &ll, &pairs});
  } catch (...) {
    cudadouble::setAdversarialSync(0);
    throw;
  }
  cudadouble::setAdversarialSync(0);
}

// Finding 3: a captured graph embeds its context's pointers; evicting the
// context must not free what the graph uses (the graph retains it through a
// CUDA user object), and destroying the graph releases it. The double poisons
// freed memory, so a replay touching it faults.
TEST_CASE("finding 3: a graph replays correctly after eviction", "[finding3]") {
  const uint64_t baseline = cudadouble::stats().liveAllocations;
  {
    ScopedEnv cache("MSCCLPP_EXEC_CONTEXT_CACHE", "2");
    GpuRanks w(2, 1 << 20);
    Collective p = collective("allreduce_ll_n2_oop.json"), q = collective("allgather_ll_n2_oop.json"),
               r = collective("allreduce_allpairs_n2_oop.json");
    std::vector<cudaGraphExec_t> execs(2, nullptr);
    ThreadBarrier barrier(2);
    std::string err = onRanks(2, [&](int rank) {
      try {
        p.prepare(w, rank);
        barrier.arriveAndWait(60);
        p.call(w, rank);  // warm-up: builds P's context
        GPUTEST_CUDA(cudaStreamSynchronize(w.stream(rank)));
        barrier.arriveAndWait(60);
        cudaGraph_t g = nullptr;
        GPUTEST_CUDA(cudaStreamBeginCapture(w.stream(rank), cudaStreamCaptureModeThreadLocal));
        p.call(w, rank);
        GPUTEST_CUDA(cudaStreamEndCapture(w.stream(rank), &g));
        GPUTEST_CUDA(cudaGraphInstantiate(&execs[rank], g, 0));
        GPUTEST_CUDA(cudaGraphDestroy(g));
        for (const Collective* c : {&q, &r}) {  // two more contexts: P's is evicted
          c->prepare(w, rank);
          barrier.arriveAndWait(60);
          c->call(w, rank);
          GPUTEST_CUDA(cudaStreamSynchronize(w.stream(rank)));
          barrier.arriveAndWait(60);
        }
        for (int replay = 0; replay < 2; ++replay) {
          p.prepare(w, rank);
          barrier.arriveAndWait(60);
          GPUTEST_CUDA(cudaGraphLaunch(execs[rank], w.stream(rank)));
          GPUTEST_CUDA(cudaStreamSynchronize(w.stream(rank)));
          barrier.arriveAndWait(60);
          p.check(w, rank);
        }
        GPUTEST_CUDA(cudaGraphExecDestroy(execs[rank]));
      } catch (...) {
        barrier.abort();
        throw;
      }
    });
    REQUIRE(err == "");
    REQUIRE(cudadouble::stats().faults == 0);
  }
  // Every context the graphs retained is released once graphs and executors are gone.
  uint64_t live = 0;
  for (int i = 0; i < 500 && (live = cudadouble::stats().liveAllocations) != baseline; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(live == baseline);
}

// Finding 5: cudaFuncSetAttribute(MaxDynamicSharedMemorySize) is a property of
// the function on one device; a process-wide "already raised" cache skips it on
// the second device, whose launches of op lists over 48 KiB then fail.
TEST_CASE("finding 5: op lists over 48 KiB run on a second device", "[finding5]") {
  plan::PlanPtr p = bigOpListPlan();
  for (int device : {0, 1}) {
    INFO("device " << device);
    GpuRanks w(1, 1 << 20, {device});
    runOneRankCopy(w, p, w.stream(0));
  }
}

// Finding 6: the LL flag selects the scratch half by its parity; wrapping from
// UINT32_MAX to 1 gave two odd flags in a row, so two consecutive launches used
// the same half.
TEST_CASE("finding 6: launch flags alternate halves across the wrap", "[finding6]") {
  for (uint32_t f : {1u, 2u, UINT32_MAX - 2, UINT32_MAX - 1, UINT32_MAX}) {
    const uint32_t next = exec::nextFlag(f);
    INFO("flag " << f << " -> " << next);
    REQUIRE(next != 0);              // packets start zeroed: flag 0 must never be valid
    REQUIRE((next & 1) != (f & 1));  // the other scratch half
  }
}

// The same, end to end: LL plans (double scratch) launched back to back across
// the wrap-around, ranks as threads, every output checked.
TEST_CASE("LL launches back to back across the flag's wrap-around", "[flag-wrap]") {
  ScopedEnv first("MSCCLPP_EXEC_FIRST_FLAG", std::to_string(UINT32_MAX - 5));
  for (const char* name : {"allreduce_ll_n2_oop.json", "allgather_ll_n4_ip.json"}) {
    plan::PlanPtr p = plan::loadPlanFile(planPath(name));
    GpuRanks w(static_cast<int>(p->ranks.size()), 1 << 20);
    RunOptions opt;
    opt.messageBytes = messageSizeFor(*p, 4);
    opt.iterations = 3;
    opt.backToBack = 4;  // 12 launches: flags UINT32_MAX - 5 ... UINT32_MAX, 2, 3, ...
    RunResult r = runPlan(w, p, opt);
    INFO(name << "\n" << r.error << r.report);
    REQUIRE(r.error.empty());
    REQUIRE(r.mismatches == 0);
  }
}

// Finding 7 (hardware queues): every proxy stream the backend creates is mapped
// to one of the device's CUDA_DEVICE_MAX_CONNECTIONS queues in creation order;
// one per context build wraps onto a queue a rank's spinning kernel holds, and
// the proxy's copies queue behind it.
TEST_CASE("finding 7: proxy copies stay off busy hardware queues", "[finding7][queues]") {
  ScopedEnv cache("MSCCLPP_EXEC_CONTEXT_CACHE", "1");
  GpuRanks w(4, 1 << 20);  // first in its process: user streams on queues 1-4 (the legacy stream has 0)
  Collective ip = collective("allreduce_2node_n4_ip.json"), oop = collective("allreduce_2node_n4_oop.json");
  runEach(w, {&oop, &ip, &oop, &ip, &oop, &ip});
}

// Finding 7 (hardware queues, too few): the kernels of the ranks sharing a GPU
// and their proxies need a queue each; with fewer the build is refused, before
// anything is exchanged, naming CUDA_DEVICE_MAX_CONNECTIONS (this case runs
// with CUDA_DEVICE_MAX_CONNECTIONS=4).
TEST_CASE("finding 7: too few hardware queues are refused", "[finding7-few-queues]") {
  GpuRanks w(4, 1 << 20);
  Collective oop = collective("allreduce_2node_n4_oop.json");
  std::vector<std::string> errors(4);
  std::string err = onRanks(4, [&](int r) {
    oop.prepare(w, r);
    try {
      oop.call(w, r);
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
      std::string async;
      if (w.executor(r).pollAsyncError(&async))
        errors[r] = "asynchronous failure: " + async;
      else
        errors[r] = "ran";
    } catch (const Error& e) {
      errors[r] = std::string(e.code() == ErrorCode::NotSupported ? "NotSupported: " : "other: ") + e.what();
    }
  });
  REQUIRE(err == "");
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(errors[r].rfind("NotSupported: ", 0) == 0);
    REQUIRE(errors[r].find("CUDA_DEVICE_MAX_CONNECTIONS") != std::string::npos);
  }
}

// Finding 8: the smaller defects.
TEST_CASE("finding 8: a call keeps the user's earlier CUDA error", "[finding8]") {
  plan::PlanPtr p = bigOpListPlan();
  GpuRanks w(1, 1 << 20);
  runOneRankCopy(w, p, w.stream(0));  // the context exists: the next call only launches
  cudaError_t seen = cudaSuccess;
  std::string thrown;
  std::string err = onRanks(1, [&](int r) {
    (void)cudaSetDevice(1000);  // the user's own error, not yet read by the user
    try {
      w.executor(r).execute(r, w.send(r), w.recv(r), 4096, 4096, DataType::Float32, p, w.stream(r));
    } catch (const Error& e) {
      thrown = e.what();
    }
    seen = cudaGetLastError();
    GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
  });
  REQUIRE(err == "");
  REQUIRE(thrown == "");
  REQUIRE(seen == cudaErrorInvalidDevice);
}

TEST_CASE("finding 8: executor teardown skips a user-destroyed stream", "[finding8]") {
  plan::PlanPtr p = bigOpListPlan();
  auto w = std::make_unique<GpuRanks>(1, 1 << 20);
  cudaStream_t mine = nullptr;
  GPUTEST_CUDA(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
  runOneRankCopy(*w, p, mine);
  GPUTEST_CUDA(cudaStreamDestroy(mine));  // synchronised above: legal
  const uint64_t misuses = cudadouble::stats().misuses;
  w.reset();
  INFO(cudadouble::stats().lastMisuse);
  REQUIRE(cudadouble::stats().misuses == misuses);
}

TEST_CASE("finding 8: a FIFO on another device keeps the current device", "[finding8]") {
  GPUTEST_CUDA(cudaSetDevice(1));
  {
    Fifo fifo(16, 0);
    int now = -1;
    GPUTEST_CUDA(cudaGetDevice(&now));
    REQUIRE(now == 1);
  }
  GPUTEST_CUDA(cudaSetDevice(0));
}

TEST_CASE("finding 8: legacy-stream calls allocate no more than others", "[finding8]") {
  plan::PlanPtr p = bigOpListPlan();
  GpuRanks w(1, 1 << 20);
  GPUTEST_CUDA(cudaSetDevice(0));
  const uint64_t bytes = 4096;
  auto calls = [&](cudaStream_t s) {
    w.executor(0).execute(0, w.send(0), w.recv(0), bytes, bytes, DataType::Float32, p, s);  // warm-up
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    support::AllocationCounter counter(support::AllocationCounter::Scope::ThisThread);
    for (int i = 0; i < 10; ++i) {
      w.executor(0).execute(0, w.send(0), w.recv(0), bytes, bytes, DataType::Float32, p, s);
      GPUTEST_CUDA(cudaStreamSynchronize(s));
    }
    return counter.stop();
  };
  const uint64_t own = calls(w.stream(0)), legacy = calls(nullptr);
  INFO("allocations: own stream " << own << ", legacy stream " << legacy << " (the double's own are in both)");
  REQUIRE(legacy == own);
}

// cudaMemset and cudaMemcpy are legacy-stream work (Runtime API, "API
// synchronization behavior"): they return before they land, and work on the
// ranks' non-blocking streams does not wait for them. cudaMalloc memory is
// not cleared, and the double delays every legacy-stream operation, so a
// context whose zeroing went through the legacy stream launches on garbage
// (LL flags, counters, FIFO counters). Every zeroing and copy of the runtime
// must be ordered before the launch that needs it.
TEST_CASE("a context's zeroing lands before its first launch", "[legacy-stream]") {
  ScopedAdversarial legacy(&cudadouble::setAdversarialLegacy, 300);
  GpuRanks w(4, 1 << 20);
  Collective ll = collective("allreduce_ll_n4_oop.json"), pairs = collective("allreduce_allpairs_n4_oop.json"),
             port = collective("allreduce_2node_n4_oop.json");
  runEach(w, {&ll, &pairs, &port});
}

// Page-table changes (cudaFree, cudaFreeHost, cudaMalloc, cudaHostAlloc, IPC
// close) wait for the device holding the driver's lock, which blocks every
// other thread's CUDA call on the device. Evicted contexts must not be freed
// while a collective of their world can be in flight: a rank whose launch is
// blocked by the lock leaves its peers' kernels spinning, and the device
// never idles. Every build evicts (a cache of one); adversarial scheduling
// makes each device wait meet a running kernel of another thread.
TEST_CASE("evicting contexts frees nothing under running calls", "[page-table]") {
  ScopedEnv cache("MSCCLPP_EXEC_CONTEXT_CACHE", "1");
  GpuRanks w(4, 1 << 20);
  ScopedAdversarial sync(&cudadouble::setAdversarialSync, 100);
  for (const char* name : {"allreduce_ll_n4_oop.json", "allreduce_allpairs_n4_oop.json", "allreduce_2node_n4_oop.json",
                           "allreduce_ll_n4_oop.json", "allreduce_allpairs_n4_oop.json"}) {
    plan::PlanPtr p = plan::loadPlanFile(planPath(name));
    RunOptions opt;
    opt.messageBytes = messageSizeFor(*p, 4);
    opt.iterations = 1;
    opt.backToBack = 8;  // the ranks keep launching while the releaser destroys the evicted context
    RunResult r = runPlan(w, p, opt);
    INFO(name << "\n" << r.error << r.report);
    REQUIRE(r.error.empty());
    REQUIRE(r.mismatches == 0);
  }
}

// Lazy loading: a kernel's first launch may synchronise the context, which
// waits for kernels spinning on a rank that has not launched yet. One thread
// drives both ranks here (as the NCCL shim drives a group's communicators),
// so an avg call's division kernel, loaded at its first launch after rank
// 0's collective kernel, would wait for rank 1's launch forever. Every
// kernel the backend launches is loaded before any collective step.
TEST_CASE("no kernel is loaded by its first launch in a call", "[lazy-loading]") {
  GpuRanks w(2, 1 << 20);
  plan::PlanPtr p = plan::loadPlanFile(planPath("allreduce_allpairs_n2_oop.json"));
  const uint64_t bytes = messageSizeFor(*p, 4);
  const uint64_t loads = cudadouble::stats().loadsAtLaunch;
  // Both ranks' calls of one op, from a thread per rank or from one thread.
  auto callBoth = [&](ReduceOp op, bool oneThread) {
    INFO("op " << static_cast<int>(op) << (oneThread ? ", one thread" : ", a thread per rank"));
    const ReferenceCall ref(p, bytes, DataType::Float32, op, 5);
    auto prepare = [&](int r) {
      GPUTEST_CUDA(cudaMemcpyAsync(w.send(r), ref.input(r), ref.inBytes(), cudaMemcpyHostToDevice, w.stream(r)));
      GPUTEST_CUDA(cudaMemsetAsync(w.recv(r), exec::kPoisonByte, ref.outBytes(), w.stream(r)));
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
    };
    auto call = [&](int r) {
      w.executor(r).execute(r, w.send(r), w.recv(r), ref.inBytes(), ref.outBytes(), DataType::Float32, p, w.stream(r),
                            PacketType::LL16, op, ref.scalar());
    };
    auto finish = [&](int r) {
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
      std::string async;
      if (w.executor(r).pollAsyncError(&async)) throw std::runtime_error("asynchronous failure: " + async);
      std::vector<char> host(ref.outBytes() + 16);
      GPUTEST_CUDA(cudaMemcpy(host.data(), w.recv(r), ref.outBytes(), cudaMemcpyDeviceToHost));
      exec::CheckResult cr = ref.check(r, host.data());
      if (cr.mismatches != 0) throw std::runtime_error(std::to_string(cr.mismatches) + " mismatches\n" + cr.text);
    };
    ThreadBarrier barrier(2);
    const std::string err = oneThread ? onRanks(1,
                                                [&](int) {
                                                  for (int r = 0; r < 2; ++r) prepare(r);
                                                  for (int r = 0; r < 2; ++r) call(r);
                                                  for (int r = 0; r < 2; ++r) finish(r);
                                                })
                                      : onRanks(2, [&](int r) {
                                          try {
                                            prepare(r);
                                            barrier.arriveAndWait(60);
                                            call(r);
                                            finish(r);
                                            barrier.arriveAndWait(60);
                                          } catch (...) {
                                            barrier.abort();
                                            throw;
                                          }
                                        });
    REQUIRE(err == "");
  };
  callBoth(ReduceOp::Sum, false);        // builds the context that sum and avg calls share
  callBoth(ReduceOp::PreMulSum, false);  // builds premulsum's (its input is staged)
  callBoth(ReduceOp::Avg, true);
  callBoth(ReduceOp::PreMulSum, true);
  REQUIRE(cudadouble::stats().loadsAtLaunch == loads);
}

// The 64-bit stream memory operations' attribute is the driver's
// (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS); the runtime does not
// know it and answers cudaErrorInvalidValue. Asked through the runtime, a
// device that has them is taken for one that has not, and every completion
// mark and proxy signal takes the copy fallback.
TEST_CASE("stream memory operations are found through the driver", "[driver-attributes]") {
  REQUIRE(exec::resolveStreamWriteValue64(0) != nullptr);  // the double has them (CUDA_DOUBLE_STREAM_MEM_OPS=1)
  REQUIRE(cudaGetLastError() == cudaSuccess);              // and the query leaves no error behind
}

int main(int argc, char** argv) {
  if (!cudadouble::active()) return 1;
  int rc = mscclpp::test::runCatchSession(argc, argv);
  return rc;
}
