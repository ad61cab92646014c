// The CUDA backend on a real GPU, ranks as threads of this process sharing
// GPU 0, each with its own non-blocking stream. Every preset of plans/ and
// every reference corpus plan runs at its rank count, checked against the
// emulator's reference; so do dtype x op, back-to-back LL launches, graph
// capture and replay, and presets at counts that run padded.
// Exits 77, a Meson skip, with a message when no CUDA device is visible.
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include "catch_session.hpp"

#include "channel/bindable_memory.hpp"
#include "channel/nvls_binding.hpp"
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
  if (p->header.variableSizes) {  // a call needs per-peer counts, which runPlan does not pass
    ++tally->refused;
    tally->refusals += baseName(path) + ": variable-size plan, skipped: runPlan passes no per-peer counts\n";
    return;
  }
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
