// bench_executor: the CPU backend's numbers, which docs/executor.md records.
//   1. an 8-rank 64 MiB allreduce, allreduce_rsag_n8_ip.json by default,
//      ranks as threads and as processes: time per launch and per iteration;
//   2. per-op overhead: a one-rank plan of N small copies, N nops, N
//      sem_release and sem_acquire pairs;
//   3. a signal/wait round trip of two ranks; an 8-rank 1 KiB LL allreduce.
//
//   bench_executor [--plans DIR] [--size BYTES] [--iterations K] [--quick]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "executor/cpu/cpu_context.hpp"
#include "executor/emulation/emulator.hpp"
#include "executor/emulation/local_world.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"
#include "support/args.hpp"

using namespace mscclpp;
using json = nlohmann::json;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void emulationRow(const plan::PlanPtr& plan, uint64_t size, int iterations, bool processes) {
  exec::EmulationOptions opt;
  opt.sizeBytes = size;
  opt.iterations = iterations;
  opt.processes = processes;
  exec::EmulationResult r = exec::emulatePlan(plan, opt);
  if (!r.passed) throw Error(ErrorCode::InternalError, "benchmark run failed:\n" + r.report);
  std::printf("%-28s %-9s %10.3f MiB %5d it  %10.1f us/launch  %10.1f us/iteration (incl. input fill, poison, check)\n",
              plan->header.name.c_str(), processes ? "processes" : "threads", size / 1048576.0, iterations,
              r.launchSeconds / iterations * 1e6, r.wallSeconds / iterations * 1e6);
}

json one(const char* type, int index) { return {{"type", type}, {"index", index}, {"size", 1}}; }

// A one-rank plan whose single threadblock runs `body` n times.
plan::PlanPtr repeated(const char* name, const std::vector<json>& body, int n, int semaphores) {
  json ops = json::array();
  for (int i = 0; i < n; ++i)
    for (const json& o : body) ops.push_back(o);
  json sems = json::array();
  for (int i = 0; i < semaphores; ++i) sems.push_back({{"init_value", 0}});
  json p = {{"name", name},
            {"collective", "custom"},
            {"protocol", "Simple"},
            {"inplace", false},
            {"buffer_alignment", 16},
            {"gpus",
             {{{"id", 0},
               {"input_chunks", 1},
               {"output_chunks", 1},
               {"scratch_chunks", 0},
               {"channels", json::array()},
               {"remote_buffers", json::array()},
               {"semaphores", sems},
               {"threadblocks", {{{"id", 0}, {"ops", ops}, {"channels", json::array()}}}}}}}};
  return plan::loadPlanJson(p.dump(), std::string(name) + ".json");
}

// Average seconds per launch of a one-rank plan, after a warm-up launch.
double launchSeconds(const plan::PlanPtr& plan, int launches) {
  exec::LocalWorld world(plan, 16, 16, DataType::Float32);
  exec::CpuContext ctx(plan, 0, world.shape(0), world.resources(0), 60);
  ctx.launch(DataType::Float32, ReduceOp::Sum, PacketType::LL16, 60);
  double t0 = now();
  for (int i = 0; i < launches; ++i) ctx.launch(DataType::Float32, ReduceOp::Sum, PacketType::LL16, 60);
  return (now() - t0) / launches;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plans = MSCCLPP_SOURCE_PLAN_DIR_FOR_BENCH;
  uint64_t size = 64ull << 20;
  int iterations = 5;
  bool quick = false;
  tools::ArgParser args("bench_executor",
                        "usage: bench_executor [--plans DIR] [--size BYTES] [--iterations K] [--quick]\n"
                        "  --plans: the preset plan folder (default: plans/ of the source tree)\n"
                        "  --size: the emulated allreduce's size, e.g. 64M (default); --iterations: 1 to 100000\n"
                        "  --quick: a sixteenth of the size and fewer repetitions (a smoke run)\n");
  args.text("--plans", &plans)
      .size("--size", &size, 1)
      .integer("--iterations", &iterations, 1, 100000)
      .flag("--quick", &quick);
  if (int stop = args.parse(argc, argv); stop != tools::ArgParser::kContinue) return stop;
  try {
    std::printf("== emulation of an 8-rank allreduce (CPU backend, %u hardware threads)\n",
                std::thread::hardware_concurrency());
    for (const char* name : {"allreduce_rsag_n8_ip.json", "allreduce_allpairs_n8_ip.json"}) {
      plan::PlanPtr p = plan::loadPlanFile(plans + "/" + name);
      emulationRow(p, quick ? size / 16 : size, iterations, false);
      emulationRow(p, quick ? size / 16 : size, iterations, true);
    }
    plan::PlanPtr ll = plan::loadPlanFile(plans + "/allreduce_ll_n8_ip.json");
    emulationRow(ll, 1024, quick ? 100 : 1000, false);

    std::printf("== per-op overhead (one rank, one threadblock, 16-byte chunk)\n");
    const int n = quick ? 2000 : 20000, launches = quick ? 10 : 50;
    double base = launchSeconds(repeated("empty", {{{"name", "nop"}}}, 1, 0), quick ? 200 : 2000);
    std::printf("%-40s %8.2f us per launch\n", "launch of a 1-op plan", base * 1e6);
    struct Row {
      const char* what;
      std::vector<json> body;
      int sems;
      int opsPerRepeat;
    } rows[] = {
        {"nop", {{{"name", "nop"}}}, 0, 1},
        {"copy (16 bytes)", {{{"name", "copy"}, {"src_buff", {one("i", 0)}}, {"dst_buff", {one("o", 0)}}}}, 0, 1},
        {"re (2 x 16 bytes)",
         {{{"name", "re"},
           {"src_buff", {one("i", 0), one("o", 0)}},
           {"dst_buff", {one("o", 0)}},
           {"reduce_op", "sum"}}},
         0,
         1},
        {"sem_release + sem_acquire",
         {{{"name", "sem_release"}, {"semaphore_ids", {0}}}, {{"name", "sem_acquire"}, {"semaphore_ids", {0}}}},
         1,
         2},
    };
    for (const Row& r : rows) {
      double t = launchSeconds(repeated(r.what, r.body, n, r.sems), launches);
      std::printf("%-40s %8.1f ns per op (%d ops per launch)\n", r.what, (t - base) / (n * r.opsPerRepeat) * 1e9,
                  n * r.opsPerRepeat);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_executor: %s\n", e.what());
    return 1;
  }
  return 0;
}
