// bench_any_count: what serving any count costs (docs/executor.md
// "Any count"). The public Executor on the CPU backend runs a default
// plan's ranks as threads of this process, float32 sum, at:
//   * aligned counts, a whole number of the plan's chunks: the exact geometry;
//   * the same counts plus one element: the parts are staged at the padded pitch.
// Each row: microseconds per call of the slowest rank, best of several
// rounds. A refused size prints its reason.
//
//   bench_any_count [--plans DIR] [--iterations K] [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/emulation/local_world_wiring.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"
#include "support/args.hpp"

using namespace mscclpp;

namespace {

struct Timing {
  double usPerCall = 0;
  std::string error;  // why the size was refused; "" when it ran
};

// Runs `iterations` calls of `count` floats per round on
// every rank. A round takes as long as its slowest rank.
Timing timeCalls(const plan::PlanPtr& plan, uint64_t count, int iterations, int rounds) {
  const int n = static_cast<int>(plan->ranks.size());
  const plan::Collective c = plan->header.collective;
  const bool manyIn =
      c == plan::Collective::ReduceScatter || c == plan::Collective::Scatter || c == plan::Collective::AllToAll;
  const bool manyOut =
      c == plan::Collective::AllGather || c == plan::Collective::Gather || c == plan::Collective::AllToAll;
  const size_t sendBytes = count * sizeof(float) * (manyIn ? n : 1);
  const size_t recvBytes = count * sizeof(float) * (manyOut ? n : 1);
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::vector<double>> seconds(rounds, std::vector<double>(n, 0));
  std::mutex m;
  Timing t;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<float> send(sendBytes / sizeof(float), 1.0f + rank), recv(recvBytes / sizeof(float), 0.0f);
      try {
        exec::RuntimeExecutor ex(wiring, Backend::Cpu);
        auto call = [&] { ex.execute(rank, send.data(), recv.data(), sendBytes, recvBytes, DataType::Float32, plan); };
        for (int i = 0; i < 3; ++i) call();  // the context is built by the first call: not timed
        for (int r = 0; r < rounds; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < iterations; ++i) call();
          seconds[r][rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(m);
        if (t.error.empty()) t.error = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  if (!t.error.empty()) return t;
  double best = 1e30;
  for (const auto& round : seconds) best = std::min(best, *std::max_element(round.begin(), round.end()));
  t.usPerCall = best / iterations * 1e6;
  return t;
}

void row(const plan::PlanPtr& plan, uint64_t count, const char* geometry, int iterations, int rounds) {
  const Timing t = timeCalls(plan, count, iterations, rounds);
  if (!t.error.empty()) {
    std::string why = t.error.substr(0, t.error.find('\n'));
    if (why.size() > 90) why = "..." + why.substr(why.size() - 87);  // the end says why
    std::printf("%-28s %9llu %-8s refused: %s\n", plan->header.name.c_str(), static_cast<unsigned long long>(count),
                geometry, why.c_str());
    return;
  }
  std::printf("%-28s %9llu %-8s %10.2f us/call\n", plan->header.name.c_str(), static_cast<unsigned long long>(count),
              geometry, t.usPerCall);
}

}  // namespace

int main(int argc, char** argv) {
  std::string plans = MSCCLPP_SOURCE_PLAN_DIR_FOR_BENCH;
  int iterations = 200, rounds = 5;
  tools::ArgParser args("bench_any_count",
                        "usage: bench_any_count [--plans DIR] [--iterations K] [--rounds R]\n"
                        "  --plans: the preset plan folder (default: plans/ of the source tree)\n"
                        "  --iterations: calls per round, 1 to 100000 (default 200); --rounds: 1 to 100 (default 5)\n");
  args.text("--plans", &plans).integer("--iterations", &iterations, 1, 100000).integer("--rounds", &rounds, 1, 100);
  if (int stop = args.parse(argc, argv); stop != tools::ArgParser::kContinue) return stop;
  // Aligned float32 counts on each plan, multiples of
  // its chunks x 16 bytes; the small ones on LL plans.
  // Two ranks, one thread per core of a small machine:
  // more spinning ranks would measure the scheduler.
  const struct {
    const char* file;
    uint64_t count;
  } cases[] = {
      {"allreduce_ll_n2_ip.json", 1024},         {"allreduce_ll_n2_oop.json", 16384},
      {"allreduce_allpairs_n2_ip.json", 262144}, {"allgather_ll_n2_oop.json", 1024},
      {"reducescatter_ll_n2_oop.json", 1024},    {"alltoall_put_n2_oop.json", 4096},
      {"broadcast_put_n2_oop_root0.json", 4096}, {"reduce_put_n2_ip_root0.json", 4096},
  };
  try {
    std::printf(
        "== any count: CPU backend, ranks as threads, float32 sum; best of %d rounds of %d calls "
        "(%u hardware threads)\n",
        rounds, iterations, std::thread::hardware_concurrency());
    std::printf("%-28s %9s %-8s %s\n", "plan", "count", "geometry", "time");
    for (const auto& c : cases) {
      plan::PlanPtr p = plan::loadPlanFile(plans + "/" + c.file);
      row(p, c.count, "aligned", iterations, rounds);
      row(p, c.count + 1, "padded", iterations, rounds);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_any_count: %s\n", e.what());
    return 1;
  }
  return 0;
}
