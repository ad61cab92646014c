// The CUDA backend on a real GPU, ranks as threads of this process sharing
// GPU 0, each with its own non-blocking stream. Every preset of plans/ and
// every reference corpus plan runs at its rank count, checked against the
// emulator's reference; so do dtype x op, back-to-back LL launches, graph
// capture and replay, and presets at counts that run padded.
// Exits 77, a Meson skip, with a message when no CUDA device is visible.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include "catch_session.hpp"

#include "channel/bindable_memory.hpp"
#include "channel/nvls_binding.hpp"
#include "core/format.hpp"
#include "executor/cuda/gpu_launch.hpp"
#include "gpu_harness.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;

namespace {

std::string planDir() { return MSCCLPP_TEST_DEFAULT_PLANS; }
std::string corpusDir() { return MSCCLPP_TEST_REFERENCE_PLANS; }

// Corpus plans that cannot complete as written
// (tests/unit/executor/test_exec_corpus.cc proves it on the CPU emulator), and
// one whose result depends on timing.
const std::map<std::string, std::string> kSkip = {
    {"ut_read_put_packet_test.json", "no op of any rank writes its LL packets"},
    {"ut_reduce_copy_packet_test.json", "no op of any rank writes its LL packets"},
    {"ut_reduce_copy_send_packet_test.json", "no op of any rank writes its LL packets"},
    {"ut_reduce_packets_fuse_test.json", "no op of any rank writes its LL packets"},
    {"ut_reduce_packets_test.json", "no op of any rank writes its LL packets"},
    {"ut_reduce_send_packet_test.json", "no op of any rank writes its LL packets"},
    {"ut_relaxed_signal_wait_fuse_test.json", "signals its own paired channel"},
    {"ut_signal_wait_fuse_test.json", "signals its own paired channel"},
};
const char* kRacy = "executor-tests-reduce_tbg.json";

std::string baseName(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

// One world per rank count, built once (communicator construction is collective
// and slow-ish). main() destroys them before CUDA's own teardown at exit.
std::map<int, std::unique_ptr<GpuRanks>>& worlds() {
  static std::map<int, std::unique_ptr<GpuRanks>> w;
  return w;
}

GpuRanks& world(int n) {
  auto it = worlds().find(n);
  if (it == worlds().end()) it = worlds().emplace(n, std::make_unique<GpuRanks>(n, 40u << 20)).first;
  return *it->second;
}

struct Tally {
  int passed = 0, refused = 0;
  std::string refusals;
};

void runAndCheck(const std::string& path, const RunOptions& base, Tally* tally) {
  plan::PlanPtr p = plan::loadPlanFile(path);
  // Variable-size plans take per-peer counts, not one size: the [alltoallv] cases run them.
  if (p->header.variableSizes) return;
  RunOptions opt = base;
  // A requested size outside the plan's message-size range becomes the smallest size it serves.
  if (opt.messageBytes < p->header.minMessageSize || opt.messageBytes > p->header.maxMessageSize) opt.messageBytes = 0;
  if (opt.messageBytes == 0) opt.messageBytes = messageSizeFor(*p, 5);
  if (opt.messageBytes == 0) opt.messageBytes = messageSizeFor(*p, 1);
  INFO(path << " message " << opt.messageBytes << " bytes");
  REQUIRE(opt.messageBytes > 0);
  RunResult r = runPlan(world(static_cast<int>(p->ranks.size())), p, opt);
  INFO("in " << r.inputBytes << " out " << r.outputBytes << "\n" << r.error << r.report);
  if (r.refused) {
    // Refused before running, with the reason (e.g. more blocks than the GPU holds at once).
    ++tally->refused;
    tally->refusals += baseName(path) + ": " + r.error.substr(0, 300) + "\n";
    return;
  }
  REQUIRE(r.error.empty());
  if (baseName(path) != kRacy) REQUIRE(r.mismatches == 0);
  ++tally->passed;
}

void report(const char* what, const Tally& t) {
  std::printf("[gpu] %s: %d passed, %d refused\n%s", what, t.passed, t.refused, t.refusals.c_str());
}

}  // namespace

TEST_CASE("GPU backend: every preset, ranks as threads on one GPU", "[gpu][presets]") {
  auto files = jsonFiles(planDir());
  REQUIRE(files.size() > 10);
  Tally t;
  for (const auto& f : files) runAndCheck(f, RunOptions{}, &t);
  report("presets", t);
  CHECK(t.passed >= static_cast<int>(files.size()) / 2);
}

TEST_CASE("GPU backend: any count on every preset", "[gpu][anycount]") {
  // docs/plan-core.md "Any count": the binding stages the call's parts at the
  // plan's padded pitch (cudaMemcpy2DAsync in and out); only the call's bytes
  // reach the user, checked against the reference.
  auto files = jsonFiles(planDir());
  REQUIRE(files.size() > 10);
  Tally t;
  for (const auto& f : files) {
    plan::PlanPtr p = plan::loadPlanFile(f);
    const plan::Collective c = p->header.collective;
    const bool nParts = c == plan::Collective::AllGather || c == plan::Collective::ReduceScatter ||
                        c == plan::Collective::AllToAll;  // the message is the whole n-part buffer
    const struct {
      DataType dtype;
      uint64_t count;
    } calls[] = {{DataType::Float32, 3}, {DataType::Float32, 1001}, {DataType::Int8, 5}};
    for (const auto& call : calls) {
      RunOptions opt;
      opt.dtype = call.dtype;
      opt.iterations = 1;
      opt.messageBytes = call.count * dataTypeSize(call.dtype) * (nParts ? p->ranks.size() : 1);
      if (opt.messageBytes < p->header.minMessageSize || opt.messageBytes > p->header.maxMessageSize) continue;
      runAndCheck(f, opt, &t);
    }
  }
  report("any count", t);
  CHECK(t.passed >= static_cast<int>(files.size()) / 2);
}

TEST_CASE("GPU backend: every reference plan, ranks as threads", "[gpu][corpus]") {
  auto files = jsonFiles(corpusDir() + "/mscclpp/committed");
  auto gen = jsonFiles(corpusDir() + "/mscclpp/generated");
  files.insert(files.end(), gen.begin(), gen.end());
  REQUIRE(files.size() >= 60);
  Tally t;
  for (const auto& f : files) {
    if (kSkip.count(baseName(f))) continue;
    runAndCheck(f, RunOptions{}, &t);
  }
  report("reference corpus", t);
}

TEST_CASE("GPU backend: every dtype x op on LL and simple allreduce", "[gpu][dtypes]") {
  const DataType types[] = {DataType::Int8,    DataType::Uint8,    DataType::Int32,      DataType::Uint32,
                            DataType::Int64,   DataType::Uint64,   DataType::Float16,    DataType::Float32,
                            DataType::Float64, DataType::BFloat16, DataType::Float8E4M3, DataType::Float8E5M2};
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                          ReduceOp::Min, ReduceOp::Avg,  ReduceOp::PreMulSum};
  for (const char* name : {"allreduce_ll_n4_oop.json", "allreduce_allpairs_n2_ip.json"}) {
    for (DataType d : types) {
      if (!exec::gpuHasDtype(d)) continue;
      for (ReduceOp op : ops) {
        RunOptions opt;
        opt.dtype = d;
        opt.op = op;
        opt.iterations = 1;
        opt.messageBytes = 64 * 1024;
        INFO(name << " " << dataTypeName(d) << " " << reduceOpName(op));
        Tally t;
        runAndCheck(planDir() + "/" + name, opt, &t);
        REQUIRE(t.refused == 0);
      }
    }
  }
}

TEST_CASE("GPU backend: back-to-back LL launches, no host sync", "[gpu][ll]") {
  for (const char* name : {"allreduce_ll_n8_ip.json", "allgather_ll_n4_oop.json", "allreduce_ll_n2_oop.json"}) {
    for (PacketType packet : {PacketType::LL16, PacketType::LL8}) {
      RunOptions opt;
      opt.backToBack = 50;
      opt.iterations = 2;
      opt.packet = packet;
      opt.messageBytes = 32 * 1024;
      INFO(name << (packet == PacketType::LL8 ? " LL8" : " LL16"));
      Tally t;
      runAndCheck(planDir() + "/" + name, opt, &t);
      REQUIRE(t.refused == 0);
    }
  }
}

TEST_CASE("GPU backend: CUDA-graph capture and replay", "[gpu][graph]") {
  for (const char* name : {"allreduce_ll_n4_ip.json", "allreduce_allpairs_n4_oop.json", "allgather_put_n4_oop.json",
                           "reducescatter_put_n8_oop.json"}) {
    RunOptions opt;
    opt.graph = true;
    opt.backToBack = 4;
    opt.graphReplays = 5;
    opt.iterations = 2;
    opt.op = ReduceOp::Avg;
    opt.messageBytes = 256 * 1024;
    INFO(name);
    Tally t;
    runAndCheck(planDir() + "/" + name, opt, &t);
    REQUIRE(t.refused == 0);
  }
}

TEST_CASE("GPU backend: in-place calls", "[gpu][inplace]") {
  for (const char* name : {"allreduce_ll_n4_ip.json", "allreduce_rsag_n4_ip.json", "allreduce_allpairs_n2_oop.json"}) {
    RunOptions opt;
    opt.inPlaceCall = true;
    opt.iterations = 2;
    opt.messageBytes = 128 * 1024;
    INFO(name);
    Tally t;
    runAndCheck(planDir() + "/" + name, opt, &t);
    REQUIRE(t.refused == 0);
  }
}

TEST_CASE("GPU backend: capturing a call with no context is refused", "[gpu][graph]") {
  GpuRanks& w = world(2);
  plan::PlanPtr p = plan::loadPlanFile(planDir() + "/allreduce_ll_n2_oop.json");
  const uint64_t bytes = 4096 * 3;  // a size no other test used: no context yet
  std::string err = onRanks(2, [&](int r) {
    cudaStream_t s = w.stream(r);
    GPUTEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    std::string what;
    try {
      w.executor(r).execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, s);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::NotSupported) what = e.what();
    }
    cudaGraph_t g = nullptr;
    GPUTEST_CUDA(cudaStreamEndCapture(s, &g));
    size_t nodes = 0;
    GPUTEST_CUDA(cudaGraphGetNodes(g, nullptr, &nodes));
    GPUTEST_CUDA(cudaGraphDestroy(g));
    if (what.find("warm-up") == std::string::npos)
      throw std::runtime_error("expected NotSupported naming the warm-up, got: " + what);
    if (nodes != 0) throw std::runtime_error("the refused call enqueued " + std::to_string(nodes) + " nodes");
  });
  REQUIRE(err == "");
}

// Run under compute-sanitizer too: ranks do not wait on each other here, so
// this set also runs where a tool serialises kernels.
TEST_CASE("GPU backend: op lists in and out of shared memory", "[gpu][sanitize]") {
  // Blocks copy (a thread block group of 3), reduce, and pack/unpack LL packets
  // through scratch.
  const char* text = R"({"name": "one_rank_ops", "collective": "custom", "protocol": "LL", "inplace": false,
    "num_threads_per_block": 256, "buffer_alignment": 16,
    "gpus": [{"id": 0, "input_chunks": 4, "output_chunks": 4, "scratch_chunks": 1,
      "channels": [], "remote_buffers": [], "semaphores": [],
      "threadblocks": [
        {"id": 0, "channels": [], "ops": [{"name": "copy", "src_buff": [{"type": "i", "index": 0, "size": 1}],
          "dst_buff": [{"type": "o", "index": 0, "size": 1}], "tbg_info": {"tb_id": 0, "tbg_size": 3}}]},
        {"id": 1, "channels": [], "ops": [{"name": "copy", "src_buff": [{"type": "i", "index": 0, "size": 1}],
          "dst_buff": [{"type": "o", "index": 0, "size": 1}], "tbg_info": {"tb_id": 1, "tbg_size": 3}}]},
        {"id": 2, "channels": [], "ops": [{"name": "copy", "src_buff": [{"type": "i", "index": 0, "size": 1}],
          "dst_buff": [{"type": "o", "index": 0, "size": 1}], "tbg_info": {"tb_id": 2, "tbg_size": 3}}]},
        {"id": 3, "channels": [], "ops": [{"name": "re", "reduce_op": "sum",
          "src_buff": [{"type": "i", "index": 1, "size": 1}, {"type": "i", "index": 2, "size": 1}],
          "dst_buff": [{"type": "o", "index": 1, "size": 1}]}]},
        {"id": 4, "channels": [], "ops": [
          {"name": "cpkt", "src_buff": [{"type": "i", "index": 3, "size": 1}],
           "dst_buff": [{"type": "s", "index": 0, "size": 1}]},
          {"name": "upkt", "src_buff": [{"type": "s", "index": 0, "size": 1}],
           "dst_buff": [{"type": "o", "index": 3, "size": 1}]}]}
      ]}]})";
  plan::PlanPtr p = plan::loadPlanJson(text, "one_rank_ops.json");
  GpuRanks& w = world(1);
  const uint64_t bytes = 4 * 4096;
  std::vector<float> in(bytes / 4), out(bytes / 4, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97) + 0.5f;
  std::string err = onRanks(1, [&](int r) {
    cudaStream_t s = w.stream(r);
    GPUTEST_CUDA(cudaMemcpyAsync(w.send(r), in.data(), bytes, cudaMemcpyHostToDevice, s));  // ordered before the calls
    for (int it = 0; it < 3; ++it) {  // LL flags advance across launches
      GPUTEST_CUDA(cudaMemsetAsync(w.recv(r), 0xA5, bytes, s));
      w.executor(r).execute(r, w.send(r), w.recv(r), bytes, bytes, DataType::Float32, p, s);
      GPUTEST_CUDA(cudaStreamSynchronize(s));
    }
    GPUTEST_CUDA(cudaMemcpy(out.data(), w.recv(r), bytes, cudaMemcpyDeviceToHost));
  });
  REQUIRE(err == "");
  const size_t chunk = in.size() / 4;
  for (size_t i = 0; i < chunk; ++i) {
    INFO("element " << i);
    REQUIRE(out[i] == in[i]);                                      // copy by a thread block group
    REQUIRE(out[chunk + i] == in[chunk + i] + in[2 * chunk + i]);  // re
    REQUIRE(out[3 * chunk + i] == in[3 * chunk + i]);              // cpkt + upkt
  }
}

// NVLS on this GPU alone: ncclMemAlloc-style memory (cuMemCreate, shareable,
// at the multicast granularity) binds to a one-member multicast team, and a
// one-rank plan reduces and stores through it (multimem on sm_90 when
// bound). A GPU without multicast gets cudaMalloc-like refusals: skipped.
TEST_CASE("GPU backend: NVLS binds bindable memory", "[gpu][nvls]") {
  GpuRanks& w = world(1);
  const uint64_t bytes = 2u << 20;
  std::string why;
  char* send = static_cast<char*>(detail::allocateBindable(bytes, w.device(0), &why));
  if (send == nullptr) {
    WARN("no NVLS on this GPU: " << why);
    return;
  }
  char* recv = static_cast<char*>(detail::allocateBindable(bytes, w.device(0), &why));
  REQUIRE(recv != nullptr);
  {
    std::shared_ptr<detail::NvlsBinding> b = detail::NvlsBinding::tryCreate(w.comm(0), {0}, 0, bytes, 1 << 29, send);
    REQUIRE(b != nullptr);
    CHECK(b->multicastPointer() != nullptr);
  }
  const char* text = R"({"name": "nvls_one_rank", "collective": "custom", "protocol": "Simple", "inplace": false,
    "num_threads_per_block": 1024, "buffer_alignment": 16,
    "gpus": [{"id": 0, "input_chunks": 1, "output_chunks": 1, "scratch_chunks": 0,
      "channels": [{"channel_type": "switch", "buffer_type": "i", "rank_groups": [{"size": 1, "ranks": [0]}]},
                   {"channel_type": "switch", "buffer_type": "o", "rank_groups": [{"size": 1, "ranks": [0]}]}],
      "remote_buffers": [], "semaphores": [],
      "threadblocks": [{"id": 0, "channels": [{"channel_type": "switch", "channel_ids": [0, 1]}], "ops": [
        {"name": "glre", "src_buff": [{"switch_channel_id": 0, "index": 0, "size": 1}],
         "dst_buff": [{"type": "o", "index": 0, "size": 1}], "channel_type": "switch", "reduce_op": "sum"},
        {"name": "gstore", "src_buff": [{"type": "o", "index": 0, "size": 1}],
         "dst_buff": [{"switch_channel_id": 1, "index": 0, "size": 1}], "channel_type": "switch"}]}]}]})";
  plan::PlanPtr p = plan::loadPlanJson(text, "nvls_one_rank.json");
  std::vector<float> in(bytes / 4), out(bytes / 4, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 89) + 0.25f;
  std::string err = onRanks(1, [&](int r) {
    GPUTEST_CUDA(cudaMemcpy(send, in.data(), bytes, cudaMemcpyHostToDevice));
    w.executor(r).execute(r, send, recv, bytes, bytes, DataType::Float32, p, w.stream(r));
    GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
    GPUTEST_CUDA(cudaMemcpy(out.data(), recv, bytes, cudaMemcpyDeviceToHost));
  });
  REQUIRE(err == "");
  CHECK(out == in);
}

// Run under compute-sanitizer too.
TEST_CASE("GPU backend: two ranks sharing the GPU", "[gpu][sanitize-multi]") {
  for (const char* name : {"allreduce_ll_n2_oop.json", "allreduce_allpairs_n2_ip.json", "allgather_put_n2_oop.json",
                           "alltoall_put_n2_oop.json"}) {
    RunOptions opt;
    opt.iterations = 1;
    opt.backToBack = 2;
    opt.messageBytes = 16 * 1024;
    INFO(name);
    Tally t;
    runAndCheck(planDir() + "/" + name, opt, &t);
    REQUIRE(t.refused == 0);
  }
}

int main(int argc, char** argv) {
  if (!deviceVisible()) {
    std::printf("test_gpu_backend: no CUDA device is visible: skipping (exit 77)\n");
    return 77;
  }
  int rc = mscclpp::test::runCatchSession(argc, argv);
  worlds().clear();
  return rc;
}

namespace {

// All-to-all-v: rank s's send buffer holds its segment for each receiver in
// rank order, rank d's receive buffer each sender's segment in rank order.
// Element i of the segment s sends to d holds a value naming s, d and i.
float a2avValue(int s, int d, uint64_t i) { return static_cast<float>(s * 16 + d + (i % 1024) * 256); }
constexpr float kUntouched = -1.0f;

// A count matrix with about a third zeros, each count at most `most`.
std::vector<uint64_t> randomCounts(int n, uint64_t most, std::mt19937_64* rng) {
  std::vector<uint64_t> c(static_cast<size_t>(n) * n);
  for (uint64_t& v : c) v = (*rng)() % 3 == 0 ? 0 : (*rng)() % (most + 1);
  return c;
}

void fillA2avSend(int r, int n, const std::vector<uint64_t>& c, char* send, cudaStream_t s) {
  std::vector<float> h;
  for (int d = 0; d < n; ++d)
    for (uint64_t i = 0; i < c[r * n + d]; ++i) h.push_back(a2avValue(r, d, i));
  if (!h.empty()) GPUTEST_CUDA(cudaMemcpyAsync(send, h.data(), h.size() * 4, cudaMemcpyHostToDevice, s));
}

// Checks the receive buffer of rank r (each element times `factor`), and
// that the bytes past its segments stayed as they were: `before`, or untouched.
std::string checkA2avRecv(int r, int n, const std::vector<uint64_t>& c, const char* recv, uint64_t capacity,
                          const std::vector<float>* before = nullptr, float factor = 1.0f) {
  std::vector<float> h(capacity / 4);
  GPUTEST_CUDA(cudaMemcpy(h.data(), recv, capacity, cudaMemcpyDeviceToHost));
  uint64_t at = 0;
  for (int s = 0; s < n; ++s) {
    for (uint64_t i = 0; i < c[s * n + r]; ++i, ++at) {
      if (h[at] != factor * a2avValue(s, r, i))
        return strFormat("rank %d: element %llu of the segment from rank %d is %g, expected %g", r,
                         static_cast<unsigned long long>(i), s, h[at], factor * a2avValue(s, r, i));
    }
  }
  for (uint64_t k = at; k < h.size(); ++k) {
    if (h[k] != (before ? (*before)[k] : kUntouched))
      return strFormat("rank %d: element %llu past its segments was written", r, static_cast<unsigned long long>(k));
  }
  return "";
}

void resetA2avRecv(char* recv, uint64_t capacity, cudaStream_t s) {
  std::vector<float> h(capacity / 4, kUntouched);
  GPUTEST_CUDA(cudaMemcpyAsync(recv, h.data(), capacity, cudaMemcpyHostToDevice, s));
  GPUTEST_CUDA(cudaStreamSynchronize(s));
}

// How runA2av calls: in place (the receive buffer is the send buffer too),
// and the op; premulsum multiplies every element by `scalar`.
struct A2avCall {
  bool inPlace = false;
  ReduceOp op = ReduceOp::Sum;
  float scalar = 1.0f;
  bool publicApi = false;  // through Executor::execute with an ExecutionPlan
};

// Counts in host or device memory, each call checked against the reference.
std::string runA2av(const std::string& name, int calls, bool onDevice, uint64_t seed, const A2avCall& how = {}) {
  const plan::PlanPtr p = plan::loadPlanFile(planDir() + "/" + name);
  const ExecutionPlan publicPlan(planDir() + "/" + name);
  const int n = static_cast<int>(p->ranks.size());
  GpuRanks& w = world(n);
  const uint64_t capacity = 256 * 1024;
  const uint64_t most = std::min<uint64_t>(3000, p->header.slotBytes > 0 ? p->header.slotBytes / 4 : 3000);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> counts;
  for (int k = 0; k < calls; ++k) counts.push_back(randomCounts(n, most, &rng));
  ThreadBarrier barrier(n);
  return onRanks(n, [&](int r) {
    cudaStream_t s = w.stream(r);
    uint64_t* dev = nullptr;
    GPUTEST_CUDA(cudaMalloc(&dev, n * n * sizeof(uint64_t)));
    std::string problem;
    for (int k = 0; k < calls && problem.empty(); ++k) {
      const std::vector<uint64_t>& c = counts[k];
      char* send = how.inPlace ? w.recv(r) : w.send(r);
      resetA2avRecv(w.recv(r), capacity, s);
      fillA2avSend(r, n, c, send, s);
      // In place, the bytes past the received segments keep what was sent from there.
      std::vector<float> before(capacity / 4, kUntouched);
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      if (how.inPlace) GPUTEST_CUDA(cudaMemcpy(before.data(), send, capacity, cudaMemcpyDeviceToHost));
      SplitSizes splits;
      splits.counts = c.data();
      if (onDevice) {
        GPUTEST_CUDA(cudaMemcpyAsync(dev, c.data(), c.size() * 8, cudaMemcpyHostToDevice, s));
        splits.counts = dev;
        splits.onDevice = true;
      }
      barrier.arriveAndWait();
      if (how.publicApi) {
        w.executor(r).execute(r, send, w.recv(r), capacity, capacity, DataType::Float32, publicPlan, splits, s,
                              PacketType::LL16, how.op, &how.scalar);
      } else {
        auto refused = w.executor(r).tryExecuteVariable(r, send, w.recv(r), capacity, capacity, DataType::Float32, p,
                                                        splits, s, PacketType::LL16, how.op, &how.scalar);
        if (refused) throw std::runtime_error("refused: " + *refused);
      }
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      const float factor = how.op == ReduceOp::PreMulSum ? how.scalar : 1.0f;
      problem = checkA2avRecv(r, n, c, w.recv(r), capacity, &before, factor);
      barrier.arriveAndWait();
    }
    GPUTEST_CUDA(cudaFree(dev));
    if (!problem.empty()) throw std::runtime_error(problem);
  });
}

}  // namespace

TEST_CASE("GPU backend: all-to-all-v with random splits", "[gpu][alltoallv]") {
  for (const char* name : {"alltoallv_direct_n2_oop.json", "alltoallv_direct_n4_oop.json", "alltoallv_ll_n2_oop.json",
                           "alltoallv_ll_n4_oop.json"}) {
    INFO(name);
    CHECK(runA2av(name, 3, false, 7) == "");
    CHECK(runA2av(name, 3, true, 11) == "");
  }
}

TEST_CASE("GPU backend: all-to-all-v graph replays new device splits", "[gpu][alltoallv][graph]") {
  for (const char* name : {"alltoallv_direct_n4_oop.json", "alltoallv_ll_n2_oop.json"}) {
    INFO(name);
    const plan::PlanPtr p = plan::loadPlanFile(planDir() + "/" + name);
    const int n = static_cast<int>(p->ranks.size());
    GpuRanks& w = world(n);
    const uint64_t capacity = 256 * 1024;
    const uint64_t most = std::min<uint64_t>(2000, p->header.slotBytes / 4);
    std::mt19937_64 rng(5);
    std::vector<std::vector<uint64_t>> counts;
    for (int k = 0; k < 4; ++k) counts.push_back(randomCounts(n, most, &rng));
    ThreadBarrier barrier(n);
    std::string err = onRanks(n, [&](int r) {
      cudaStream_t s = w.stream(r);
      uint64_t* dev = nullptr;
      GPUTEST_CUDA(cudaMalloc(&dev, n * n * sizeof(uint64_t)));
      SplitSizes splits;
      splits.counts = dev;
      splits.onDevice = true;
      // The warm-up call builds the context with the first counts; capture follows.
      GPUTEST_CUDA(cudaMemcpyAsync(dev, counts[0].data(), n * n * 8, cudaMemcpyHostToDevice, s));
      resetA2avRecv(w.recv(r), capacity, s);
      fillA2avSend(r, n, counts[0], w.send(r), s);
      barrier.arriveAndWait();
      auto refused = w.executor(r).tryExecuteVariable(r, w.send(r), w.recv(r), capacity, capacity, DataType::Float32, p,
                                                      splits, s);
      if (refused) throw std::runtime_error("refused: " + *refused);
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      std::string problem = checkA2avRecv(r, n, counts[0], w.recv(r), capacity);
      cudaGraph_t g = nullptr;
      GPUTEST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      refused = w.executor(r).tryExecuteVariable(r, w.send(r), w.recv(r), capacity, capacity, DataType::Float32, p,
                                                 splits, s);
      GPUTEST_CUDA(cudaStreamEndCapture(s, &g));
      if (refused) throw std::runtime_error("capture refused: " + *refused);
      cudaGraphExec_t exec = nullptr;
      GPUTEST_CUDA(cudaGraphInstantiate(&exec, g, 0));
      barrier.arriveAndWait();
      for (int k = 1; k < 4 && problem.empty(); ++k) {
        // New splits written into the captured buffer, then a replay.
        GPUTEST_CUDA(cudaMemcpyAsync(dev, counts[k].data(), n * n * 8, cudaMemcpyHostToDevice, s));
        resetA2avRecv(w.recv(r), capacity, s);
        fillA2avSend(r, n, counts[k], w.send(r), s);
        barrier.arriveAndWait();
        GPUTEST_CUDA(cudaGraphLaunch(exec, s));
        GPUTEST_CUDA(cudaStreamSynchronize(s));
        problem = checkA2avRecv(r, n, counts[k], w.recv(r), capacity);
        barrier.arriveAndWait();
      }
      GPUTEST_CUDA(cudaGraphExecDestroy(exec));
      GPUTEST_CUDA(cudaGraphDestroy(g));
      GPUTEST_CUDA(cudaFree(dev));
      if (!problem.empty()) throw std::runtime_error(problem);
    });
    CHECK(err == "");
  }
}

TEST_CASE("GPU backend: device splits past a buffer fail the call", "[gpu][alltoallv]") {
  const plan::PlanPtr p = plan::loadPlanFile(planDir() + "/alltoallv_direct_n2_oop.json");
  GpuRanks w(2, 1u << 20);  // its own world: the failure must not reach the other tests'
  const uint64_t capacity = 64 * 1024;
  // Each rank's segment to the other needs 4 MiB of a 64 KiB buffer.
  const std::vector<uint64_t> counts = {16, 1u << 20, 1u << 20, 16};
  std::string err = onRanks(2, [&](int r) {
    cudaStream_t s = w.stream(r);
    uint64_t* dev = nullptr;
    GPUTEST_CUDA(cudaMalloc(&dev, counts.size() * 8));
    GPUTEST_CUDA(cudaMemcpyAsync(dev, counts.data(), counts.size() * 8, cudaMemcpyHostToDevice, s));
    resetA2avRecv(w.recv(r), capacity, s);
    SplitSizes splits;
    splits.counts = dev;
    splits.onDevice = true;
    auto refused =
        w.executor(r).tryExecuteVariable(r, w.send(r), w.recv(r), capacity, capacity, DataType::Float32, p, splits, s);
    if (refused) throw std::runtime_error("refused: " + *refused);
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    std::string message;
    const bool failed = w.executor(r).pollAsyncError(&message);
    std::vector<float> h(capacity / 4);
    GPUTEST_CUDA(cudaMemcpy(h.data(), w.recv(r), capacity, cudaMemcpyDeviceToHost));
    GPUTEST_CUDA(cudaFree(dev));
    // Both ranks fail; the first to tell the other names its own segment on both.
    const std::string mine = strFormat("could not place the segment rank %d sends to rank %d", r, 1 - r);
    const std::string theirs = strFormat("could not place the segment rank %d sends to rank %d", 1 - r, r);
    if (!failed || (message.find(mine) == std::string::npos && message.find(theirs) == std::string::npos))
      throw std::runtime_error("expected a failure naming \"" + mine + "\" or its peer's, got: " + message);
    for (float v : h) {
      if (v != kUntouched) throw std::runtime_error("the failed call wrote the receive buffer");
    }
  });
  CHECK(err == "");
}

namespace {

// Every rank calls all-to-all-v with 100 elements per pair, the last rank
// with a send buffer of 16 bytes. Returns each rank's error text (the
// call's, else its context's asynchronous one) and milliseconds to it.
std::vector<std::pair<std::string, double>> runOverrun(int n, bool onDevice) {
  const plan::PlanPtr p = plan::loadPlanFile(planDir() + strFormat("/alltoallv_direct_n%d_oop.json", n));
  GpuRanks w(n, 1u << 20);  // its own world: the failure must not reach the other tests'
  const uint64_t capacity = 64 * 1024;
  const std::vector<uint64_t> counts(static_cast<size_t>(n) * n, 100);
  std::vector<std::pair<std::string, double>> out(n);
  ThreadBarrier barrier(n);
  std::string err = onRanks(n, [&](int r) {
    cudaStream_t s = w.stream(r);
    uint64_t* dev = nullptr;
    GPUTEST_CUDA(cudaMalloc(&dev, counts.size() * 8));
    GPUTEST_CUDA(cudaMemcpyAsync(dev, counts.data(), counts.size() * 8, cudaMemcpyHostToDevice, s));
    GPUTEST_CUDA(cudaStreamSynchronize(s));
    SplitSizes splits;
    splits.counts = onDevice ? dev : counts.data();
    splits.onDevice = onDevice;
    const uint64_t sendBytes = r == n - 1 ? 16 : capacity;
    barrier.arriveAndWait();
    const auto start = std::chrono::steady_clock::now();
    std::string text;
    try {
      auto refused = w.executor(r).tryExecuteVariable(r, w.send(r), w.recv(r), sendBytes, capacity, DataType::Float32,
                                                      p, splits, s);
      if (refused) text = "refused: " + *refused;
      GPUTEST_CUDA(cudaStreamSynchronize(s));
    } catch (const std::exception& e) {
      text = e.what();
    }
    // The failing rank looks at its launch only once the peers' ended: its
    // call monitor told them, not a host call of its own.
    if (r == n - 1) barrier.arriveAndWait();
    if (text.empty() && !w.executor(r).pollAsyncError(&text)) text = "the call succeeded";
    out[r] = {text, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count()};
    if (r != n - 1) barrier.arriveAndWait();
    GPUTEST_CUDA(cudaFree(dev));
  });
  if (!err.empty()) out.push_back({err, 0});
  return out;
}

}  // namespace

TEST_CASE("GPU backend: one rank's split overrun fails every rank", "[gpu][alltoallv]") {
  for (int n : {2, 4}) {
    for (bool onDevice : {true, false}) {
      INFO(n << " ranks, counts on the device: " << onDevice);
      const auto out = runOverrun(n, onDevice);
      REQUIRE(out.size() == static_cast<size_t>(n));
      // The last rank's own segments need 400 bytes per peer of its 16; the
      // device names the first segment its kernel could not place.
      const std::string named = onDevice ? strFormat("could not place the segment rank %d sends to rank", n - 1)
                                         : strFormat("rank %d: the counts need", n - 1);
      for (int r = 0; r < n; ++r) {
        INFO("rank " << r << " after " << out[r].second << " ms: " << out[r].first);
        CHECK(out[r].first.find(named) != std::string::npos);
        if (!onDevice) CHECK(out[r].first.find(strFormat("rank %d sends 100, 100", n - 1)) != std::string::npos);
        if (r != n - 1) CHECK(out[r].second < 1000);  // the communicator's deadline is 30 s
      }
    }
  }
}

TEST_CASE("GPU backend: in-place all-to-all-v calls run", "[gpu][alltoallv]") {
  A2avCall inPlace;
  inPlace.inPlace = true;
  for (const char* name :
       {"alltoallv_direct_n2_oop.json", "alltoallv_direct_n4_oop.json", "alltoallv_ll_n4_oop.json"}) {
    INFO(name);
    CHECK(runA2av(name, 3, false, 13, inPlace) == "");
    CHECK(runA2av(name, 3, true, 17, inPlace) == "");
  }
}

TEST_CASE("GPU backend: avg and premulsum on all-to-all-v run", "[gpu][alltoallv]") {
  // All-to-all-v reduces nothing: avg divides nothing, premulsum scales what is sent.
  A2avCall avg;
  avg.op = ReduceOp::Avg;
  A2avCall premul;
  premul.op = ReduceOp::PreMulSum;
  premul.scalar = 3.0f;
  A2avCall premulInPlace = premul;
  premulInPlace.inPlace = true;
  A2avCall premulPublic = premul;
  premulPublic.publicApi = true;
  for (const char* name : {"alltoallv_direct_n4_oop.json", "alltoallv_ll_n2_oop.json"}) {
    INFO(name);
    for (bool onDevice : {false, true}) {
      INFO("counts on the device: " << onDevice);
      CHECK(runA2av(name, 2, onDevice, 19, avg) == "");
      CHECK(runA2av(name, 2, onDevice, 23, premul) == "");
      CHECK(runA2av(name, 2, onDevice, 29, premulInPlace) == "");
      CHECK(runA2av(name, 2, onDevice, 31, premulPublic) == "");
    }
  }
}

namespace {

// Reduce-scatter-v: every rank sends rank d the same count c[d]; rank d's
// output is the sum (times premulsum's scalar, over n for avg) of every
// rank's segment for d. Returns the first mismatch, or every rank's refusal.
std::string runRsv(const std::string& name, bool onDevice, const A2avCall& how, uint64_t seed) {
  const plan::PlanPtr p = plan::loadPlanFile(planDir() + "/" + name);
  const int n = static_cast<int>(p->ranks.size());
  GpuRanks& w = world(n);
  const uint64_t capacity = 64 * 1024;
  const uint64_t most = std::min<uint64_t>(3000, p->header.slotBytes > 0 ? p->header.slotBytes / 4 : 3000);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> counts;
  for (int k = 0; k < 2; ++k) {
    std::vector<uint64_t> c(static_cast<size_t>(n) * n);
    for (int d = 0; d < n; ++d) {
      const uint64_t v = rng() % 4 == 0 ? 0 : rng() % (most + 1);
      for (int s = 0; s < n; ++s) c[s * n + d] = v;
    }
    counts.push_back(c);
  }
  const float factor = how.op == ReduceOp::PreMulSum ? how.scalar : 1.0f;
  const float divisor = how.op == ReduceOp::Avg ? static_cast<float>(n) : 1.0f;
  ThreadBarrier barrier(n);
  return onRanks(n, [&](int r) {
    cudaStream_t s = w.stream(r);
    uint64_t* dev = nullptr;
    GPUTEST_CUDA(cudaMalloc(&dev, n * n * sizeof(uint64_t)));
    std::string problem;
    for (size_t k = 0; k < counts.size() && problem.empty(); ++k) {
      const std::vector<uint64_t>& c = counts[k];
      resetA2avRecv(w.recv(r), capacity, s);
      fillA2avSend(r, n, c, w.send(r), s);
      GPUTEST_CUDA(cudaMemcpyAsync(dev, c.data(), c.size() * 8, cudaMemcpyHostToDevice, s));
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      SplitSizes splits;
      splits.counts = onDevice ? dev : c.data();
      splits.onDevice = onDevice;
      barrier.arriveAndWait();
      auto refused = w.executor(r).tryExecuteVariable(r, w.send(r), w.recv(r), capacity, capacity, DataType::Float32, p,
                                                      splits, s, PacketType::LL16, how.op, &how.scalar);
      if (refused) {
        problem = "refused: " + *refused;
        break;
      }
      GPUTEST_CUDA(cudaStreamSynchronize(s));
      std::vector<float> h(capacity / 4);
      GPUTEST_CUDA(cudaMemcpy(h.data(), w.recv(r), capacity, cudaMemcpyDeviceToHost));
      for (uint64_t i = 0; i < h.size() && problem.empty(); ++i) {
        float expected = kUntouched;
        if (i < c[r]) {
          float sum = 0;
          for (int q = 0; q < n; ++q) sum += factor * a2avValue(q, r, i);
          expected = sum / divisor;
        }
        if (h[i] != expected)
          problem = strFormat("rank %d: element %llu is %g, expected %g", r, static_cast<unsigned long long>(i), h[i],
                              expected);
      }
      barrier.arriveAndWait();
    }
    GPUTEST_CUDA(cudaFree(dev));
    if (!problem.empty()) throw std::runtime_error(problem);
  });
}

}  // namespace

TEST_CASE("GPU backend: reduce-scatter-v presets with random splits", "[gpu][alltoallv]") {
  A2avCall sum;
  for (const char* name : {"reducescatterv_ll_n2_oop.json", "reducescatterv_ll_n4_oop.json",
                           "reducescatterv_read_n2_oop.json", "reducescatterv_read_n4_oop.json"}) {
    INFO(name);
    CHECK(runRsv(name, false, sum, 59) == "");
    CHECK(runRsv(name, true, sum, 61) == "");
  }
}

TEST_CASE("GPU backend: reduce-scatter-v with avg and premulsum", "[gpu][alltoallv]") {
  const std::string name = "reducescatterv_ll_n2_oop.json";
  A2avCall avg, premul;
  avg.op = ReduceOp::Avg;
  premul.op = ReduceOp::PreMulSum;
  premul.scalar = 3.0f;
  CHECK(runRsv(name, false, avg, 41) == "");
  CHECK(runRsv(name, false, premul, 43) == "");
  CHECK(runRsv(name, true, premul, 47) == "");
  // Avg with device counts: the host cannot know what to divide. Every rank refuses.
  const std::string refused = runRsv(name, true, avg, 53);
  INFO(refused);
  CHECK(refused.find("rank 0: refused:") != std::string::npos);
  CHECK(refused.find("rank 1: refused:") != std::string::npos);
  CHECK(refused.find("avg on a variable-size reducescatterv plan divides the bytes its counts name") !=
        std::string::npos);
  CHECK(refused.find("pass the splits in host memory") != std::string::npos);
}
