// One rank of a job whose ranks are PROCESSES sharing GPU 0 (started by tests/mp's runtime_launch):
// TcpBootstrap + Communicator on device 0 + Executor on the CUDA backend, so peers reach each
// other's buffers through CUDA IPC (allocation base + offset). Without MPS the processes' kernels
// are time-sliced, not co-resident: the plans must still complete (slowly), never hang.
//
//   runtime_launch --nranks N -- gpu_mp_worker PLAN.json...
// Each plan runs 3 checked iterations (bootstrap barrier between them) and 20 back-to-back calls
// checked once. Exit 0 when every output matched the reference; 1 otherwise.
#include <cuda_runtime.h>

#include <algorithm>
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
  std::fprintf(stderr, "gpu_mp_worker rank %d: FAILED: %s\n", gRank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

// The launcher's environment (RANK, WORLD_SIZE), as every tests/mp worker reads it.
int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') fail(std::string(name) + " is not set (start this program with runtime_launch)");
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 4096) fail(std::string(name) + "=" + v + " is not a rank number");
  return static_cast<int>(x);
}

void runPlanFile(const std::string& path, Communicator& comm, exec::RuntimeExecutor& ex, cudaStream_t s, char* send,
                 char* recv, uint64_t capacity) {
  const int n = comm.size();
  plan::PlanPtr p = plan::loadPlanFile(path);
  if (static_cast<int>(p->ranks.size()) != n) fail(path + ": written for another rank count");
  const uint64_t message = messageSizeFor(*p, 5);
  if (message == 0) fail(path + ": no message size this plan serves");
  // Every rank computes every rank's input (deterministic), so it can check its own output alone.
  const ReferenceCall ref(p, message, DataType::Float32, ReduceOp::Sum, 7);
  const uint64_t in = ref.inBytes(), out = ref.outBytes();
  if (std::max(in, out) > capacity) fail(path + ": message larger than the buffers");
  std::vector<char> host(out + 16);
  // Every copy and set on the call's stream, waited for: cudaMemcpy and
  // cudaMemset are legacy-stream work, which the stream would not wait for.
  auto check = [&](const char* what) {
    GPUTEST_CUDA(cudaMemcpyAsync(host.data(), recv, out, cudaMemcpyDeviceToHost, s));
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    exec::CheckResult cr = ref.check(comm.rank(), host.data());
    if (cr.mismatches) fail(path + " (" + what + "): " + std::to_string(cr.mismatches) + " mismatches\n" + cr.text);
  };
  GPUTEST_CUDA(cudaMemcpyAsync(send, ref.input(comm.rank()), in, cudaMemcpyHostToDevice, s));
  for (int it = 0; it < 3; ++it) {
    GPUTEST_CUDA(cudaMemsetAsync(recv, exec::kPoisonByte, out, s));
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    comm.bootstrap()->barrier();
    ex.execute(comm.rank(), send, recv, in, out, DataType::Float32, p, s);
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    comm.bootstrap()->barrier();
    check("checked iteration");
  }
  GPUTEST_CUDA(cudaMemsetAsync(recv, exec::kPoisonByte, out, s));
  GPUTEST_CUDA(cudaStreamSynchronize(s));
  comm.bootstrap()->barrier();
  for (int it = 0; it < 20; ++it) ex.execute(comm.rank(), send, recv, in, out, DataType::Float32, p, s);
  GPUTEST_CUDA(cudaStreamSynchronize(s));
  comm.bootstrap()->barrier();
  check("20 back-to-back calls");
  std::printf("gpu_mp_worker rank %d: %s: %llu bytes, 23 calls, outputs match\n", comm.rank(), path.c_str(),
              static_cast<unsigned long long>(message));
}

}  // namespace

int main(int argc, char** argv) {
  gRank = envInt("RANK");
  const int size = envInt("WORLD_SIZE");
  if (argc < 2) fail("usage: gpu_mp_worker PLAN.json...");
  if (!deviceVisible()) {
    std::printf("gpu_mp_worker rank %d: no CUDA device is visible: skipping (exit 77)\n", gRank);
    return 77;
  }
  try {
    GPUTEST_CUDA(cudaSetDevice(0));
    auto bootstrap = std::make_shared<TcpBootstrap>(gRank, size);
    bootstrap->initialize(TcpBootstrap::createUniqueId(), 0);  // the id comes from MSCCLPP_COMM_ID
    auto comm = std::make_shared<Communicator>(bootstrap, 0);
    auto ex = std::make_unique<exec::RuntimeExecutor>(comm);
    if (ex->backend() != Backend::Cuda) fail("the Executor is not on the CUDA backend");
    const uint64_t capacity = 40u << 20;
    cudaStream_t s = nullptr;
    char *send = nullptr, *recv = nullptr;
    GPUTEST_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    GPUTEST_CUDA(cudaMalloc(&send, capacity));
    GPUTEST_CUDA(cudaMalloc(&recv, capacity));
    for (int i = 1; i < argc; ++i) runPlanFile(argv[i], *comm, *ex, s, send, recv, capacity);
    bootstrap->barrier();  // every rank's last launch completed: nobody still reads a peer's memory
    ex.reset();            // contexts and their CUDA IPC mappings go before the buffers
    bootstrap->barrier();
    GPUTEST_CUDA(cudaFree(send));
    GPUTEST_CUDA(cudaFree(recv));
    GPUTEST_CUDA(cudaStreamDestroy(s));
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
