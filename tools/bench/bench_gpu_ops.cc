// Bandwidth of the executor kernel's copy, reduce and put
// ops on one GPU, against cudaMemcpy device to device;
// the target is 90% of it. Each op runs through the whole
// plan path, in a plan built here: one rank, or for put
// two ranks as threads sharing the GPU. Bandwidth counts
// bytes read plus bytes written, as cudaMemcpy's does.
//
//   bench_gpu_ops [--bytes N] [--iters N] [--write-plans DIR]
// Exits 0, 1 on an error, or 77 without a device. --write-plans writes
// the plans as JSON for mscclpp-emulate, and needs no device.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu_harness.hpp"
#include "plan/plan_loader.hpp"
#include "support/args.hpp"

using namespace mscclpp;
using namespace mscclpp::gputest;
using json = nlohmann::json;

namespace {

json ref(const char* type, int index) { return {{"type", type}, {"index", index}, {"size", 1}}; }

json tbg(int id, int size) { return {{"tb_id", id}, {"tbg_size", size}}; }

json planHeader(const char* name, int threads, json gpus) {
  return {{"name", name}, {"collective", "custom"},           {"protocol", "Simple"},  {"inplace", false},
          {"gpus", gpus}, {"num_threads_per_block", threads}, {"buffer_alignment", 16}};
}

json gpuJson(int id, int in, int out, json tbs, json channels = json::array(), json remote = json::array()) {
  return {{"id", id},
          {"input_chunks", in},
          {"output_chunks", out},
          {"scratch_chunks", 0},
          {"threadblocks", tbs},
          {"channels", channels},
          {"remote_buffers", remote},
          {"semaphores", json::array()}};
}

// copy: output[0] <- input[0]; reduce: output[0]
// <- input[0] + input[1]; put: rank 1's output[0]
// <- rank 0's input[0] through a memory channel.
json opPlanJson(const std::string& kind, int blocks, int threads) {
  json tbs = json::array();
  if (kind == "copy") {
    for (int b = 0; b < blocks; ++b)
      tbs.push_back({{"id", b},
                     {"ops",
                      {{{"name", "copy"},
                        {"src_buff", {ref("i", 0)}},
                        {"dst_buff", {ref("o", 0)}},
                        {"tbg_info", tbg(b, blocks)}}}},
                     {"channels", json::array()}});
    return planHeader("bench_copy", threads, {gpuJson(0, 1, 1, tbs)});
  }
  if (kind == "reduce") {
    for (int b = 0; b < blocks; ++b)
      tbs.push_back({{"id", b},
                     {"ops",
                      {{{"name", "re"},
                        {"src_buff", {ref("i", 0), ref("i", 1)}},
                        {"dst_buff", {ref("o", 0)}},
                        {"reduce_op", "sum"},
                        {"tbg_info", tbg(b, blocks)}}}},
                     {"channels", json::array()}});
    return planHeader("bench_reduce", threads, {gpuJson(0, 2, 1, tbs)});
  }
  // put: rank 0 writes, then signals once per block on its own
  // channel; rank 1 waits on each. An op's channel_ids index the
  // threadblock's own channel list, which names rank-level ids.
  json tbs1 = json::array();
  json ch0 = json::array(), ch1 = json::array();
  std::vector<int> peers0(blocks, 1), peers1(blocks, 0);
  ch0.push_back({{"channel_type", "memory"}, {"connected_to", peers0}});
  ch1.push_back({{"channel_type", "memory"}, {"connected_to", peers1}});
  for (int b = 0; b < blocks; ++b) {
    tbs.push_back({{"id", b},
                   {"ops",
                    {{{"name", "put"},
                      {"src_buff", {ref("i", 0)}},
                      {"dst_buff", {{{"buffer_id", 0}, {"index", 0}, {"size", 1}}}},
                      {"channel_type", "memory"},
                      {"channel_ids", {0}},
                      {"tbg_info", tbg(b, blocks)}},
                     {{"name", "nop"}},
                     {{"name", "signal"}, {"channel_type", "memory"}, {"channel_ids", {0}}}}},
                   {"channels", {{{"channel_type", "memory"}, {"channel_ids", {b}}}}},
                   {"remote_buffer_refs", {{{"access_channel_type", "memory"}, {"remote_buffer_ids", {0}}}}}});
    tbs1.push_back({{"id", b},
                    {"ops", {{{"name", "wait"}, {"channel_type", "memory"}, {"channel_ids", {0}}}}},
                    {"channels", {{{"channel_type", "memory"}, {"channel_ids", {b}}}}}});
  }
  json remote = {{{"rank", 1}, {"type", "o"}, {"access_channel_types", {"memory"}}}};
  return planHeader("bench_put", threads, {gpuJson(0, 1, 1, tbs, ch0, remote), gpuJson(1, 1, 1, tbs1, ch1)});
}

plan::PlanPtr opPlan(const std::string& kind, int blocks, int threads) {
  return plan::loadPlanJson(opPlanJson(kind, blocks, threads).dump(), "bench_" + kind + ".json");
}

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Median of `reps` timings of `iters` back-to-back calls,
// with a host barrier before and all streams synced after.
double timeCalls(GpuRanks& w, int nRanks, const plan::PlanPtr& p, uint64_t inBytes, uint64_t outBytes, int iters,
                 int reps) {
  std::vector<double> times;
  for (int rep = 0; rep < reps + 1; ++rep) {  // the first one warms up
    ThreadBarrier bar(nRanks);
    std::vector<double> t(nRanks, 0);
    std::string err = onRanks(nRanks, [&](int r) {
      bar.arriveAndWait();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i)
        w.executor(r).execute(r, w.send(r), w.recv(r), inBytes, outBytes, DataType::Float32, p, w.stream(r));
      GPUTEST_CUDA(cudaStreamSynchronize(w.stream(r)));
      t[r] = seconds(t0, std::chrono::steady_clock::now());
      bar.arriveAndWait();
    });
    if (!err.empty()) throw std::runtime_error(err);
    if (rep > 0) times.push_back(*std::max_element(t.begin(), t.end()));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] / iters;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t bytes = 256ull << 20;
  int iters = 20, reps = 5;
  std::string writePlans;
  mscclpp::tools::ArgParser args(
      "bench_gpu_ops",
      "usage: bench_gpu_ops [--bytes N] [--iters N] [--write-plans DIR]\n"
      "  --bytes: per call, at least 4K (default 256M); --iters: 1 to 100000 (default 20)\n"
      "  --write-plans: write the benchmark's plans to DIR as JSON and exit (no device needed)\n");
  args.size("--bytes", &bytes, 4096).integer("--iters", &iters, 1, 100000).text("--write-plans", &writePlans);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  if (args.given("--write-plans")) {
    for (const char* kind : {"copy", "reduce", "put"}) {
      const std::string path = writePlans + "/bench_" + kind + ".json";
      FILE* f = std::fopen(path.c_str(), "w");
      if (!f) return 1;
      std::fputs(opPlanJson(kind, 4, 256).dump(1).c_str(), f);
      std::fclose(f);
      std::printf("%s\n", path.c_str());
    }
    return 0;
  }
  if (!deviceVisible()) {
    std::printf("bench_gpu_ops: no CUDA device is visible: nothing to measure\n");
    return 77;
  }
  try {
    GPUTEST_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop{};
    GPUTEST_CUDA(cudaGetDeviceProperties(&prop, 0));
    bytes = bytes / 4096 * 4096;
    GpuRanks one(1, 2 * bytes), two(2, 2 * bytes);

    // The baseline: cudaMemcpy device to device on the same GPU.
    cudaEvent_t e0, e1;
    GPUTEST_CUDA(cudaEventCreate(&e0));
    GPUTEST_CUDA(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int rep = 0; rep < reps + 1; ++rep) {
      GPUTEST_CUDA(cudaEventRecord(e0, one.stream(0)));
      for (int i = 0; i < iters; ++i)
        GPUTEST_CUDA(cudaMemcpyAsync(one.recv(0), one.send(0), bytes, cudaMemcpyDeviceToDevice, one.stream(0)));
      GPUTEST_CUDA(cudaEventRecord(e1, one.stream(0)));
      GPUTEST_CUDA(cudaEventSynchronize(e1));
      float m = 0;
      GPUTEST_CUDA(cudaEventElapsedTime(&m, e0, e1));
      if (rep > 0) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    const double memcpyBw = 2.0 * bytes / (ms[ms.size() / 2] / 1e3 / iters) / 1e9;
    std::printf("bench_gpu_ops on %s (%d SMs), %llu MiB per call, median of %d x %d calls\n", prop.name,
                prop.multiProcessorCount, static_cast<unsigned long long>(bytes >> 20), reps, iters);
    std::printf("%-34s %10s %10s %9s\n", "op (blocks x threads)", "us/call", "GB/s", "% memcpy");
    std::printf("%-34s %10.1f %10.1f %9s\n", "cudaMemcpy D2D", ms[ms.size() / 2] * 1e3 / iters, memcpyBw, "100");

    struct Config {
      const char* kind;
      int ranks;
      double traffic;  // bytes moved per message byte
    };
    const Config configs[] = {{"copy", 1, 2.0}, {"reduce", 1, 3.0}, {"put", 2, 2.0}};
    const int sms = prop.multiProcessorCount;
    for (const Config& c : configs) {
      for (auto [blocks, threads] : {std::pair<int, int>{sms, 1024}, std::pair<int, int>{sms, 512}}) {
        // Both ranks' blocks share the GPU and must be resident at once.
        if (c.ranks == 2) blocks /= 2;
        plan::PlanPtr p = opPlan(c.kind, blocks, threads);
        const uint64_t in = std::string(c.kind) == "reduce" ? 2 * bytes : bytes;
        double s = 0;
        char label[64];
        std::snprintf(label, sizeof label, "%s %s(%d x %d)", c.kind, c.ranks == 2 ? "2 ranks " : "", blocks, threads);
        try {
          s = timeCalls(c.ranks == 1 ? one : two, c.ranks, p, in, bytes, iters, reps);
        } catch (const std::exception& e) {
          std::printf("%-34s failed: %s\n", label, e.what());
          return 1;
        }
        const double bw = c.traffic * bytes / s / 1e9;
        std::printf("%-34s %10.1f %10.1f %9.1f\n", label, s * 1e6, bw, 100.0 * bw / memcpyBw);
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}
