// One rank of a gpu-double job whose ranks are PROCESSES sharing device 0,
// started by tests/mp's runtime_launch. Peers reach each other's buffers
// through the double's CUDA IPC. Scenarios, from docs/cuda-double.md:
//   realloc  finding 4: a receive buffer freed and re-allocated at the same
//            address between calls must not keep peers writing to the old one
//   mps      finding 7: under MPS the residency check counts other processes'
//            blocks; with few SMs the call must be refused with NotSupported
//   staged-a2av  all-to-all-v on buffers CUDA IPC cannot export (cuMemCreate):
//            staged, yet no receive byte past the segments is written
// Exit 0 on success, 1 with a message otherwise.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "channel/bindable_memory.hpp"
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

// Element i of the segment rank s sends to rank d.
float a2avValue(int s, int d, uint64_t i) { return static_cast<float>(s * 16 + d + (i % 1024) * 256); }

// One all-to-all-v call on `send` and `recv`, with host or device counts:
// every received segment is checked, and every byte past them must keep -1.
void runStagedA2av(Job& job, const plan::PlanPtr& p, char* send, char* recv, uint64_t capacity,
                   const std::vector<uint64_t>& c, const uint64_t* deviceCounts, const std::string& what) {
  const int n = 2;
  std::vector<float> h(capacity / 4, -1.0f);
  GPUTEST_CUDA(cudaMemcpyAsync(recv, h.data(), capacity, cudaMemcpyHostToDevice, job.stream));
  std::vector<float> in;
  for (int d = 0; d < n; ++d)
    for (uint64_t i = 0; i < c[gRank * n + d]; ++i) in.push_back(a2avValue(gRank, d, i));
  GPUTEST_CUDA(cudaMemcpyAsync(send, in.data(), in.size() * 4, cudaMemcpyHostToDevice, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  // In place, the bytes past the received segments keep what was sent from there.
  GPUTEST_CUDA(cudaMemcpyAsync(h.data(), recv, capacity, cudaMemcpyDeviceToHost, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  const std::vector<float> before = h;
  SplitSizes splits;
  splits.counts = deviceCounts != nullptr ? deviceCounts : c.data();
  splits.onDevice = deviceCounts != nullptr;
  job.bootstrap->barrier();
  if (auto refused =
          job.ex->tryExecuteVariable(gRank, send, recv, capacity, capacity, DataType::Float32, p, splits, job.stream))
    fail(what + ": refused: " + *refused);
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  std::string async;
  if (job.ex->pollAsyncError(&async)) fail(what + ": " + async);
  job.bootstrap->barrier();
  GPUTEST_CUDA(cudaMemcpyAsync(h.data(), recv, capacity, cudaMemcpyDeviceToHost, job.stream));
  GPUTEST_CUDA(cudaStreamSynchronize(job.stream));
  uint64_t at = 0;
  for (int s = 0; s < n; ++s) {
    for (uint64_t i = 0; i < c[s * n + gRank]; ++i, ++at) {
      if (h[at] != a2avValue(s, gRank, i))
        fail(strFormat("%s: element %llu of the segment from rank %d is %g, expected %g", what.c_str(),
                       static_cast<unsigned long long>(i), s, h[at], a2avValue(s, gRank, i)));
    }
  }
  for (uint64_t k = at; k < h.size(); ++k) {
    if (h[k] != before[k])
      fail(strFormat("%s: element %llu past the segments was written (%g, was %g)", what.c_str(),
                     static_cast<unsigned long long>(k), h[k], before[k]));
  }
}

void stagedA2av(Job& job) {
  plan::PlanPtr p = plan::loadPlanFile(std::string(MSCCLPP_TEST_DEFAULT_PLANS) + "/alltoallv_direct_n2_oop.json");
  const uint64_t capacity = 64 * 1024;
  std::string why;
  char* send = static_cast<char*>(detail::allocateBindable(capacity, 0, &why));
  char* recv = static_cast<char*>(detail::allocateBindable(capacity, 0, &why));
  if (send == nullptr || recv == nullptr) fail("cuMemCreate memory: " + why);
  uint64_t* dev = nullptr;
  GPUTEST_CUDA(cudaMalloc(&dev, 4 * sizeof(uint64_t)));
  const std::vector<std::vector<uint64_t>> counts = {{100, 700, 0, 300}, {0, 1200, 5, 0}};
  for (size_t k = 0; k < counts.size(); ++k) {
    GPUTEST_CUDA(cudaMemcpyAsync(dev, counts[k].data(), 4 * sizeof(uint64_t), cudaMemcpyHostToDevice, job.stream));
    runStagedA2av(job, p, send, recv, capacity, counts[k], nullptr, strFormat("call %zu, host counts", k));
    runStagedA2av(job, p, send, recv, capacity, counts[k], dev, strFormat("call %zu, device counts", k));
    runStagedA2av(job, p, recv, recv, capacity, counts[k], nullptr, strFormat("call %zu, in place", k));
    runStagedA2av(job, p, recv, recv, capacity, counts[k], dev, strFormat("call %zu, in place, device counts", k));
  }
  job.bootstrap->barrier();
  job.ex.reset();
  job.bootstrap->barrier();
  GPUTEST_CUDA(cudaFree(dev));
  detail::releaseBindable(send);
  detail::releaseBindable(recv);
  std::printf("gpu_double_mp_worker rank %d: staged-a2av: every call correct\n", gRank);
}

}  // namespace

int main(int argc, char** argv) {
  gRank = envInt("RANK");
  const int size = envInt("WORLD_SIZE");
  if (argc != 2) fail("usage: gpu_double_mp_worker realloc|mps|staged-a2av");
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
    else if (scenario == "staged-a2av")
      stagedA2av(job);
    else
      fail("unknown scenario " + scenario);
    job.bootstrap->barrier();
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
