// The call monitor on the CUDA backend, against the CUDA device double
// (docs/failure-handling.md, "Mismatched calls"). Ranks are threads, each with
// a Communicator and a CUDA Executor. A call on a cached context only enqueues
// a kernel, which may wait for a peer running another call; without the
// monitor that ends at the kernel's deadline as a timeout. With it, every rank
// gets InvalidUsage naming both calls within seconds, or InternalError with
// the wait-for cycle for a deadlock. The same source builds for a real GPU as
// test gpu_monitor (MSCCLPP_TEST_ON_GPU), which skips (77) without a device.
#include <cuda_runtime.h>
#include <catch2/catch.hpp>
#include "catch_session.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "../support/scoped_env.hpp"
#include "core/logger.hpp"
#if !defined(MSCCLPP_TEST_ON_GPU)
#include "cuda_double.h"
#endif
#include "gpu_harness.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

struct Outcome {
  bool failed = false;
  ErrorCode code = ErrorCode::InternalError;
  std::string message;
};

// Each of two ranks makes call(r) and waits for its stream, twice: the
// communicator's failure, if any, is the error of one of those (the call itself
// when it builds a context, else the next, once the enqueued kernel stopped).
// Returns each rank's outcome and the seconds until both ended.
template <class Call>
std::vector<Outcome> twoCallsPerRank(GpuRanks& ranks, Call&& call, double* seconds) {
  std::vector<Outcome> out(2);
  const auto start = std::chrono::steady_clock::now();
  const std::string err = onRanks(2, [&](int r) {
    try {
      for (int n = 0; n < 2; ++n) {
        call(r);
        GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
      }
    } catch (const Error& e) {
      out[r].failed = true;
      out[r].code = e.code();
      out[r].message = e.what();
    }
  });
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(err == "");
  return out;
}

// Two ranks, a two-rank allreduce (a default plan, called in place when the
// plan is), two call sizes (float32 elements).
struct Job {
  explicit Job(const std::string& planFile = "allreduce_allpairs_n2_oop.json")
      : plan(plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/" + planFile)),
        smallBytes(messageSizeFor(*plan, 1)),
        largeBytes(2 * smallBytes),
        ranks(2, largeBytes) {}
  plan::PlanPtr plan;
  uint64_t smallBytes, largeBytes;
  GpuRanks ranks;

  char* input(int r) { return plan->header.inPlace ? ranks.recv(r) : ranks.send(r); }
  void call(int r, uint64_t bytes) {
    ranks.executor(r).execute(r, input(r), ranks.recv(r), bytes, bytes, DataType::Float32, plan, ranks.stream(r));
  }
  // Both ranks call each size of `sizes` in turn (contexts built collectively) and synchronise.
  void warmUp(const std::vector<uint64_t>& sizes) {
    ThreadBarrier barrier(2);
    const std::string err = onRanks(2, [&](int r) {
      for (uint64_t bytes : sizes) {
        barrier.arriveAndWait(60);
        call(r, bytes);
        GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
      }
    });
    REQUIRE(err == "");
  }
  // Rank r calls bytes[r] twice (twoCallsPerRank).
  std::vector<Outcome> mismatch(const std::vector<uint64_t>& bytes, double* seconds) {
    return twoCallsPerRank(
        ranks, [&](int r) { call(r, bytes[r]); }, seconds);
  }
};

std::string elements(uint64_t bytes) { return std::to_string(bytes / 4) + " x float32"; }

// Every rank failed with `code` and a message containing each of `parts`.
void checkEveryRankFailed(const std::vector<Outcome>& out, ErrorCode code, const std::vector<std::string>& parts) {
  for (size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].message);
    CHECK(out[r].failed);
    CHECK(out[r].code == code);
    for (const std::string& p : parts) CHECK_THAT(out[r].message, Catch::Contains(p));
  }
}

}  // namespace

TEST_CASE("call monitor: mismatched calls fail fast, naming both", "[monitor]") {
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "30");
  Job job;
  REQUIRE(job.smallBytes != 0);
  REQUIRE(job.smallBytes != job.largeBytes);
  double seconds = 0;
  std::vector<Outcome> out;
  std::string number;
  SECTION("a cached context on rank 0, a new one on rank 1") {
    job.warmUp({job.smallBytes});
    out = job.mismatch({job.smallBytes, job.largeBytes}, &seconds);
    number = "#2";
  }
  SECTION("cached contexts on both ranks, for different counts") {
    job.warmUp({job.smallBytes, job.largeBytes});
    out = job.mismatch({job.smallBytes, job.largeBytes}, &seconds);
    number = "#3";
  }
  SECTION("new contexts on both ranks: the build's exchange finds it") {
    out = job.mismatch({job.smallBytes, job.largeBytes}, &seconds);
  }
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].message);
    CHECK(out[r].failed);
    CHECK(out[r].code == ErrorCode::InvalidUsage);
    const std::string found = number.empty()
                                  ? "mismatched calls: rank " + std::to_string(r) + " called allreduce"
                                  : "mismatched calls: call " + number + " on this communicator is allreduce";
    CHECK_THAT(out[r].message, Catch::Contains(found) && Catch::Contains(elements(job.smallBytes)) &&
                                   Catch::Contains(elements(job.largeBytes)));
  }
  // The monitor looks 2 s into a stuck call; the exchange finds it at once.
  CHECK(seconds < (number.empty() ? 1.5 : 10));
}

namespace {

// Both ranks run `planFile` twice with no deadline soon (60 s); returns each
// rank's outcome and the seconds until both ended.
std::vector<Outcome> deadlockedCalls(const std::string& planFile, double* seconds) {
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "60");
  plan::PlanPtr cycle = plan::loadPlanFile(std::string(MSCCLPP_TEST_EXEC_DATA) + "/" + planFile);
  constexpr uint64_t kBytes = 4096;
  GpuRanks ranks{2, kBytes};
  return twoCallsPerRank(
      ranks,
      [&](int r) {
        ranks.executor(r).execute(r, ranks.send(r), ranks.recv(r), kBytes, kBytes, DataType::Float32, cycle,
                                  ranks.stream(r));
      },
      seconds);
}

}  // namespace

// docs/failure-handling.md, "Slow peers": both ranks' only block waits for the
// other's signal before sending its own. Every rank is alive and no wait has a
// deadline soon: the device waits publish what they wait for in host-mapped
// memory, and the monitor finds the cycle from those within seconds. Without
// the published waits an enqueued call reports nothing to wait on, and the
// calls end only at the kernel's deadline, as a timeout.
TEST_CASE("call monitor: a live-rank deadlock fails with the cycle", "[monitor][deadlock]") {
  double seconds = 0;
  std::vector<Outcome> out;
  std::vector<std::string> waits[2];
  SECTION("channel waits") {
    out = deadlockedCalls("deadlock_cycle_2.json", &seconds);
    for (int r = 0; r < 2; ++r) {
      waits[r] = {"rank " + std::to_string(r) + " threadblock 0 op 0 (wait) waits on memory channel 0 (peer " +
                  std::to_string(1 - r) + "): signal #1 expected, counter at 0"};
    }
  }
  // Threadblock 1 of each rank waits at a barrier for threadblock 0, which
  // waits for the peer: a block at a barrier publishes its wait (on its own
  // rank's blocks); were it taken as running, no deadlock would be concluded
  // before the deadline.
  SECTION("a threadblock waits at a barrier for one in the cycle") {
    out = deadlockedCalls("deadlock_barrier_2.json", &seconds);
    for (int r = 0; r < 2; ++r) {
      waits[r] = {"rank " + std::to_string(r) + " threadblock 0 op 0 (wait) waits on memory channel 0 (peer " +
                      std::to_string(1 - r) + "): signal #1 expected, counter at 0",
                  "rank " + std::to_string(r) + " threadblock 1 op 0 (barrier) waits at barrier 0 for 2 threadblocks"};
    }
  }
  // The packet waits leave their loops and wait out of them, published
  // (op_interpreter.hpp settlePending); each rank's packets are written by the
  // other's ppkt, the cycle's edges.
  SECTION("LL packet waits") {
    out = deadlockedCalls("deadlock_packets_2.json", &seconds);
    for (int r = 0; r < 2; ++r) {
      waits[r] = {"rank " + std::to_string(r) +
                  " threadblock 0 op 0 (upkt) waits for LL packet flag 1 at byte 0 of its scratch (src_buff[0] = s "
                  "chunk 0): flag 0 is there; written by rank " +
                  std::to_string(1 - r) + " threadblock 0 op 1 (ppkt)"};
    }
  }
  // Every rank's message has the cycle and both ranks' waits.
  std::vector<std::string> parts = {"deadlock with every rank alive: ranks 0, 1 wait only on each other",
                                    "wait-for cycle rank 0 -> rank 1 -> rank 0"};
  for (int peer = 0; peer < 2; ++peer) parts.insert(parts.end(), waits[peer].begin(), waits[peer].end());
  checkEveryRankFailed(out, ErrorCode::InternalError, parts);
  // Two looks of the monitor (2 s into the call, then 2 s later), not the 60 s deadline.
  CHECK(seconds < 10);
}

// docs/failure-handling.md, "Slow peers": rank 1 calls 3 s after rank 0, whose
// kernel waits for it. Nothing fails (no deadline on live peers); rank 0's host
// does not wait (its call was enqueued), so its call monitor prints the
// long-wait WARN once per MSCCLPP_WAIT_WARN_S, from the waits its blocks
// publish, with what the peers do (its look 2 s into the call found rank 1
// idle).
TEST_CASE("call monitor: a late peer is waited for, with WARNs", "[monitor][slow]") {
  test::ScopedEnv warn("MSCCLPP_WAIT_WARN_S", "1");
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "60");
  std::string planFile, waitPattern;
  SECTION("channel waits") {
    planFile = "allreduce_allpairs_n2_oop.json";
    waitPattern = "waits on memory channel \\d+ \\(peer 1\\): signal #\\d+ expected, counter at \\d+";
  }
  // The packet ops leave their loops at a packet that has not come, wait for it
  // out of the loop (published), and resume where they left: in place, a
  // reduction redone from its start would add twice, and the check below would
  // see it.
  SECTION("LL packet waits, in place") {
    planFile = "allreduce_ll_n2_ip.json";
    waitPattern =
        "waits for LL packet flag \\d+ at byte \\d+ of its scratch \\(src_buff\\[\\d+\\] = s chunk \\d+\\): "
        "flag \\d+ is there";
  }
  Job job(planFile);
  const ReferenceCall ref(job.plan, job.smallBytes);
  job.warmUp({ref.inBytes()});
  ThreadBarrier barrier(2);
  std::string warning;
  std::vector<std::string> wrong(2);
  const std::string err = onRanks(2, [&](int r) {
    cudaStream_t s = job.ranks.stream(r);
    GPUTEST_CUDA(cudaMemcpyAsync(job.input(r), ref.input(r), ref.inBytes(), cudaMemcpyHostToDevice, s));
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    barrier.arriveAndWait(60);
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3000));
      warning = lastWarning();
    }
    job.ranks.executor(r).execute(r, job.input(r), job.ranks.recv(r), ref.inBytes(), ref.outBytes(), DataType::Float32,
                                  job.plan, s);
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    barrier.arriveAndWait(60);
    std::vector<char> host(ref.outBytes());
    GPUTEST_CUDA(cudaMemcpy(host.data(), job.ranks.recv(r), ref.outBytes(), cudaMemcpyDeviceToHost));
    const exec::CheckResult check = ref.check(r, host.data());
    wrong[r] = check.checked ? check.text : "not checked";
  });
  REQUIRE(err == "");
  INFO(warning);
  CHECK_THAT(warning, Catch::Contains("plan " + job.plan->header.name + " rank 0: call #2 has waited") &&
                          Catch::Contains("on its device (MSCCLPP_WAIT_WARN_S=1;") &&
                          Catch::Matches(".*rank 0 threadblock \\d+ op \\d+ \\(\\w+\\) " + waitPattern + ".*") &&
                          Catch::Contains("rank 1 is not in a call"));
  // The values are right: the late call completed normally.
  CHECK(wrong[0] == "");
  CHECK(wrong[1] == "");
}

// op_interpreter.hpp, packet ops: a thread whose packet has not come leaves the
// op's loop, waits for the packet out of the loop (published) and resumes the
// op where it left. Rank 0 reduces two chunks of packets into its output in
// place (tests/data/exec/packet_resume_2.json), the first chunk written by
// itself, the second by rank 1, which calls late: rank 0's op leaves in the
// middle. Resumed from its start instead, it would add the first chunk twice.
TEST_CASE("late LL packets: the op resumes where it left off", "[packets][slow]") {
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "60");
  const plan::PlanPtr plan = plan::loadPlanFile(std::string(MSCCLPP_TEST_EXEC_DATA) + "/packet_resume_2.json");
  constexpr uint64_t kBytes = 8192, kElems = kBytes / sizeof(float);
  GpuRanks ranks{2, kBytes};
  std::vector<std::vector<float>> input(2, std::vector<float>(kElems));
  for (int r = 0; r < 2; ++r) {
    for (uint64_t k = 0; k < kElems; ++k) input[r][k] = static_cast<float>(r * 100000 + k);
  }
  const std::vector<float> output(kElems, 0.5f);
  std::vector<float> result(kElems);
  ThreadBarrier barrier(2);
  const std::string err = onRanks(2, [&](int r) {
    cudaStream_t s = ranks.stream(r);
    GPUTEST_CUDA(cudaMemcpyAsync(ranks.send(r), input[r].data(), kBytes, cudaMemcpyHostToDevice, s));
    // The first call builds the context (both ranks together); the second, late on rank 1, is checked.
    for (int call = 0; call < 2; ++call) {
      GPUTEST_CUDA(cudaMemcpyAsync(ranks.recv(r), output.data(), kBytes, cudaMemcpyHostToDevice, s));
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      barrier.arriveAndWait(60);
      if (call == 1 && r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ranks.executor(r).execute(r, ranks.send(r), ranks.recv(r), kBytes, kBytes, DataType::Float32, plan, s);
      GPUTEST_CUDA(cudaStreamSynchronize(s));
    }
    if (r == 0) GPUTEST_CUDA(cudaMemcpy(result.data(), ranks.recv(0), kBytes, cudaMemcpyDeviceToHost));
  });
  REQUIRE(err == "");
  uint64_t wrong = 0;
  for (uint64_t k = 0; k < kElems; ++k) {
    const float want = 0.5f + input[k < kElems / 2 ? 0 : 1][k];
    if (result[k] != want && wrong++ < 4) FAIL_CHECK("element " << k << ": " << result[k] << ", expected " << want);
  }
  CHECK(wrong == 0);
}

namespace {

// Captures what `calls` enqueues on `stream` into a CUDA graph, and returns its executable graph.
template <class Calls>
cudaGraphExec_t captureGraph(cudaStream_t stream, Calls&& calls) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GPUTEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  calls();
  GPUTEST_CUDA(cudaStreamEndCapture(stream, &graph));
  GPUTEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  GPUTEST_CUDA(cudaGraphDestroy(graph));
  return exec;
}

// A second pair of buffers per rank, for calls whose contexts differ from the first pair's.
struct MoreBuffers {
  MoreBuffers(int n, uint64_t bytes) : send(n), recv(n) {
    for (int r = 0; r < n; ++r) {
      GPUTEST_CUDA(cudaMalloc(&send[r], bytes));
      GPUTEST_CUDA(cudaMalloc(&recv[r], bytes));
    }
  }
  ~MoreBuffers() {
    for (size_t r = 0; r < send.size(); ++r) {
      (void)cudaFree(send[r]);
      (void)cudaFree(recv[r]);
    }
  }
  std::vector<void*> send, recv;
};

// Each of two ranks warms up with warmUp(r) (its calls built on both ranks
// together), captures capture(r) into a graph, makes `later` calls of after(r)
// (all ranks together), launches the graph and waits for its stream, then calls
// after(r): the communicator's failure, found while the replay waited, is that
// call's error. With queueBehind, after(r) is also enqueued behind the replay
// before the wait (as a training step's next collective would be): in progress
// the whole time, none of its blocks started, so the monitor must look at the
// replay. Without it nothing but the replay is in progress (its host idle).
template <class Warm, class Capture, class After>
std::vector<Outcome> replayPerRank(GpuRanks& ranks, Warm&& warmUp, Capture&& capture, After&& after, int later,
                                   bool queueBehind, double* seconds) {
  std::vector<Outcome> out(2);
  std::vector<cudaGraphExec_t> graphs(2, nullptr);
  ThreadBarrier barrier(2);
  const std::string warmErr = onRanks(2, [&](int r) {
    warmUp(r, barrier);
    graphs[r] = captureGraph(ranks.stream(r), [&] { capture(r); });
    for (int k = 0; k < later; ++k) {
      barrier.arriveAndWait(60);
      after(r);
      GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
    }
    barrier.arriveAndWait(60);
  });
  REQUIRE(warmErr == "");
  const auto start = std::chrono::steady_clock::now();
  const std::string err = onRanks(2, [&](int r) {
    try {
      GPUTEST_CUDA(cudaGraphLaunch(graphs[r], ranks.stream(r)));
      if (queueBehind) after(r);
      GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
      after(r);
      GPUTEST_CUDA(cudaStreamSynchronize(ranks.stream(r)));
    } catch (const Error& e) {
      out[r].failed = true;
      out[r].code = e.code();
      out[r].message = e.what();
    }
  });
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (cudaGraphExec_t g : graphs) GPUTEST_CUDA(cudaGraphExecDestroy(g));
  REQUIRE(err == "");
  return out;
}

}  // namespace

// docs/failure-handling.md, "Graph replays": a call captured into a CUDA graph
// runs at each replay, which no host call announces and no completion mark
// numbers. The monitor watches the captured call's context: a launch of it
// whose blocks publish waits, with no tracked call waiting, is that call's
// replay, compared and analysed like an enqueued call. Without it, both cases
// below end only at the kernel's deadline (MSCCLPP_TIMEOUT_S, 30 s here) as a
// timeout.
TEST_CASE("call monitor: replayed mismatches and deadlocks fail fast", "[monitor][graph]") {
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "30");
  Job job;
  double seconds = 0;
  std::vector<Outcome> out;
  std::vector<std::string> expected;  // in every rank's message
  ErrorCode code = ErrorCode::InternalError;
  // Both ranks warmed up two sizes (calls #1 and #2); rank 0 captures the small
  // one as call #3, rank 1 the large one: each replay waits for a peer kernel
  // of its own context that never runs. Nothing else is in progress (a call
  // queued behind would be, and the comparison of recent calls would find the
  // mismatch through it without watching the replay).
  SECTION("mismatched captured calls") {
    int later = 0;
    SECTION("replayed at once") {}
    // 17 matching calls between the capture and the replay push call #3 out
    // of the last 16 calls each rank keeps. The replay's own descriptor is
    // compared then; otherwise the two replays waiting on each other's ranks
    // would look like a deadlock, InternalError.
    SECTION("replayed after 17 more calls") { later = 17; }
    out = replayPerRank(
        job.ranks,
        [&](int r, ThreadBarrier& barrier) {
          for (uint64_t bytes : {job.smallBytes, job.largeBytes}) {
            barrier.arriveAndWait(60);
            job.call(r, bytes);
            GPUTEST_CUDA(cudaStreamSynchronize(job.ranks.stream(r)));
          }
        },
        [&](int r) { job.call(r, r == 0 ? job.smallBytes : job.largeBytes); },
        [&](int r) { job.call(r, job.smallBytes); }, later, false, &seconds);
    code = ErrorCode::InvalidUsage;
    expected = {"mismatched calls: call #3 on this communicator is allreduce", elements(job.smallBytes),
                elements(job.largeBytes)};
  }
  // The same call on two pairs of buffers, X and Y (two contexts on each rank,
  // built in that order): rank 0 captures X then Y, rank 1 Y then X. Every call
  // matches by number, but rank 0's replay of X waits for rank 1's X, queued
  // behind rank 1's Y, which waits for rank 0's Y: a deadlock with every rank
  // alive, in replays.
  SECTION("a deadlock between replays") {
    MoreBuffers y(2, job.largeBytes);
    const uint64_t bytes = job.smallBytes;
    auto onX = [&](int r) {
      job.ranks.executor(r).execute(r, job.ranks.send(r), job.ranks.recv(r), bytes, bytes, DataType::Float32, job.plan,
                                    job.ranks.stream(r));
    };
    auto onY = [&](int r) {
      job.ranks.executor(r).execute(r, y.send[r], y.recv[r], bytes, bytes, DataType::Float32, job.plan,
                                    job.ranks.stream(r));
    };
    out = replayPerRank(
        job.ranks,
        [&](int r, ThreadBarrier& barrier) {
          for (int k = 0; k < 2; ++k) {
            barrier.arriveAndWait(60);
            k == 0 ? onX(r) : onY(r);
            GPUTEST_CUDA(cudaStreamSynchronize(job.ranks.stream(r)));
          }
        },
        [&](int r) {
          r == 0 ? onX(r) : onY(r);
          r == 0 ? onY(r) : onX(r);
        },
        onX, 0, true, &seconds);
    code = ErrorCode::InternalError;
    expected = {"deadlock with every rank alive: ranks 0, 1 wait only on each other",
                "wait-for cycle rank 0 -> rank 1 -> rank 0", "rank 0 in a CUDA graph's replay of call #3",
                "rank 1 in a CUDA graph's replay of call #3", "waits on memory channel"};
  }
  checkEveryRankFailed(out, code, expected);
  // Two looks of the monitor (2 s into the replay's wait, then 2 s later), not the 30 s deadline.
  CHECK(seconds < 10);
}

// docs/failure-handling.md, "Graph replays": rank 1 launches its graph 3 s
// after rank 0, whose replay waits for it. Nothing fails; rank 0's monitor
// prints the long-wait WARN for the replay, from the waits its blocks publish,
// and the values are right.
TEST_CASE("call monitor: a replay awaiting a late peer WARNs and ends", "[monitor][graph][slow]") {
  test::ScopedEnv warn("MSCCLPP_WAIT_WARN_S", "1");
  test::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "60");
  Job job;
  const ReferenceCall ref(job.plan, job.smallBytes);
  std::string warning;
  std::vector<std::string> wrong(2);
  ThreadBarrier barrier(2);
  const std::string err = onRanks(2, [&](int r) {
    cudaStream_t s = job.ranks.stream(r);
    GPUTEST_CUDA(cudaMemcpyAsync(job.input(r), ref.input(r), ref.inBytes(), cudaMemcpyHostToDevice, s));
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    barrier.arriveAndWait(60);
    job.call(r, ref.inBytes());  // call #1 builds the context
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    cudaGraphExec_t graph = captureGraph(s, [&] { job.call(r, ref.inBytes()); });  // call #2
    barrier.arriveAndWait(60);
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3000));
      warning = lastWarning();
    }
    GPUTEST_CUDA(cudaGraphLaunch(graph, s));
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    GPUTEST_CUDA(cudaGraphExecDestroy(graph));
    std::vector<char> host(ref.outBytes());
    GPUTEST_CUDA(cudaMemcpy(host.data(), job.ranks.recv(r), ref.outBytes(), cudaMemcpyDeviceToHost));
    const exec::CheckResult check = ref.check(r, host.data());
    wrong[r] = check.checked ? check.text : "not checked";
  });
  REQUIRE(err == "");
  INFO(warning);
  CHECK_THAT(warning, Catch::Contains("plan " + job.plan->header.name +
                                      " rank 0: call #2 (captured into a CUDA graph, replayed) has waited at least") &&
                          Catch::Matches(".*rank 0 threadblock \\d+ op \\d+ \\(\\w+\\) waits on memory channel \\d+ "
                                         "\\(peer 1\\): signal #\\d+ expected, counter at \\d+.*") &&
                          Catch::Contains("rank 1 is not in a call"));
  CHECK(wrong[0] == "");
  CHECK(wrong[1] == "");
}

int main(int argc, char** argv) {
#if defined(MSCCLPP_TEST_ON_GPU)
  if (!deviceVisible()) {
    std::printf("test_gpu_monitor: no CUDA device is visible: skipping (exit 77)\n");
    return 77;
  }
#else
  if (!cudadouble::active()) return 1;
#endif
  return mscclpp::test::runCatchSession(argc, argv);
}
