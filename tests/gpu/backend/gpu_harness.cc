#include "gpu_harness.hpp"

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "executor/context_image.hpp"
#include "executor/emulation/emulator.hpp"
#include "executor/emulation/reference.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::gputest {

void cudaCheck(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

bool deviceVisible() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
}

void ThreadBarrier::arriveAndWait(double timeoutSeconds) {
  std::unique_lock<std::mutex> lock(m_);
  if (aborted_) throw std::runtime_error("test barrier: another rank failed");
  const uint64_t gen = generation_;
  if (++arrived_ == n_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  if (!cv_.wait_until(lock, deadline, [&] { return generation_ != gen || aborted_; })) {
    throw std::runtime_error("test barrier: a rank thread did not arrive within " + std::to_string(timeoutSeconds) +
                             " s (it failed earlier: see its error)");
  }
  if (generation_ == gen) throw std::runtime_error("test barrier: another rank failed");
}

void ThreadBarrier::abort() {
  std::lock_guard<std::mutex> lock(m_);
  aborted_ = true;
  cv_.notify_all();
}

std::string onRanks(int n, const std::function<void(int)>& body, const std::vector<int>& devices) {
  std::vector<std::thread> threads;
  std::mutex m;
  std::string errors;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        GPUTEST_CUDA(cudaSetDevice(devices.empty() ? 0 : devices.at(r)));
        body(r);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(m);
        errors += "rank " + std::to_string(r) + ": " + e.what() + "\n";
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

GpuRanks::GpuRanks(int n, uint64_t capacity, std::vector<int> devices)
    : n_(n),
      capacity_(capacity),
      devices_(std::move(devices)),
      comms_(n),
      streams_(n, nullptr),
      send_(n, nullptr),
      recv_(n, nullptr) {
  if (devices_.empty()) devices_.assign(n, 0);
  if (static_cast<int>(devices_.size()) != n) throw std::runtime_error("GpuRanks: one device per rank");
  auto group = InProcessBootstrap::createGroup(n);
  std::string err = onRanks(
      n,
      [&](int r) {
        comms_[r] = std::make_shared<Communicator>(std::make_shared<InProcessBootstrap>(group, r), devices_[r]);
      },
      devices_);
  if (!err.empty()) throw std::runtime_error("building " + std::to_string(n) + " communicators:\n" + err);
  for (int r = 0; r < n; ++r) {
    GPUTEST_CUDA(cudaSetDevice(devices_[r]));
    execs_.push_back(std::make_unique<exec::RuntimeExecutor>(comms_[r]));
    if (execs_.back()->backend() != Backend::Cuda)
      throw std::runtime_error("the Executor of rank " + std::to_string(r) + " is not on the CUDA backend");
    GPUTEST_CUDA(cudaStreamCreateWithFlags(&streams_[r], cudaStreamNonBlocking));
    GPUTEST_CUDA(cudaMalloc(&send_[r], capacity));
    GPUTEST_CUDA(cudaMalloc(&recv_[r], capacity));
  }
  GPUTEST_CUDA(cudaSetDevice(0));
}

GpuRanks::~GpuRanks() {
  // Executors first: their contexts wait for their last launches on these streams.
  execs_.clear();
  for (int r = 0; r < n_; ++r) {
    cudaSetDevice(devices_[r]);
    if (streams_[r]) cudaStreamDestroy(streams_[r]);
    if (send_[r]) cudaFree(send_[r]);
    if (recv_[r]) cudaFree(recv_[r]);
  }
  comms_.clear();
}

std::vector<std::string> jsonFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".json") out.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t messageSizeFor(const plan::Plan& p, uint64_t factor) {
  const plan::RankPlan& r0 = p.ranks[0];
  uint64_t l = std::max<uint64_t>(1, p.ranks.size());
  for (uint32_t c : {r0.inputChunks, r0.outputChunks})
    if (c > 0) l = std::lcm(l, static_cast<uint64_t>(c));
  const uint64_t align = std::max<uint32_t>(16, p.header.bufferAlignment);
  uint64_t size = l * align * factor;
  if (size < p.header.minMessageSize) size = (p.header.minMessageSize + l * align - 1) / (l * align) * (l * align);
  if (size > p.header.maxMessageSize) return 0;
  try {
    uint64_t in = 0, out = 0;
    exec::emulationCallBytes(p, size, &in, &out);
    for (int r = 0; r < static_cast<int>(p.ranks.size()); ++r) exec::shapeCall(p, r, in, out, DataType::Float32);
  } catch (const Error&) {
    return 0;
  }
  return size;
}

ReferenceCall::ReferenceCall(plan::PlanPtr plan, uint64_t messageBytes, DataType dtype, ReduceOp op, uint64_t seed)
    : plan_(std::move(plan)) {
  const int n = static_cast<int>(plan_->ranks.size());
  exec::emulationCallBytes(*plan_, messageBytes, &in_, &out_);
  exec::encodeScalar(dtype, 2.0, scalar_);
  pristine_.assign(n, std::vector<char>(in_ + 16));
  inputs_.resize(n);
  for (int r = 0; r < n; ++r) {
    exec::fillInput(dtype, op, seed, r, pristine_[r].data(), in_);
    inputs_[r] = pristine_[r].data();
  }
  req_.collective = plan_->header.collective;
  req_.root = plan_->header.root;
  req_.nRanks = n;
  req_.dtype = dtype;
  req_.op = op;
  req_.scalar = scalar_;
  req_.inputs = inputs_.data();
  req_.inputBytes = in_;
  req_.outputBytes = out_;
  const plan::Collective coll = req_.collective;
  if (coll == plan::Collective::AllReduce || coll == plan::Collective::ReduceScatter ||
      coll == plan::Collective::Reduce) {
    reduced_.resize(in_ + 16);
    exec::computeReduction(req_, reduced_.data());
    req_.reduced = reduced_.data();
  }
}

exec::CheckResult ReferenceCall::check(int rank, const char* output) const {
  return exec::checkOutput(req_, rank, output);
}

RunResult runPlan(GpuRanks& ranks, const plan::PlanPtr& plan, const RunOptions& opt) {
  RunResult res;
  const int n = static_cast<int>(plan->ranks.size());
  if (n > ranks.size()) throw std::runtime_error("runPlan: the plan has more ranks than the test world");
  if (n != ranks.size()) throw std::runtime_error("runPlan: a plan runs on a world of its own size");
  const ReferenceCall ref(plan, opt.messageBytes, opt.dtype, opt.op, opt.seed);
  res.inputBytes = ref.inBytes();
  res.outputBytes = ref.outBytes();
  const uint64_t in = res.inputBytes, out = res.outputBytes;
  if (std::max(in, out) > ranks.capacity()) throw std::runtime_error("runPlan: message larger than the buffers");
  if (opt.inPlaceCall && in != out) throw std::runtime_error("runPlan: an in-place call needs equal sizes");
  const void* scalar = ref.scalar();

  ThreadBarrier barrier(n);
  std::mutex m;
  bool anyRefused = false, anyOther = false;
  std::string errors;
  std::string err = onRanks(
      n,
      [&](int r) {
        cudaStream_t s = ranks.stream(r);
        char* recv = ranks.recv(r);
        char* send = opt.inPlaceCall ? recv : ranks.send(r);
        exec::RuntimeExecutor& ex = ranks.executor(r);
        std::vector<char> host(out + 16);
        cudaGraphExec_t graphExec = nullptr;
        auto call = [&] { ex.execute(r, send, recv, in, out, opt.dtype, plan, s, opt.packet, opt.op, scalar); };
        try {
          for (int it = 0; it < opt.iterations; ++it) {
            GPUTEST_CUDA(cudaMemcpyAsync(send, ref.input(r), in, cudaMemcpyHostToDevice, s));
            if (!opt.inPlaceCall) GPUTEST_CUDA(cudaMemsetAsync(recv, exec::kPoisonByte, out, s));
            GPUTEST_CUDA(cudaStreamSynchronize(s));
            barrier.arriveAndWait();  // every rank's buffers are ready before any reads them
            if (opt.graph) {
              if (graphExec == nullptr) {
                call();  // warm-up outside capture: builds the context (collective)
                GPUTEST_CUDA(cudaStreamSynchronize(s));
                barrier.arriveAndWait();
                GPUTEST_CUDA(cudaMemsetAsync(recv, exec::kPoisonByte, out, s));
                cudaGraph_t graph = nullptr;
                GPUTEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                try {
                  for (int k = 0; k < opt.backToBack; ++k) call();
                } catch (...) {
                  cudaStreamEndCapture(s, &graph);
                  if (graph) cudaGraphDestroy(graph);
                  throw;
                }
                GPUTEST_CUDA(cudaStreamEndCapture(s, &graph));
                GPUTEST_CUDA(cudaGraphInstantiate(&graphExec, graph, 0));
                GPUTEST_CUDA(cudaGraphDestroy(graph));
              }
              for (int k = 0; k < opt.graphReplays; ++k) GPUTEST_CUDA(cudaGraphLaunch(graphExec, s));
            } else {
              for (int k = 0; k < opt.backToBack; ++k) call();
            }
            GPUTEST_CUDA(cudaStreamSynchronize(s));
            std::string async;
            if (ex.pollAsyncError(&async)) throw std::runtime_error("asynchronous failure: " + async);
            barrier.arriveAndWait();  // every rank finished reading and writing
            GPUTEST_CUDA(cudaMemcpy(host.data(), recv, out, cudaMemcpyDeviceToHost));
            exec::CheckResult cr = ref.check(r, host.data());
            std::lock_guard<std::mutex> lock(m);
            res.checked = cr.checked;
            if (cr.mismatches) {
              res.mismatches += cr.mismatches;
              res.report += "iteration " + std::to_string(it) + ": " + cr.text;
            }
          }
        } catch (const Error& e) {
          barrier.abort();
          if (graphExec) cudaGraphExecDestroy(graphExec);
          std::lock_guard<std::mutex> lock(m);
          if (e.code() == ErrorCode::NotSupported)
            anyRefused = true;
          else
            anyOther = true;
          res.errorCode = e.code();
          throw;
        } catch (...) {
          barrier.abort();
          if (graphExec) cudaGraphExecDestroy(graphExec);
          std::lock_guard<std::mutex> lock(m);
          anyOther = true;
          throw;
        }
        if (graphExec) cudaGraphExecDestroy(graphExec);
      },
      ranks.devices());
  res.error = err;
  res.refused = anyRefused && !anyOther;
  return res;
}

}  // namespace mscclpp::gputest
