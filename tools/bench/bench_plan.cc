// bench_plan: measures the plan core; docs/plan-core.md has the numbers.
//   bench_plan [--ranks N] [--repeat R] [--write FILE] [--plans P] [--lookups L]
// 1. Writes the N-rank all-pairs LL allreduce as MSCCL++'s compiler
//    does, about 85 MB at 64 ranks, and times three reads of it: the
//    summary a directory scan reads, one rank's part, and the full
//    validation of every rank.
// 2. Registers P plans and times cached lookups, which must not
//    allocate, and uncached selections.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "plan/plan_loader.hpp"
#include "plan/registry.hpp"
#include "support/allocation_counter.hpp"
#include "support/args.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Writes JSON the way Python's json.dump(obj, indent=2) does.
class Writer {
 public:
  std::string out;
  void open(char bracket) {
    comma();
    out += bracket;
    fresh_.push_back(true);
  }
  void close(char bracket) {
    const bool empty = fresh_.back();
    fresh_.pop_back();
    if (!empty) newline();
    out += bracket;
  }
  void key(const char* k) {
    comma();
    out += '"';
    out += k;
    out += "\": ";
    afterKey_ = true;
  }
  void value(long long v) {
    comma();
    out += std::to_string(v);
  }
  void valueU(unsigned long long v) {
    comma();
    out += std::to_string(v);
  }
  void value(const char* s) {
    comma();
    out += '"';
    out += s;
    out += '"';
  }
  void value(bool b) {
    comma();
    out += b ? "true" : "false";
  }
  void intArray(const std::vector<int>& v) {
    open('[');
    for (int x : v) value(static_cast<long long>(x));
    close(']');
  }

 private:
  void newline() {
    out += '\n';
    out.append(2 * fresh_.size(), ' ');
  }
  // Separates a new element from the previous one; nothing after a key.
  void comma() {
    if (afterKey_) {
      afterKey_ = false;
      return;
    }
    if (fresh_.empty()) return;
    if (!fresh_.back()) out += ',';
    fresh_.back() = false;
    newline();
  }
  std::vector<bool> fresh_;
  bool afterKey_ = false;
};

void localRef(Writer& w, const char* type, int index, int size) {
  w.open('{');
  w.key("type");
  w.value(type);
  w.key("index");
  w.value(static_cast<long long>(index));
  w.key("size");
  w.value(static_cast<long long>(size));
  w.close('}');
}

void remoteRef(Writer& w, int id, int index, int size) {
  w.open('{');
  w.key("buffer_id");
  w.value(static_cast<long long>(id));
  w.key("index");
  w.value(static_cast<long long>(index));
  w.key("size");
  w.value(static_cast<long long>(size));
  w.close('}');
}

// The all-pairs LL allreduce on n ranks. Rank r splits its
// input into n groups of n chunks. Threadblock j puts group
// peers[j] as packets into that peer's scratch. It reduces
// chunk n*r+j from every peer's packets and its own input,
// and sends the result as packets to every peer. For j != r
// it unpacks group j, reduced by rank j, from scratch.
std::string allPairsAllreduce(int n) {
  Writer w;
  auto pos = [](int r, int p) { return r < p ? r : r - 1; };  // r's index among p's peers
  w.open('{');
  w.key("name");
  w.value("allreduce_pkt");
  w.key("collective");
  w.value("allreduce");
  w.key("protocol");
  w.value("LL");
  w.key("inplace");
  w.value(true);
  w.key("reuse_resources");
  w.value(false);
  w.key("gpus");
  w.open('[');
  for (int r = 0; r < n; ++r) {
    std::vector<int> peers;
    for (int p = 0; p < n; ++p)
      if (p != r) peers.push_back(p);
    w.open('{');
    w.key("id");
    w.value(static_cast<long long>(r));
    w.key("input_chunks");
    w.value(static_cast<long long>(n * n));
    w.key("output_chunks");
    w.value(static_cast<long long>(n * n));
    w.key("scratch_chunks");
    w.value(static_cast<long long>(2 * n * (n - 1)));
    w.key("threadblocks");
    w.open('[');
    for (int j = 0; j < n; ++j) {
      std::vector<int> order;  // this threadblock's channel and remote buffer order
      if (j < n - 1) order.push_back(j);
      for (int k = 0; k < n - 1; ++k)
        if (k != j || j == n - 1) order.push_back(k);
      auto localIndexOf = [&](int rankLevel) {
        return static_cast<int>(std::find(order.begin(), order.end(), rankLevel) - order.begin());
      };
      w.open('{');
      w.key("id");
      w.value(static_cast<long long>(j));
      w.key("ops");
      w.open('[');
      if (j < n - 1) {
        w.open('{');
        w.key("name");
        w.value("ppkt");
        w.key("src_buff");
        w.open('[');
        localRef(w, "i", n * peers[static_cast<size_t>(j)], n);
        w.close(']');
        w.key("dst_buff");
        w.open('[');
        remoteRef(w, 0, n * pos(r, peers[static_cast<size_t>(j)]), n);
        w.close(']');
        w.key("channel_type");
        w.value("memory");
        w.close('}');
      }
      w.open('{');
      w.key("name");
      w.value("respkt");
      w.key("src_buff");
      w.open('[');
      localRef(w, "i", n * r + j, 1);
      for (int k = 0; k < n - 1; ++k) localRef(w, "s", j + n * k, 1);
      w.close(']');
      w.key("dst_buff");
      w.open('[');
      localRef(w, "i", n * r + j, 1);
      for (int t = 0; t < n - 1; ++t)
        remoteRef(w, localIndexOf(t), n * (n - 1) + n * pos(r, peers[static_cast<size_t>(t)]) + j, 1);
      w.close(']');
      w.key("channel_type");
      w.value("memory");
      w.key("reduce_op");
      w.value("sum");
      w.close('}');
      if (j != r) {  // group j arrives from rank j as packets in its scratch slot
        w.open('{');
        w.key("name");
        w.value("upkt");
        w.key("src_buff");
        w.open('[');
        localRef(w, "s", n * (n - 1) + n * pos(j, r), n);
        w.close(']');
        w.key("dst_buff");
        w.open('[');
        localRef(w, "i", n * j, n);
        w.close(']');
        w.close('}');
      }
      w.close(']');
      w.key("channels");
      w.open('[');
      w.open('{');
      w.key("channel_type");
      w.value("memory");
      w.key("channel_ids");
      w.intArray(order);
      w.close('}');
      w.close(']');
      w.key("remote_buffer_refs");
      w.open('[');
      w.open('{');
      w.key("access_channel_type");
      w.value("memory");
      w.key("remote_buffer_ids");
      w.intArray(order);
      w.close('}');
      w.close(']');
      w.close('}');
    }
    w.close(']');
    w.key("channels");
    w.open('[');
    w.open('{');
    w.key("channel_type");
    w.value("memory");
    w.key("connected_to");
    w.intArray(peers);
    w.close('}');
    w.close(']');
    w.key("remote_buffers");
    w.open('[');
    for (int p : peers) {
      w.open('{');
      w.key("rank");
      w.value(static_cast<long long>(p));
      w.key("type");
      w.value("s");
      w.key("access_channel_types");
      w.open('[');
      w.value("memory");
      w.close(']');
      w.close('}');
    }
    w.close(']');
    w.key("semaphores");
    w.open('[');
    w.close(']');
    w.close('}');
  }
  w.close(']');
  w.key("num_threads_per_block");
  w.value(1024ll);
  w.key("use_double_scratch_buffer");
  w.value(true);
  w.key("buffer_alignment");
  w.value(16ll);
  w.key("min_message_size");
  w.value(0ll);
  w.key("max_message_size");
  w.valueU(18446744073709551615ull);
  w.close('}');
  return w.out;
}

std::string smallPlan(const std::string& name, int nRanks, uint64_t min, uint64_t max) {
  std::string gpus;
  for (int r = 0; r < nRanks; ++r) {
    gpus += (r ? "," : "") + std::string("{\"id\":") + std::to_string(r) +
            ",\"input_chunks\":2,\"output_chunks\":2,\"scratch_chunks\":0,\"channels\":[],\"remote_buffers\":[],"
            "\"threadblocks\":[{\"id\":0,\"channels\":[],\"ops\":[{\"name\":\"re\",\"reduce_op\":\"sum\","
            "\"src_buff\":[{\"type\":\"i\",\"index\":0,\"size\":1},{\"type\":\"i\",\"index\":1,\"size\":1}],"
            "\"dst_buff\":[{\"type\":\"o\",\"index\":0,\"size\":1}]}]}]}";
  }
  return "{\"name\":\"" + name + "\",\"collective\":\"allreduce\",\"protocol\":\"Simple\",\"inplace\":true," +
         "\"min_message_size\":" + std::to_string(min) + ",\"max_message_size\":" + std::to_string(max) +
         ",\"gpus\":[" + gpus + "]}";
}

template <class F>
std::vector<double> timeRuns(int repeat, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto t = Clock::now();
    f();
    ms.push_back(msSince(t));
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

void report(const char* what, const std::vector<double>& ms) {
  std::printf("  %-46s best %8.1f ms   median %8.1f ms   (%zu runs)\n", what, ms.front(), ms[ms.size() / 2], ms.size());
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 64, repeat = 5, plans = 1000;
  long lookups = 1000000;
  std::string file;
  mscclpp::tools::ArgParser args(
      "bench_plan",
      "usage: bench_plan [--ranks N] [--repeat R] [--write FILE] [--plans P] [--lookups L]\n"
      "  --ranks: 2 to 1024 (default 64); --repeat: 1 to 1000 (default 5); --write: keep the generated plan there\n"
      "  --plans: plans registered for the selection timings, 1 to 1000000 (default 1000); --lookups: default "
      "1000000\n");
  args.integer("--ranks", &ranks, 2, 1024)
      .integer("--repeat", &repeat, 1, 1000)
      .text("--write", &file)
      .integer("--plans", &plans, 1, 1000000)
      .integer("--lookups", &lookups, 1L, 1000000000000L);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  using namespace mscclpp::plan;
  const bool keep = !file.empty();
  if (!keep) file = "/tmp/bench_plan_allpairs_" + std::to_string(getpid()) + ".json";

  std::printf("plan loading: %d-rank all-pairs LL allreduce\n", ranks);
  auto t = Clock::now();
  const std::string text = allPairsAllreduce(ranks);
  std::printf("  generated %.1f MB of JSON in %.0f ms\n", text.size() / 1e6, msSince(t));
  FILE* f = std::fopen(file.c_str(), "wb");
  if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "bench_plan: cannot write %s\n", file.c_str());
    return 1;
  }
  // Warms the page cache, and fails loudly if the plan is invalid.
  PlanPtr checkPlan = loadPlanFile(file, LoadOptions{0});
  size_t ops = 0;
  for (const auto& tb : checkPlan->ranks[0].threadblocks) ops += tb.ops.size();
  std::printf("  rank 0: %zu threadblocks, %zu ops\n", checkPlan->ranks[0].threadblocks.size(), ops);
  report("summary (registry directory scan)", timeRuns(repeat, [&] { loadPlanSummaryFile(file); }));
  report("rank 0's part (LoadOptions::onlyRank = 0)", timeRuns(repeat, [&] { loadPlanFile(file, LoadOptions{0}); }));
  report(("rank " + std::to_string(ranks - 1) + "'s part").c_str(),
         timeRuns(repeat, [&] { loadPlanFile(file, LoadOptions{ranks - 1}); }));
  report("rank 0's part from memory (no file read)",
         timeRuns(repeat, [&] { loadPlanJson(text, "mem", LoadOptions{0}); }));
  report("full validation, every rank", timeRuns(std::max(1, repeat / 2), [&] { loadPlanFile(file); }));
  if (!keep) std::remove(file.c_str());

  std::printf("selection: %d registered plans\n", plans);
  Registry registry(std::vector<std::string>{});
  t = Clock::now();
  for (int i = 0; i < plans; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "plan%05d", i);
    const uint64_t min = static_cast<uint64_t>(i / 10) * 65536;
    registry.registerJson(smallPlan(name, 2 + i % 10, min, min + 65535), name, {});
  }
  std::printf("  registered in %.0f ms\n", msSince(t));
  SelectRequest request;
  request.collective = Collective::AllReduce;
  request.worldSize = 2 + 7 % 10;
  request.nRanksPerNode = request.worldSize;
  request.messageBytes = static_cast<uint64_t>((plans - 3) / 10) * 65536 + 64;
  request.inPlace = true;
  request.dtype = 7;
  request.redOp = 0;
  const SelectionPtr chosen = registry.select(request);
  std::printf("  chose '%s'\n", chosen->name.c_str());
  mscclpp::support::AllocationCounter counter;
  t = Clock::now();
  bool same = true;
  for (long i = 0; i < lookups; ++i) same &= registry.select(request) == chosen;
  const double hotMs = msSince(t);
  const uint64_t allocations = counter.stop();
  std::printf("  cached lookup:   %7.1f ns per lookup (%ld lookups), %llu allocations%s\n", hotMs * 1e6 / lookups,
              lookups, static_cast<unsigned long long>(allocations), same ? "" : " (WRONG RESULT)");
  const int cold = 20000;
  t = Clock::now();
  for (int i = 0; i < cold; ++i) {
    request.messageBytes =
        static_cast<uint64_t>(i % (plans / 10)) * 65536 + 16 * static_cast<uint64_t>(1 + i / (plans / 10));
    registry.select(request);
  }
  std::printf("  uncached select: %7.1f us per selection (%d distinct requests among %d plans of this world size)\n",
              msSince(t) * 1e3 / cold, cold, plans / 10);
  return same && allocations == 0 ? 0 : 1;
}
