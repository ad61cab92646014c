// mscclpp-perf: nccl-tests' sweep through the NCCL API, an unchanged NCCL
// program: linked with the shim's libnccl.so.2, or the real NCCL preloaded.
//
//   mscclpp-perf [COLLECTIVE...|all] [-b MIN] [-e MAX] [-f FACTOR|-i STEP] [-g RANKS] [-c 0|1]
//                [-n ITERS] [-w WARMUP] [-R REPEATS] [-d TYPE] [-o OP] [-r ROOT] [--device cpu|gpu]
//
// Ranks are threads of this process, one communicator each. Columns and
// bus-bandwidth factors are nccl-tests'; time is the median of REPEATS
// runs of ITERS calls (slowest rank), with their minimum beside it.
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "perf/perf_buffers.hpp"
#include "perf/perf_collectives.hpp"
#include "support/args.hpp"

namespace mscclpp::perf {
namespace {

const char kUsage[] =
    "usage: mscclpp-perf [COLLECTIVE...|all] [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-g RANKS] [-c 0|1]\n"
    "                    [-n ITERS] [-w WARMUP] [-R REPEATS] [-d TYPE] [-o OP] [-r ROOT] [--device cpu|gpu]\n"
    "                    [--timeout S]\n"
    "  COLLECTIVE: all_reduce (default), all_gather, reduce_scatter, broadcast, reduce, alltoall, alltoallv,\n"
    "    sendrecv (alltoallv: grouped sends and receives with uneven per-peer counts, some zero, as MoE\n"
    "    token routing makes; the size is what each rank sends);\n"
    "    all: each in turn. It runs our plans through the shim's libnccl.so.2; preload the real NCCL's\n"
    "    libnccl.so.2 (LD_PRELOAD) to measure that instead.\n"
    "  -b, -e: first and last size in bytes (4K, 1M, 128M; default 32M and 32M); -f: multiply the size by\n"
    "    FACTOR (default 2), or -i: add STEP; -g: ranks, one thread each (default 2); -c: check results\n"
    "    (default 1); -n: timed calls per run (default 20); -w: warm-up calls (default 5); -R: runs, of\n"
    "    which the median and the minimum time are printed (default 5); -d: int8, uint8, int32, uint32,\n"
    "    int64, uint64, float (default), double; -o: sum (default), prod, max, min, avg; -r: root of\n"
    "    broadcast and reduce (default 0); --device: gpu buffers when built with CUDA and a GPU is visible\n"
    "    (the default then), else cpu (host buffers: the CPU backend); --timeout: seconds for the whole\n"
    "    run, then it fails (default 600).\n"
    "  Times are noisy on a shared or loaded machine: compare medians of runs made together.\n"
    "exit status: 0 when every call succeeded and no value was wrong, 1 otherwise, 2 usage error\n";

struct Options {
  std::vector<const CollInfo*> colls;
  uint64_t minBytes = 32ull << 20, maxBytes = 32ull << 20, step = 0;
  int factor = 2;
  int ranks = 2;
  int check = 1;
  int iters = 20;
  int warmup = 5;
  int repeats = 5;
  const DataType* type = nullptr;
  int op = ncclSum;
  int root = 0;
  bool gpu = false;
  double timeout = 600;
};

// Threads meet here between steps of the sweep.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t round = round_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return round_ != round; });
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int n_, arrived_ = 0;
  uint64_t round_ = 0;
};

// What the ranks report for one size and variant.
struct Shared {
  std::vector<std::vector<double>> seconds;  // [rank][repeat]: per call
  std::vector<size_t> wrong;                 // [rank]
};

std::atomic<bool> failed{false};
std::atomic<size_t> totalWrong{0};

[[noreturn]] void fail(int rank, const char* what, ncclResult_t r) {
  // The first rank to fail speaks; the process ends at once: no rank
  // is left waiting on a peer that stopped.
  if (!failed.exchange(true)) {
    // On a line of its own, also after a row printed in part.
    std::printf("\n# rank %d: %s failed: %s: %s\n", rank, what, ncclGetErrorString(r), ncclGetLastError(nullptr));
    std::fflush(stdout);
  }
  _exit(1);
}

std::vector<uint64_t> sizes(const Options& o) {
  std::vector<uint64_t> out;
  for (uint64_t s = o.minBytes; s <= o.maxBytes;) {
    out.push_back(s);
    const uint64_t next = o.step ? s + o.step : s * static_cast<uint64_t>(o.factor);
    if (next <= s) break;
    s = next;
  }
  return out;
}

void printHeader(const Options& o, const CollInfo& c) {
  std::printf("# %s: %d ranks (threads), %s buffers, %d runs of %d calls after %d warm-up calls\n", c.name, o.ranks,
              o.gpu ? "GPU" : "host", o.repeats, o.iters, o.warmup);
  std::printf("# time: median of the runs (slowest rank); min: the fastest run. algbw, busbw: from the median.\n");
  // Each variant's label centred over its five columns (43 characters).
  auto centred = [](const char* label) {
    const std::string s = label;
    const size_t left = (43 - s.size()) / 2;
    return std::string(left, ' ') + s + std::string(43 - s.size() - left, ' ');
  };
  std::printf("#%46s %s %s\n", "", centred("out-of-place").c_str(), centred(c.inPlace ? "in-place" : "").c_str());
  std::printf("#%11s %12s %8s %6s %5s %9s %9s %7s %7s %6s %9s %9s %7s %7s %6s\n", "size", "count", "type", "redop",
              "root", "time", "min", "algbw", "busbw", "#wrong", "time", "min", "algbw", "busbw", "#wrong");
  std::printf("#%11s %12s %8s %6s %5s %9s %9s %7s %7s %6s %9s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
}

// Returns the median bus bandwidth, for the average line.
double printVariant(const Options& o, const CollInfo& c, const Shape& shape, const Shared& shared) {
  std::vector<double> perRun(static_cast<size_t>(o.repeats), 0);
  for (const auto& rank : shared.seconds) {
    for (size_t k = 0; k < perRun.size(); ++k) perRun[k] = std::max(perRun[k], rank[k]);
  }
  std::sort(perRun.begin(), perRun.end());
  const double median = perRun[perRun.size() / 2], fastest = perRun.front();
  const double algbw = median > 0 ? static_cast<double>(shape.bytes) / 1e9 / median : 0;
  const double busbw = algbw * busBandwidthFactor(c.coll, o.ranks);
  size_t wrong = 0;
  for (size_t w : shared.wrong) wrong += w;
  totalWrong += wrong;
  std::printf(" %9.2f %9.2f %7.2f %7.2f", median * 1e6, fastest * 1e6, algbw, busbw);
  if (o.check)
    std::printf(" %6zu", wrong);
  else
    std::printf(" %6s", "N/A");
  return busbw;
}

// One rank: every collective, size and variant, in step with the others.
void runRank(const Options& o, int rank, const ncclUniqueId& id, Barrier& barrier, std::vector<Shared>& shared,
             double* busbwSum, int* busbwCount) {
  Device device(o.gpu, rank);
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&comm, o.ranks, id, rank); r != ncclSuccess) fail(rank, "ncclCommInitRank", r);
  const ncclRedOp_t op = static_cast<ncclRedOp_t>(o.op);
  for (const CollInfo* c : o.colls) {
    const int opForValues = c->reduces ? o.op : -1;
    if (rank == 0) printHeader(o, *c);
    for (uint64_t bytes : sizes(o)) {
      const Shape shape = shapeFor(c->coll, bytes, o.type->bytes, o.ranks);
      if (rank == 0) {
        std::printf("%12zu %12zu %8s %6s %5d", shape.bytes, shape.count, o.type->name,
                    c->reduces ? redOpName(o.op) : "none", c->rooted ? o.root : -1);
      }
      for (int inPlace = 0; inPlace < 2; ++inPlace) {
        if (inPlace && !c->inPlace) {
          if (rank == 0) std::printf(" %9s %9s %7s %7s %6s", "N/A", "N/A", "N/A", "N/A", "N/A");
          continue;
        }
        Buffers buffers(device, c->coll, shape, o.type->bytes, inPlace != 0, rank);
        const std::vector<char> image = sendImage(shape, *o.type, opForValues, rank);
        auto call = [&](const char* what) {
          if (ncclResult_t r =
                  issue(c->coll, shape, buffers.call(), *o.type, op, o.root, rank, o.ranks, comm, device.stream());
              r != ncclSuccess) {
            fail(rank, what, r);
          }
        };
        buffers.fillSend(image);
        for (int i = 0; i < o.warmup; ++i) call(c->name);
        device.synchronize();
        Shared& s = shared[static_cast<size_t>(inPlace)];
        for (int k = 0; k < o.repeats; ++k) {
          barrier.wait();
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < o.iters; ++i) call(c->name);
          device.synchronize();
          s.seconds[static_cast<size_t>(rank)][static_cast<size_t>(k)] =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.iters;
        }
        s.wrong[static_cast<size_t>(rank)] = 0;
        if (o.check) {
          buffers.fillSend(image);
          barrier.wait();
          call(c->name);
          device.synchronize();
          s.wrong[static_cast<size_t>(rank)] =
              countWrong(c->coll, shape, *o.type, o.op, o.root, rank, o.ranks, buffers.readRecv());
        }
        barrier.wait();
        if (rank == 0) {
          *busbwSum += printVariant(o, *c, shape, s);
          ++*busbwCount;
        }
        barrier.wait();
      }
      if (rank == 0) {
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  if (ncclResult_t r = ncclCommDestroy(comm); r != ncclSuccess) fail(rank, "ncclCommDestroy", r);
}

int parse(int argc, char** argv, Options* o) {
  std::vector<std::string> names;
  std::string type = "float", op = "sum", device;
  tools::ArgParser args("mscclpp-perf", kUsage);
  args.size("-b", &o->minBytes, 1)
      .size("-e", &o->maxBytes, 1)
      .integer("-f", &o->factor, 2, 1 << 20)
      .size("-i", &o->step, 1)
      .integer("-g", &o->ranks, 1, 1024)
      .integer("-c", &o->check, 0, 1)
      .integer("-n", &o->iters, 1, 1 << 24)
      .integer("-w", &o->warmup, 0, 1 << 24)
      .integer("-R", &o->repeats, 1, 1000)
      .text("-d", &type)
      .text("-o", &op)
      .integer("-r", &o->root, 0, 1023)
      .text("--device", &device)
      .real("--timeout", &o->timeout, 1, 1e6)
      .positional(&names, 0, 16, "COLLECTIVE");
  if (int stop = args.parse(argc, argv); stop != tools::ArgParser::kContinue) return stop;
  if (names.empty()) names.push_back("all_reduce");
  for (const std::string& name : names) {
    if (name == "all") {
      for (const CollInfo& c : collectives()) o->colls.push_back(&c);
    } else if (const CollInfo* c = findCollective(name)) {
      o->colls.push_back(c);
    } else {
      return args.usageError("'" + name + "' is not a collective (all_reduce, all_gather, ...; see --help)");
    }
  }
  o->type = findDataType(type);
  if (o->type == nullptr) return args.usageError("-d '" + type + "': not one of the types --help lists");
  o->op = redOpFromName(op);
  if (o->op < 0) return args.usageError("-o '" + op + "': not one of sum, prod, max, min, avg");
  if (o->minBytes > o->maxBytes) return args.usageError("-b is larger than -e");
  if (o->root >= o->ranks) return args.usageError("-r is not below -g");
  if (device.empty()) {
    o->gpu = Device::gpuVisible();
  } else if (device == "gpu" || device == "cpu") {
    o->gpu = device == "gpu";
    if (o->gpu && !Device::gpuVisible()) return args.usageError("--device gpu: " + Device::whyNoGpu());
  } else {
    return args.usageError("--device '" + device + "': expected cpu or gpu");
  }
  return tools::ArgParser::kContinue;
}

int run(const Options& o) {
  // Nothing hangs: a run past its deadline fails.
  std::thread([timeout = o.timeout] {
    std::this_thread::sleep_for(std::chrono::duration<double>(timeout));
    std::printf("# mscclpp-perf: still running after %.0f s (--timeout): stopped\n", timeout);
    std::fflush(stdout);
    _exit(1);
  }).detach();
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) fail(0, "ncclGetUniqueId", r);
  Barrier barrier(o.ranks);
  std::vector<Shared> shared(2);
  for (Shared& s : shared) {
    s.seconds.assign(static_cast<size_t>(o.ranks), std::vector<double>(static_cast<size_t>(o.repeats), 0));
    s.wrong.assign(static_cast<size_t>(o.ranks), 0);
  }
  double busbwSum = 0;
  int busbwCount = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < o.ranks; ++r) {
    threads.emplace_back([&, r] { runRank(o, r, id, barrier, shared, &busbwSum, &busbwCount); });
  }
  for (auto& t : threads) t.join();
  std::printf("# Out of bounds values : %zu %s\n", totalWrong.load(), totalWrong == 0 ? "OK" : "WRONG");
  std::printf("# Avg bus bandwidth    : %g\n", busbwCount ? busbwSum / busbwCount : 0.0);
  return totalWrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace mscclpp::perf

int main(int argc, char** argv) {
  mscclpp::perf::Options options;
  if (int stop = mscclpp::perf::parse(argc, argv, &options); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  return mscclpp::perf::run(options);
}
