// The CUDA backend against rules the device double enforces as strictly as
// CUDA states them (docs/cuda-double.md): how many blocks can be resident
// when calls of several plans are in flight, cooperative launches, how soon
// an abort reaches every wait, and NVLS multicast binding. Ranks are threads
// of this process. meson.build runs each tag in a process of its own, with
// the device sizes it needs.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "algorithm/algorithm_registry.hpp"
#include "channel/bindable_memory.hpp"
#include "core/params.hpp"
#include "cuda_double.h"
#include "executor/emulation/reference.hpp"
#include "gpu_harness.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

std::string planPath(const std::string& name) { return std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/" + name; }

// One threadblock's JSON: its ops (JSON objects, comma-separated) and its channel ids.
std::string block(int id, const std::string& ops, bool channel) {
  return "{\"id\": " + std::to_string(id) + ", \"ops\": [" + ops + "], \"channels\": [" +
         (channel ? "{\"channel_type\": \"memory\", \"channel_ids\": [0]}" : "") + "], \"remote_buffer_refs\": []}";
}

// A plan of n ranks in which rank `waiter` has `blocks` blocks: its block 0
// waits for a signal from rank `signaller` (one block), then all of them meet
// at a barrier. Every other rank has one block that does nothing.
plan::PlanPtr waitingPlan(const std::string& name, int n, int signaller, int waiter, int blocks) {
  const std::string barrier =
      "{\"name\": \"barrier\", \"barrier_id\": 0, \"num_threadblocks\": " + std::to_string(blocks) + "}";
  std::string gpus;
  for (int r = 0; r < n; ++r) {
    std::string tbs, channels;
    if (r == signaller) {
      tbs = block(0, R"({"name": "signal", "channel_ids": [0], "channel_type": "memory"})", true);
      channels = "{\"channel_type\": \"memory\", \"connected_to\": [" + std::to_string(waiter) + "]}";
    } else if (r == waiter) {
      tbs = block(0, R"({"name": "wait", "channel_ids": [0], "channel_type": "memory"}, )" + barrier, true);
      for (int b = 1; b < blocks; ++b) tbs += ", " + block(b, barrier, false);
      channels = "{\"channel_type\": \"memory\", \"connected_to\": [" + std::to_string(signaller) + "]}";
    } else {
      tbs = block(0, R"({"name": "nop"})", false);
    }
    if (r) gpus += ", ";
    gpus += "{\"id\": " + std::to_string(r) +
            ", \"input_chunks\": 1, \"output_chunks\": 1, \"scratch_chunks\": 0, \"threadblocks\": [" + tbs +
            "], \"channels\": [" + channels + "], \"remote_buffers\": [], \"semaphores\": []}";
  }
  const std::string text = "{\"name\": \"" + name +
                           "\", \"collective\": \"custom\", \"protocol\": \"Simple\", \"inplace\": false, "
                           "\"num_threads_per_block\": 1024, \"buffer_alignment\": 16, \"gpus\": [" +
                           gpus + "]}";
  return plan::loadPlanJson(text, name + ".json");
}

}  // namespace

// Two back-to-back calls of 8 ranks on one GPU of 16 SMs (one 1024-thread
// block each). "lead": rank 1 has 9 blocks that meet at a barrier after
// rank 0's signal; "follow": rank 0 has 9 such blocks waiting for rank 1.
// Each plan alone needs 16 blocks. But rank 0 finishes lead at once and
// starts follow while rank 1 has not started lead: 9 + 9 + 6 blocks, and
// rank 1's lead can never be resident. Counting one call's blocks misses it;
// the calls in flight are refused before anything runs.
TEST_CASE("back-to-back calls count every plan in flight", "[coresidency]") {
  int sms = 0;
  GPUTEST_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  REQUIRE(sms == 16);  // meson.build: CUDA_DOUBLE_SMS=16
  const int n = 8;
  const plan::PlanPtr lead = waitingPlan("lead", n, 0, 1, 9), follow = waitingPlan("follow", n, 1, 0, 9);
  GpuRanks w(n, 1 << 16);
  ThreadBarrier barrier(n);
  std::vector<std::string> refusals(n);
  const uint64_t bytes = 4096;
  std::string err = onRanks(n, [&](int r) {
    try {
      auto call = [&](const plan::PlanPtr& p) {
        w.executor(r).execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, w.stream(r));
      };
      // Every rank builds both contexts in step.
      call(lead);
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
      barrier.arriveAndWait(60);
      try {
        call(follow);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::NotSupported) throw;
        refusals[r] = e.what();
      }
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
      barrier.arriveAndWait(60);
      if (!refusals[r].empty()) return;
      // Rank 1 starts late: rank 0 runs lead, then follow's 9 blocks wait for rank 1.
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      call(lead);
      call(follow);
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
      std::string async;
      if (w.executor(r).pollAsyncError(&async)) throw std::runtime_error("asynchronous failure: " + async);
    } catch (...) {
      barrier.abort();
      throw;
    }
  });
  REQUIRE(err == "");
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    CHECK(refusals[r].find("need 24 blocks of 1024 threads resident at once") != std::string::npos);
    CHECK(refusals[r].find("the kernels of plan lead (lead.json), cached for earlier calls") != std::string::npos);
  }
}

namespace {

// Two ranks; rank 0's four blocks wait for rank 1: block 0 for its signal,
// then all four at a barrier.
plan::PlanPtr stuckPlan() {
  const std::string barrier = R"({"name": "barrier", "barrier_id": 0, "num_threadblocks": 4})";
  std::string waiting = block(0, R"({"name": "wait", "channel_ids": [0], "channel_type": "memory"}, )" + barrier, true);
  for (int b = 1; b < 4; ++b) waiting += ", " + block(b, barrier, false);
  const std::string signalling = block(0, R"({"name": "signal", "channel_ids": [0], "channel_type": "memory"})", true);
  auto gpu = [](int id, int peer, const std::string& tbs) {
    return "{\"id\": " + std::to_string(id) +
           ", \"input_chunks\": 1, \"output_chunks\": 1, \"scratch_chunks\": 0, \"threadblocks\": [" + tbs +
           "], \"channels\": [{\"channel_type\": \"memory\", \"connected_to\": [" + std::to_string(peer) +
           "]}], \"remote_buffers\": [], \"semaphores\": []}";
  };
  const std::string text =
      R"({"name": "stuck", "collective": "custom", "protocol": "Simple", "inplace": false,
          "num_threads_per_block": 256, "buffer_alignment": 16, "gpus": [)" +
      gpu(0, 1, waiting) + ", " + gpu(1, 0, signalling) + "]}";
  return plan::loadPlanJson(text, "stuck.json");
}

}  // namespace

// A failed communicator raises its contexts' abort flag in mapped host
// memory. The waits of a running launch poll a device-memory copy of it,
// and long waits read the host's flag once per round: every block of the
// launch must still stop within 100 ms of the failure.
TEST_CASE("a host-raised abort stops every wait within 100 ms", "[abort]") {
  const plan::PlanPtr p = stuckPlan();
  GpuRanks w(2, 1 << 16);
  const uint64_t bytes = 4096;
  auto call = [&](int r) {
    w.executor(r).execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, w.stream(r));
  };
  // Both ranks build the context and run it once.
  REQUIRE(onRanks(2, [&](int r) {
            call(r);
            GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
          }) == "");
  // Rank 0 alone: its blocks wait for rank 1 until the communicator fails.
  call(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the first round of every wait
  REQUIRE(cudaStreamQuery(w.stream(0)) == cudaErrorNotReady);
  const auto failedAt = std::chrono::steady_clock::now();
  w.comm(0).fail(ErrorCode::Aborted, "the test fails the communicator");
  while (cudaStreamQuery(w.stream(0)) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - failedAt).count();
  WARN("abort latency: " << ms << " ms from the communicator's failure to the end of the launch");
  CHECK(ms < 100);
  std::string why;
  CHECK(w.executor(0).pollAsyncError(&why));
  CHECK(why.find("the test fails the communicator") != std::string::npos);
}

// The same for a native kernel: rank 0 alone runs the LL-packet allreduce of
// 2 ranks, whose waits poll the abort flag's device copy and read the host's
// flag once per round.
TEST_CASE("a host-raised abort stops a native kernel within 100 ms", "[abort]") {
  auto algorithm = algo::AlgorithmRegistry::instance().find("allreduce_packets");
  REQUIRE(algorithm);
  const exec::NativeProgramPtr program = algorithm->program({0, 0}, false, 0, Backend::Cuda);
  GpuRanks w(2, 1 << 16);
  const uint64_t bytes = 4096;
  auto call = [&](int r) {
    if (auto refused = w.executor(r).tryExecute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, program,
                                                w.stream(r), ReduceOp::Sum, nullptr))
      throw std::runtime_error("refused: " + *refused);
  };
  REQUIRE(onRanks(2, [&](int r) {
            call(r);
            GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
          }) == "");
  call(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the first round of every wait
  REQUIRE(cudaStreamQuery(w.stream(0)) == cudaErrorNotReady);
  const auto failedAt = std::chrono::steady_clock::now();
  w.comm(0).fail(ErrorCode::Aborted, "the test fails the communicator");
  while (cudaStreamQuery(w.stream(0)) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - failedAt).count();
  WARN("native abort latency: " << ms << " ms from the communicator's failure to the end of the launch");
  CHECK(ms < 100);
  std::string why;
  CHECK(w.executor(0).pollAsyncError(&why));
  CHECK(why.find("the test fails the communicator") != std::string::npos);
}

namespace {

// One call of allreduce_nvls_n2_oop on 2 MiB per rank, with send and
// receive buffers NVLS can bind (cuMemCreate, shareable), checked against
// the emulator's reference. Returns the ranks' errors ("" when none).
std::string nvlsAllreduce(const std::vector<int>& devices) {
  const plan::PlanPtr p = plan::loadPlanFile(planPath("allreduce_nvls_n2_oop.json"));
  const ReferenceCall ref(p, 2 << 20);
  GpuRanks w(2, 1 << 16, devices);
  return onRanks(
      2,
      [&](int r) {
        std::string why;
        char* send = static_cast<char*>(detail::allocateBindable(ref.inBytes(), w.device(r), &why));
        char* recv = static_cast<char*>(detail::allocateBindable(ref.outBytes(), w.device(r), &why));
        if (send == nullptr || recv == nullptr) throw std::runtime_error("no bindable memory: " + why);
        GPUTEST_CUDA(cudaMemcpy(send, ref.input(r), ref.inBytes(), cudaMemcpyHostToDevice));
        w.executor(r).execute(r, send, recv, ref.inBytes(), ref.outBytes(), DataType::Float32, p, w.stream(r));
        GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
        std::vector<char> out(ref.outBytes() + 16);
        GPUTEST_CUDA(cudaMemcpy(out.data(), recv, ref.outBytes(), cudaMemcpyDeviceToHost));
        const exec::CheckResult c = ref.check(r, out.data());
        detail::releaseBindable(send);
        detail::releaseBindable(recv);
        if (c.mismatches != 0) throw std::runtime_error(std::to_string(c.mismatches) + " mismatches\n" + c.text);
      },
      devices);
}

}  // namespace

// Two ranks on two GPUs with ncclMemAlloc-style buffers: the group binds its
// input and output (two bindings on each rank).
TEST_CASE("NVLS binds shareable cuMemCreate buffers on two GPUs", "[nvls]") {
  const uint64_t before = cudadouble::stats().multicastBinds;
  REQUIRE(nvlsAllreduce({0, 1}) == "");
  CHECK(cudadouble::stats().multicastBinds == before + 4);
}

// Ranks sharing one GPU would add its device to the team twice, which CUDA
// refuses: every rank must fall back to the members' buffers, at once.
TEST_CASE("NVLS ranks sharing a GPU all fall back", "[nvls]") {
  const uint64_t before = cudadouble::stats().multicastBinds;
  REQUIRE(nvlsAllreduce({0, 0}) == "");
  CHECK(cudadouble::stats().multicastBinds == before);
}

// The group agreed to bind, then cuMulticastCreate fails on the first
// member (no multicast object left): every rank falls back.
TEST_CASE("NVLS creation failing on one rank: all fall back", "[nvls-no-objects]") {
  const uint64_t before = cudadouble::stats().multicastBinds;
  REQUIRE(nvlsAllreduce({0, 1}) == "");
  CHECK(cudadouble::stats().multicastBinds == before);
}

// CUDA guarantees that the blocks of a grid are resident together only for a
// cooperative launch: plans whose blocks wait on each other launch so.
TEST_CASE("waiting multi-block plans launch cooperatively", "[cooperative]") {
  GpuRanks w(2, 1 << 20);
  RunOptions o;
  o.iterations = 1;
  const plan::PlanPtr pairs = plan::loadPlanFile(planPath("allreduce_allpairs_n2_oop.json"));
  REQUIRE(pairs->ranks[0].threadblocks.size() > 1);
  o.messageBytes = messageSizeFor(*pairs, 4);
  uint64_t before = cudadouble::stats().cooperativeLaunches;
  RunResult r = runPlan(w, pairs, o);
  REQUIRE(r.error == "");
  CHECK(r.mismatches == 0);
  CHECK(cudadouble::stats().cooperativeLaunches == before + 2);  // one launch per rank
  // One block per rank has no block to wait for: an ordinary launch.
  const plan::PlanPtr put = plan::loadPlanFile(planPath("allgather_put_n2_oop.json"));
  REQUIRE(put->ranks[0].threadblocks.size() == 1);
  o.messageBytes = messageSizeFor(*put, 4);
  before = cudadouble::stats().cooperativeLaunches;
  r = runPlan(w, put, o);
  REQUIRE(r.error == "");
  CHECK(cudadouble::stats().cooperativeLaunches == before);
}

// Without cooperative launch (cudaDevAttrCooperativeLaunch 0) such a plan is
// refused on every rank, before anything runs; one-block plans still run,
// and MSCCLPP_GPU_COOPERATIVE=off runs it with ordinary launches.
TEST_CASE("no cooperative launch: waiting blocks are refused", "[no-cooperative]") {
  GpuRanks w(2, 1 << 20);
  RunOptions o;
  o.iterations = 1;
  const plan::PlanPtr pairs = plan::loadPlanFile(planPath("allreduce_allpairs_n2_oop.json"));
  o.messageBytes = messageSizeFor(*pairs, 4);
  RunResult r = runPlan(w, pairs, o);
  CHECK(r.refused);
  CHECK(r.error.find("wait on each other, which CUDA guarantees to be resident together only for a cooperative "
                     "launch") != std::string::npos);
  CHECK(r.error.find("cudaDevAttrCooperativeLaunch is 0") != std::string::npos);
  const plan::PlanPtr put = plan::loadPlanFile(planPath("allgather_put_n2_oop.json"));
  o.messageBytes = messageSizeFor(*put, 4);
  r = runPlan(w, put, o);
  CHECK(r.error == "");
  CHECK(r.mismatches == 0);
  // MSCCLPP_GPU_COOPERATIVE=off: ordinary launches, on the residency check alone.
  setenv("MSCCLPP_GPU_COOPERATIVE", "off", 1);
  params::resetCache();
  GpuRanks off(2, 1 << 20);
  o.messageBytes = messageSizeFor(*pairs, 4);
  r = runPlan(off, pairs, o);
  unsetenv("MSCCLPP_GPU_COOPERATIVE");
  params::resetCache();
  CHECK(r.error == "");
  CHECK(r.mismatches == 0);
}

int main(int argc, char** argv) {
  if (!cudadouble::active()) return 1;
  return mscclpp::test::runCatchSession(argc, argv);
}
