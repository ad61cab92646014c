// Helpers of the CUDA backend's GPU tests and benchmarks: n ranks as threads of
// this process on one GPU, each with its Communicator (in-process bootstrap,
// CUDA device 0), its Executor on the CUDA backend, its own non-blocking stream
// and device buffers; plans run with the emulator's reference inputs and
// checked against its reference outputs.
#ifndef MSCCLPP_TESTS_GPU_BACKEND_GPU_HARNESS_HPP_
#define MSCCLPP_TESTS_GPU_BACKEND_GPU_HARNESS_HPP_

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "executor/emulation/reference.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::gputest {

// Throws std::runtime_error naming the call and CUDA's text.
void cudaCheck(cudaError_t e, const char* what);
#define GPUTEST_CUDA(call) ::mscclpp::gputest::cudaCheck((call), #call)

// Whether a CUDA device is visible (clears the error of a machine without a driver).
bool deviceVisible();

// A reusable barrier for the rank threads, bounded: a wait longer than timeoutSeconds throws.
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int n) : n_(n) {}
  void arriveAndWait(double timeoutSeconds = 120);
  // Wakes every waiter (now and later) with an error: a rank failed and will not arrive.
  void abort();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

// Runs body(rank) on n threads (device devices[rank] current in each, device 0
// when devices is empty); returns the errors joined ("" if none).
std::string onRanks(int n, const std::function<void(int)>& body, const std::vector<int>& devices = {});

class GpuRanks {
 public:
  // Collective construction of n communicators and executors; buffers of
  // `capacity` bytes each. Rank r uses CUDA device devices[r] (all on device 0
  // when devices is empty).
  GpuRanks(int n, uint64_t capacity, std::vector<int> devices = {});
  ~GpuRanks();

  int size() const { return n_; }
  int device(int r) const { return devices_[r]; }
  const std::vector<int>& devices() const { return devices_; }
  Communicator& comm(int r) { return *comms_[r]; }
  exec::RuntimeExecutor& executor(int r) { return *execs_[r]; }
  cudaStream_t stream(int r) const { return streams_[r]; }
  char* send(int r) const { return send_[r]; }
  char* recv(int r) const { return recv_[r]; }
  uint64_t capacity() const { return capacity_; }

 private:
  int n_;
  uint64_t capacity_;
  std::vector<int> devices_;
  std::vector<std::shared_ptr<Communicator>> comms_;
  std::vector<std::unique_ptr<exec::RuntimeExecutor>> execs_;
  std::vector<cudaStream_t> streams_;
  std::vector<char*> send_, recv_;
};

// One call of a plan: every rank's input (the emulator's deterministic fill)
// and the check of any rank's output against the emulator's reference. The
// premulsum scalar is 2.
class ReferenceCall {
 public:
  ReferenceCall(plan::PlanPtr plan, uint64_t messageBytes, DataType dtype = DataType::Float32,
                ReduceOp op = ReduceOp::Sum, uint64_t seed = 1);
  const plan::PlanPtr& plan() const { return plan_; }
  uint64_t inBytes() const { return in_; }
  uint64_t outBytes() const { return out_; }
  const char* input(int rank) const { return pristine_.at(static_cast<size_t>(rank)).data(); }
  const void* scalar() const { return scalar_; }
  exec::CheckResult check(int rank, const char* output) const;

 private:
  plan::PlanPtr plan_;
  uint64_t in_ = 0, out_ = 0;
  unsigned char scalar_[16] = {};
  std::vector<std::vector<char>> pristine_;
  std::vector<const char*> inputs_;
  std::vector<char> reduced_;
  exec::CheckRequest req_;
};

struct RunOptions {
  uint64_t messageBytes = 0;  // as plans state it (emulationCallBytes)
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  PacketType packet = PacketType::LL16;
  int iterations = 2;  // each checked (host barrier between them)
  int backToBack = 1;  // launches per iteration with no host synchronisation in between
  bool graph = false;  // capture backToBack calls into a CUDA graph after a warm-up, replay it
  int graphReplays = 3;
  bool inPlaceCall = false;  // send == recv (allreduce-like collectives)
  uint64_t seed = 1;
};

struct RunResult {
  bool checked = false;  // the collective has a reference
  uint64_t mismatches = 0;
  std::string error;  // a rank's exception text ("" when none)
  ErrorCode errorCode = ErrorCode::InternalError;
  bool refused = false;  // NotSupported before anything ran (e.g. residency): error says why
  std::string report;    // mismatch lines
  uint64_t inputBytes = 0, outputBytes = 0;
};

// Runs `plan` on the first plan-size ranks of `ranks` and checks every output.
RunResult runPlan(GpuRanks& ranks, const plan::PlanPtr& plan, const RunOptions& options);

// The smallest message size (times `factor`) the plan serves with odd-sized chunks, or 0.
uint64_t messageSizeFor(const plan::Plan& p, uint64_t factor);

std::vector<std::string> jsonFiles(const std::string& dir);

}  // namespace mscclpp::gputest

#endif  // MSCCLPP_TESTS_GPU_BACKEND_GPU_HARNESS_HPP_
