// One rank of a gpu-double job whose ranks are processes on two emulated
// hosts (tests/mp/runtime_netns_run.sh: MSCCLPP_HOSTID tells them apart),
// each on the double's device 0: port channels cross hosts over TCP.
//   plans PLAN.json...  each plan, every type this build has, in-place and
//                       out-of-place calls, each checked against the reference
//   native              the built-in two-level allreduce, the same matrix, sum, max and avg
//   refuse PLAN.json TEXT...  the plan is refused with a message holding each TEXT
//   destroy-early PLAN.json  executors destroyed as soon as their call's stream is done
//   kill PLAN.json R    rank R dies during the call after a good one; every other
//                       rank's call must fail within 10 s naming rank R
// Exit 0 when this rank passed; 1 with the reason on stderr.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "algorithm/algorithm_registry.hpp"
#include "core/format.hpp"
#include "executor/emulation/emulator.hpp"
#include "executor/emulation/reference.hpp"
#include "executor/executor_internal.hpp"
#include "gpu_harness.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

int gRank = -1;

unsigned long long ull(uint64_t v) { return static_cast<unsigned long long>(v); }

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "gpu_double_far_worker rank %d: FAILED: %s\n", gRank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') fail(std::string(name) + " is not set (start this program with runtime_launch)");
  return std::atoi(v);
}

// The types this build has GPU code for, f32 and f16 where present.
std::vector<DataType> testTypes() {
  std::vector<DataType> v;
  std::stringstream ss(MSCCLPP_TEST_GPU_TYPES);
  std::string t;
  while (std::getline(ss, t, ',')) {
    if (t == "f32") v.push_back(DataType::Float32);
    if (t == "f16") v.push_back(DataType::Float16);
  }
  if (v.empty()) fail("this build has GPU code for neither f32 nor f16");
  return v;
}

struct Job {
  std::shared_ptr<TcpBootstrap> bootstrap;
  std::shared_ptr<Communicator> comm;
  std::unique_ptr<exec::RuntimeExecutor> ex;
  cudaStream_t stream = nullptr;
  char* send = nullptr;
  char* recv = nullptr;
  uint64_t capacity = 1 << 20;
};

// One call on this rank's buffers: `input` goes in (into recv when in place),
// `run` enqueues the call, and the output is checked by `check`.
void checkedCall(Job& job, const char* input, uint64_t in, uint64_t out, bool inPlace,
                 const std::function<void(const void*, void*)>& run,
                 const std::function<exec::CheckResult(const char*)>& check, const std::string& what) {
  if (std::max(in, out) > job.capacity) fail(what + ": larger than the buffers");
  char* send = inPlace ? job.recv : job.send;
  if (!inPlace) GPUTEST_CUDA(cudaMemsetAsync(job.recv, exec::kPoisonByte, out, job.stream));
  GPUTEST_CUDA(cudaMemcpyAsync(send, input, in, cudaMemcpyHostToDevice, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  job.bootstrap->barrier();
  run(send, job.recv);
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  std::string async;
  if (job.ex->pollAsyncError(&async)) fail(what + ": " + async);
  job.bootstrap->barrier();
  std::vector<char> host(out + 16);
  GPUTEST_CUDA(cudaMemcpyAsync(host.data(), job.recv, out, cudaMemcpyDeviceToHost, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  exec::CheckResult cr = check(host.data());
  if (cr.mismatches) fail(what + ": " + std::to_string(cr.mismatches) + " mismatches\n" + cr.text);
}

void plans(Job& job, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    plan::PlanPtr p = plan::loadPlanFile(path);
    for (DataType t : testTypes()) {
      for (bool inPlace : {false, true}) {
        const ReferenceCall ref(p, messageSizeFor(*p, 8), t, ReduceOp::Sum, 5);
        const std::string what =
            strFormat("%s, %s, %s call", path.c_str(), dataTypeName(t), inPlace ? "in-place" : "out-of-place");
        for (int it = 0; it < 2; ++it) {
          checkedCall(
              job, ref.input(gRank), ref.inBytes(), ref.outBytes(), inPlace,
              [&](const void* s, void* r) {
                job.ex->execute(gRank, s, r, ref.inBytes(), ref.outBytes(), t, p, job.stream);
              },
              [&](const char* out) { return ref.check(gRank, out); }, what);
        }
        std::printf("gpu_double_far_worker rank %d: %s: correct\n", gRank, what.c_str());
      }
    }
  }
}

void native(Job& job) {
  auto algorithm = algo::AlgorithmRegistry::instance().find("allreduce_two_level");
  if (!algorithm) fail("no native algorithm allreduce_two_level");
  const int n = job.comm->size();
  std::vector<std::string> hostIds;
  for (int r = 0; r < n; ++r) hostIds.push_back(job.comm->hostIdOf(r));
  const std::vector<int32_t> hostOf = algo::hostIndexes(hostIds);
  for (DataType t : testTypes()) {
    for (bool inPlace : {false, true}) {
      for (auto [count, op] : {std::pair<uint64_t, ReduceOp>{1, ReduceOp::Sum},
                               {1000, ReduceOp::Max},
                               {65537, ReduceOp::Sum},
                               {4099, ReduceOp::Avg}}) {
        const exec::NativeProgramPtr program = algorithm->program(hostOf, inPlace, -1, Backend::Cuda);
        const uint64_t bytes = count * dataTypeSize(t);
        unsigned char scalar[8] = {};
        exec::encodeScalar(t, 2.0, scalar);
        std::vector<std::vector<char>> inputs(static_cast<size_t>(n), std::vector<char>(bytes + 16));
        std::vector<const char*> ptrs;
        for (int r = 0; r < n; ++r) {
          exec::fillInput(t, op, 3 + count, r, inputs[r].data(), bytes);
          ptrs.push_back(inputs[r].data());
        }
        exec::CheckRequest req;
        req.collective = plan::Collective::AllReduce;
        req.nRanks = n;
        req.dtype = t;
        req.op = op;
        req.scalar = scalar;
        req.inputs = ptrs.data();
        req.inputBytes = bytes;
        req.outputBytes = bytes;
        std::vector<char> reduced(bytes + 16);
        exec::computeReduction(req, reduced.data());
        req.reduced = reduced.data();
        const std::string what =
            strFormat("allreduce_two_level, %s %s, %llu elements, %s call", dataTypeName(t), reduceOpName(op),
                      static_cast<unsigned long long>(count), inPlace ? "in-place" : "out-of-place");
        checkedCall(
            job, inputs[gRank].data(), bytes, bytes, inPlace,
            [&](const void* s, void* r) {
              if (auto refused = job.ex->tryExecute(gRank, s, r, bytes, bytes, t, program, job.stream, op, nullptr))
                fail(what + ": refused: " + *refused);
            },
            [&](const char* out) { return exec::checkOutput(req, gRank, out); }, what);
        std::printf("gpu_double_far_worker rank %d: %s: correct\n", gRank, what.c_str());
      }
    }
  }
}

// A plan this setup cannot run: every rank refuses it before any exchange,
// with NotSupported whose message holds every expected part.
void refuse(Job& job, const std::string& path, const std::vector<std::string>& parts) {
  plan::PlanPtr p = plan::loadPlanFile(path);
  const ReferenceCall ref(p, messageSizeFor(*p, 8), DataType::Float32, ReduceOp::Sum, 5);
  try {
    job.ex->execute(gRank, job.send, job.recv, ref.inBytes(), ref.outBytes(), DataType::Float32, p, job.stream);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (e.code() != ErrorCode::NotSupported) fail("expected NotSupported, got: " + what);
    for (const std::string& part : parts)
      if (what.find(part) == std::string::npos) fail("the refusal lacks '" + part + "': " + what);
    std::printf("gpu_double_far_worker rank %d: refused as expected: %s\n", gRank, what.c_str());
    return;
  }
  fail(path + " ran on the CUDA backend although it should be refused");
}

// Each round, a new executor runs one call and is destroyed as soon as its
// stream is done: its context's proxy must still perform the final signal
// its kernel pushed, which a peer's kernel waits for.
void destroyEarly(Job& job, const std::string& path) {
  plan::PlanPtr p = plan::loadPlanFile(path);
  const ReferenceCall ref(p, messageSizeFor(*p, 8), DataType::Float32, ReduceOp::Sum, 5);
  for (int round = 0; round < 10; ++round) {
    job.ex = std::make_unique<exec::RuntimeExecutor>(job.comm);
    GPUTEST_CUDA(cudaMemcpyAsync(job.send, ref.input(gRank), ref.inBytes(), cudaMemcpyHostToDevice, job.stream));
    GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
    job.bootstrap->barrier();
    job.ex->execute(gRank, job.send, job.recv, ref.inBytes(), ref.outBytes(), DataType::Float32, p, job.stream);
    GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
    std::string async;
    if (job.ex->pollAsyncError(&async)) fail(strFormat("round %d: %s", round, async.c_str()));
    job.ex.reset();
    std::vector<char> host(ref.outBytes() + 16);
    GPUTEST_CUDA(cudaMemcpyAsync(host.data(), job.recv, ref.outBytes(), cudaMemcpyDeviceToHost, job.stream));
    GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
    exec::CheckResult cr = ref.check(gRank, host.data());
    if (cr.mismatches) fail(strFormat("round %d: %llu mismatches\n%s", round, ull(cr.mismatches), cr.text.c_str()));
    job.bootstrap->barrier();
  }
  std::printf("gpu_double_far_worker rank %d: 10 executors destroyed right after their call: correct\n", gRank);
}

// A good call builds the contexts; then the victim dies while the others'
// next call waits for it, and that call must fail, naming it, well within
// the deadline.
void killScenario(Job& job, const std::string& path, int victim) {
  plan::PlanPtr p = plan::loadPlanFile(path);
  const ReferenceCall ref(p, messageSizeFor(*p, 8), DataType::Float32, ReduceOp::Sum, 5);
  auto run = [&](const void* s, void* r) {
    job.ex->execute(gRank, s, r, ref.inBytes(), ref.outBytes(), DataType::Float32, p, job.stream);
  };
  checkedCall(
      job, ref.input(gRank), ref.inBytes(), ref.outBytes(), false, run,
      [&](const char* out) { return ref.check(gRank, out); }, "the call before the victim dies");
  if (gRank == victim) {
    // The others' next call is in flight by then, waiting for us.
    usleep(300 * 1000);
    std::fprintf(stderr, "gpu_double_far_worker rank %d: killing myself\n", gRank);
    std::fflush(stderr);
    kill(getpid(), SIGKILL);
  }
  const auto start = std::chrono::steady_clock::now();
  const double limit = 10.0;
  std::string error;
  // Calls until one fails: a call enqueued before the failure is known fails
  // at its end (the abort flag), the next one at once.
  for (int it = 0; it < 50 && error.empty(); ++it) {
    try {
      run(job.send, job.recv);
      GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
      std::string async;
      if (job.ex->pollAsyncError(&async)) error = async;
    } catch (const Error& e) {
      error = e.what();
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (took > limit) fail(strFormat("calls still did not fail %.1f s after rank %d died", took, victim));
  }
  if (error.empty()) fail("every call succeeded although rank " + std::to_string(victim) + " was dead");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (error.find("rank " + std::to_string(victim)) == std::string::npos)
    fail("the failure does not name rank " + std::to_string(victim) + ": " + error);
  std::printf("gpu_double_far_worker rank %d: rank %d dead: failed after %.2f s: %s\n", gRank, victim, took,
              error.substr(0, 300).c_str());
  std::fflush(stdout);
  std::_Exit(0);  // the job is broken: skip tearing down connections to a dead peer
}

}  // namespace

int main(int argc, char** argv) {
  gRank = envInt("RANK");
  const int size = envInt("WORLD_SIZE");
  if (argc < 2)
    fail(
        "usage: gpu_double_far_worker plans PLAN.json... | native | refuse PLAN.json TEXT... | destroy-early PLAN.json "
        "| "
        "kill PLAN.json RANK");
  const std::string scenario = argv[1];
  try {
    GPUTEST_CUDA(cudaSetDevice(0));
    Job job;
    job.bootstrap = std::make_shared<TcpBootstrap>(gRank, size);
    job.bootstrap->initialize(TcpBootstrap::createUniqueId(), 0);  // the id comes from MSCCLPP_COMM_ID
    job.comm = std::make_shared<Communicator>(job.bootstrap, 0);
    job.ex = std::make_unique<exec::RuntimeExecutor>(job.comm);
    if (job.ex->backend() != Backend::Cuda) fail("the Executor is not on the CUDA backend");
    GPUTEST_CUDA(cudaStreamCreateWithFlags(&job.stream, cudaStreamNonBlocking));
    GPUTEST_CUDA(cudaMalloc(&job.send, job.capacity));
    GPUTEST_CUDA(cudaMalloc(&job.recv, job.capacity));
    if (scenario == "plans" && argc > 2)
      plans(job, std::vector<std::string>(argv + 2, argv + argc));
    else if (scenario == "native" && argc == 2)
      native(job);
    else if (scenario == "refuse" && argc >= 4)
      refuse(job, argv[2], std::vector<std::string>(argv + 3, argv + argc));
    else if (scenario == "destroy-early" && argc == 3)
      destroyEarly(job, argv[2]);
    else if (scenario == "kill" && argc == 4)
      killScenario(job, argv[2], std::atoi(argv[3]));
    else
      fail("unknown scenario or arguments: " + scenario);
    job.bootstrap->barrier();    // every rank's last launch completed
    if (job.ex) job.ex.reset();  // contexts go before the buffers
    job.bootstrap->barrier();
    GPUTEST_CUDA(cudaFree(job.send));
    GPUTEST_CUDA(cudaFree(job.recv));
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
