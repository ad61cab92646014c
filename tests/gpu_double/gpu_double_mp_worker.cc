// One rank of a gpu-double job whose ranks are PROCESSES sharing device 0,
// started by tests/mp's runtime_launch. Peers reach each other's buffers
// through the double's CUDA IPC. Scenarios, from docs/cuda-double.md:
//   realloc  finding 4: a receive buffer freed and re-allocated at the same
//            address between calls must not keep peers writing to the old one
//   mps      finding 7: under MPS the residency check counts other processes'
//            blocks; with few SMs the call must be refused with NotSupported
// Exit 0 on success, 1 with a message otherwise.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "gpu_double_mp_worker rank %d: FAILED: %s\n", gRank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') fail(std::string(name) + " is not set (start this program with runtime_launch)");
  return std::atoi(v);
}

struct Job {
  std::shared_ptr<TcpBootstrap> bootstrap;
  std::shared_ptr<Communicator> comm;
  std::unique_ptr<exec::RuntimeExecutor> ex;
  cudaStream_t stream = nullptr;
};

// One call of `p` with the given buffers, checked against the reference on this rank.
void runChecked(Job& job, const plan::PlanPtr& p, char* send, char* recv, const char* what) {
  const ReferenceCall ref(p, messageSizeFor(*p, 4), DataType::Float32, ReduceOp::Sum, 11);
  const uint64_t in = ref.inBytes(), out = ref.outBytes();
  // On the call's stream, waited for: cudaMemcpy and cudaMemset are
  // legacy-stream work, which the stream would not wait for.
  GPUTEST_CUDA(cudaMemcpyAsync(send, ref.input(gRank), in, cudaMemcpyHostToDevice, job.stream));
  GPUTEST_CUDA(cudaMemsetAsync(recv, exec::kPoisonByte, out, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  job.bootstrap->barrier();
  job.ex->execute(gRank, send, recv, in, out, DataType::Float32, p, job.stream);
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  std::string async;
  if (job.ex->pollAsyncError(&async)) fail(std::string(what) + ": " + async);
  job.bootstrap->barrier();
  std::vector<char> host(out + 16);
  GPUTEST_CUDA(cudaMemcpyAsync(host.data(), recv, out, cudaMemcpyDeviceToHost, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  exec::CheckResult cr = ref.check(gRank, host.data());
  if (cr.mismatches) fail(std::string(what) + ": " + std::to_string(cr.mismatches) + " mismatches\n" + cr.text);
}

void realloc(Job& job) {
  plan::PlanPtr p = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/allgather_put_n2_oop.json");
  const size_t capacity = 1 << 20;
  char *send = nullptr, *recv = nullptr;
  GPUTEST_CUDA(cudaMalloc(&send, capacity));
  GPUTEST_CUDA(cudaMalloc(&recv, capacity));
  runChecked(job, p, send, recv, "first call");
  job.bootstrap->barrier();  // every peer is done with our buffers before we replace one
  char* old = recv;
  GPUTEST_CUDA(cudaFree(recv));
  GPUTEST_CUDA(cudaMalloc(&recv, capacity));
  if (recv != old) fail("the allocator did not hand the freed address out again (the case under test)");
  runChecked(job, p, send, recv, "call after the receive buffer was re-allocated at the same address");
  job.bootstrap->barrier();
  job.ex.reset();
  job.bootstrap->barrier();
  GPUTEST_CUDA(cudaFree(send));
  GPUTEST_CUDA(cudaFree(recv));
  std::printf("gpu_double_mp_worker rank %d: realloc: both calls correct\n", gRank);
}

void mps(Job& job) {
  plan::PlanPtr p = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/allreduce_allpairs_n2_oop.json");
  const size_t capacity = 1 << 20;
  char *send = nullptr, *recv = nullptr;
  GPUTEST_CUDA(cudaMalloc(&send, capacity));
  GPUTEST_CUDA(cudaMalloc(&recv, capacity));
  try {
    runChecked(job, p, send, recv, "a call needing more co-resident blocks than the GPU holds");
  } catch (const Error& e) {
    const std::string what = e.what();
    if (e.code() != ErrorCode::NotSupported) fail("expected NotSupported, got: " + what);
    if (what.find("another process") == std::string::npos) fail("the refusal does not name the other process: " + what);
    std::printf("gpu_double_mp_worker rank %d: mps: refused as expected: %s\n", gRank, what.c_str());
    return;
  }
  fail("the call ran although the ranks' blocks cannot all be resident under MPS");
}

}  // namespace

int main(int argc, char** argv) {
  gRank = envInt("RANK");
  const int size = envInt("WORLD_SIZE");
  if (argc != 2) fail("usage: gpu_double_mp_worker realloc|mps");
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
    if (scenario == "realloc")
      realloc(job);
    else if (scenario == "mps")
      mps(job);
    else
      fail("unknown scenario " + scenario);
    job.bootstrap->barrier();
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
