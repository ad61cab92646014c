// Any count on plans (docs/plan-core.md, "Sizing"): every default plan serves
// every element count, the counts that do not fit its chunks on the padded
// geometry. Through the public Executor on the CPU backend (ranks as threads),
// every datatype, checked against the emulator's reference (inputs whose
// reductions are exact in every type, so results are independent of the
// reduction order).
#include <dirent.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "exec_test_util.hpp"
#include "executor/emulation/local_world.hpp"
#include "executor/emulation/local_world_wiring.hpp"
#include "executor/emulation/reference.hpp"
#include "executor/executor_internal.hpp"
#include "plan/plan_loader.hpp"
#include "plan/plan_sizing.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

std::vector<std::string> defaultPlans() {
  std::vector<std::string> out;
  if (DIR* d = opendir(defaultPlanDir().c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The smallest count whose parts fit the plan's chunks exactly (the padded part of one element).
uint64_t alignedCount(const plan::Plan& p, DataType dtype) {
  const size_t elem = dataTypeSize(dtype);
  uint64_t in = 0, out = 0;
  REQUIRE(plan::callBytes(p.header.collective, 1, elem, static_cast<int>(p.ranks.size()), &in, &out));
  plan::CallGeometry g;
  const plan::RankPlan& r0 = p.ranks[0];
  plan::SizingResult s = plan::sizeCall(p.header, r0.inputChunks, r0.outputChunks, r0.scratchChunks,
                                        static_cast<int>(p.ranks.size()), in, out, elem, &g);
  INFO(p.header.name << ": " << s.reason);
  REQUIRE(s.ok);
  return g.padded ? g.paddedPartBytes / elem : 1;
}

// 1..dense, around one, two and three aligned counts (two padded geometries at least), and two big odd counts.
std::vector<uint64_t> countsFor(uint64_t unit, uint64_t dense) {
  std::set<uint64_t> c;
  for (uint64_t i = 1; i <= dense; ++i) c.insert(i);
  for (uint64_t k : {1, 2, 3})
    for (int64_t d : {-1, 0, 1})
      if (k * unit + d >= 1) c.insert(k * unit + d);
  for (uint64_t big : {1001, 4099}) c.insert(big);
  return {c.begin(), c.end()};
}

// The dense sweep's N: 67 (past four 16-byte chunks of one-byte elements, and
// the padded unit of every 2- and 4-rank default plan for 4- and 8-byte
// elements); MSCCLPP_TEST_ANY_COUNT_N overrides it (a longer sweep by hand).
uint64_t denseCount() {
  const char* v = std::getenv("MSCCLPP_TEST_ANY_COUNT_N");
  return v != nullptr && std::atoi(v) > 0 ? static_cast<uint64_t>(std::atoi(v)) : 67;
}

ReduceOp opFor(DataType dtype, uint64_t count) {
  // Sum everywhere; max and avg on some counts (avg divides the padded output too: never seen).
  if (count % 5 == 3) return ReduceOp::Max;
  if (count % 7 == 2 && dtype != DataType::Float8E4M3 && dtype != DataType::Float8E5M2) return ReduceOp::Avg;
  return ReduceOp::Sum;
}

struct Totals {
  std::mutex m;
  std::string firstError;
  uint64_t calls = 0;
};

// Runs every (dtype, count) on every rank of the plan; each rank checks its own
// output against the reference computed from every rank's (deterministic)
// input.
void runPlan(const plan::PlanPtr& p, const std::vector<DataType>& dtypes, uint64_t dense, Totals* totals) {
  // Variable-size plans take per-peer counts, not one count: their own tests bind random splits.
  if (p->header.variableSizes) return;
  const int n = static_cast<int>(p->ranks.size());
  const plan::PlanHeader& h = p->header;
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  // Catch2's assertions are for this thread only: the counts are decided before the rank threads start.
  std::vector<std::vector<uint64_t>> counts;
  for (DataType dtype : dtypes) counts.push_back(countsFor(alignedCount(*p, dtype), dense));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      exec::RuntimeExecutor ex(wiring, Backend::Cpu);
      try {
        for (size_t d = 0; d < dtypes.size(); ++d) {
          const DataType dtype = dtypes[d];
          const size_t elem = dataTypeSize(dtype);
          for (uint64_t count : counts[d]) {
            uint64_t inBytes = 0, outBytes = 0;
            plan::callBytes(h.collective, count, elem, n, &inBytes, &outBytes);
            const ReduceOp op = h.reduceOps != 0 ? opFor(dtype, count) : ReduceOp::Sum;
            std::vector<std::vector<char>> inputs(n, std::vector<char>(inBytes));
            for (int r = 0; r < n; ++r) exec::fillInput(dtype, op, 7 + count, r, inputs[r].data(), inBytes);
            std::vector<char> recv(outBytes, static_cast<char>(exec::kPoisonByte));
            ex.execute(rank, inputs[rank].data(), recv.data(), inBytes, outBytes, dtype, p, nullptr, PacketType::LL16,
                       op);
            std::vector<const char*> ptrs;
            for (auto& in : inputs) ptrs.push_back(in.data());
            exec::CheckRequest req;
            req.collective = h.collective;
            req.root = h.root;
            req.nRanks = n;
            req.dtype = dtype;
            req.op = op;
            req.inputs = ptrs.data();
            req.inputBytes = inBytes;
            req.outputBytes = outBytes;
            std::vector<char> reduced(inBytes);
            if (h.reduceOps != 0) {
              exec::computeReduction(req, reduced.data());
              req.reduced = reduced.data();
            }
            exec::CheckResult res = exec::checkOutput(req, rank, recv.data());
            if (res.mismatches != 0) {
              throw std::runtime_error(h.name + " " + dataTypeName(dtype) + " count " + std::to_string(count) + " op " +
                                       reduceOpName(op) + ":\n" + res.text);
            }
            std::lock_guard<std::mutex> lock(totals->m);
            ++totals->calls;
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(totals->m);
        if (totals->firstError.empty()) totals->firstError = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE("any count: every default plan and dtype near aligned sizes", "[exec][anycount]") {
  auto files = defaultPlans();
  REQUIRE(files.size() >= 169);
  REQUIRE(std::count(files.begin(), files.end(), "sendrecv_put_n2_oop.json") == 1);
  Totals totals;
  for (const std::string& f : files) {
    plan::PlanPtr p = plan::loadPlanFile(defaultPlanDir() + "/" + f);
    runPlan(p, allDataTypes(), 3, &totals);
    INFO(f);
    REQUIRE(totals.firstError == "");
  }
  CHECK(totals.calls > 0);
}

TEST_CASE("any count: counts 1..67 on every default plan", "[exec][anycount]") {
  // Every count up to N on every plan; plan i runs datatype i mod 12, so each
  // datatype sweeps ~14 plans of every kind (the geometry depends on the
  // element size, the arithmetic on the type: the case above has every pair).
  auto files = defaultPlans();
  Totals totals;
  for (size_t i = 0; i < files.size(); ++i) {
    plan::PlanPtr p = plan::loadPlanFile(defaultPlanDir() + "/" + files[i]);
    runPlan(p, {allDataTypes()[i % allDataTypes().size()]}, denseCount(), &totals);
    INFO(files[i]);
    REQUIRE(totals.firstError == "");
  }
  CHECK(totals.calls > 0);
}

TEST_CASE("any count: counts 1..N across two padded geometries", "[exec][anycount]") {
  Totals totals;
  for (const char* f : {"allreduce_ll_n4_oop.json", "allreduce_allpairs_n2_ip.json", "allgather_ll_n4_ip.json",
                        "allgather_put_n2_oop.json", "reducescatter_ll_n4_oop.json", "reducescatter_put_n2_ip.json",
                        "alltoall_put_n4_ip.json", "broadcast_put_n4_oop_root1.json", "reduce_put_n4_ip_root2.json",
                        "gather_put_n4_oop_root3.json", "scatter_put_n4_ip_root0.json", "sendrecv_put_n2_oop.json",
                        "allreduce_2node_n4_ip.json"}) {
    plan::PlanPtr p = plan::loadPlanFile(defaultPlanDir() + "/" + f);
    for (DataType dtype : {DataType::Int8, DataType::Float32, DataType::Float16}) {
      const uint64_t unit = alignedCount(*p, dtype);
      runPlan(p, {dtype}, std::min<uint64_t>(2 * unit + 2, 300), &totals);
      INFO(f << " " << dataTypeName(dtype));
      REQUIRE(totals.firstError == "");
    }
  }
  CHECK(totals.calls > 0);
}

TEST_CASE("any count: a padded call touches only the call's bytes", "[exec][anycount]") {
  // An in-place allgather of 3 floats per rank on a plan of 16-byte-aligned
  // chunks: the parts run padded, the bytes after the receive buffer and the
  // send buffer stay untouched.
  const int n = 4;
  plan::PlanPtr p = plan::loadPlanFile(defaultPlanDir() + "/allgather_ll_n4_oop.json");
  auto wiring = std::make_shared<exec::LocalWorldWiring>(n);
  std::vector<std::vector<float>> send(n), recv(n, std::vector<float>(n * 3 + 4, -7.f));
  std::vector<std::thread> threads;
  std::string err;
  std::mutex m;
  for (int r = 0; r < n; ++r) {
    send[r] = {r + 0.5f, r + 1.5f, r + 2.5f, 99.f};
    threads.emplace_back([&, r] {
      try {
        exec::RuntimeExecutor ex(wiring, Backend::Cpu);
        ex.execute(r, send[r].data(), recv[r].data(), 3 * 4, n * 3 * 4, DataType::Float32, p);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(m);
        err = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(err == "");
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < 3; ++i) REQUIRE(recv[r][k * 3 + i] == k + i + 0.5f);
    for (int i = n * 3; i < n * 3 + 4; ++i) REQUIRE(recv[r][i] == -7.f);
    REQUIRE(send[r][3] == 99.f);
  }
}

TEST_CASE("any count: sizes of partial elements are refused", "[exec][anycount]") {
  plan::PlanPtr p = plan::loadPlanFile(defaultPlanDir() + "/allreduce_ll_n4_ip.json");
  const plan::RankPlan& r0 = p->ranks[0];
  plan::CallGeometry g;
  // 402 bytes of float32: not a whole number of elements.
  plan::SizingResult s =
      plan::sizeCall(p->header, r0.inputChunks, r0.outputChunks, r0.scratchChunks, 4, 402, 402, 4, &g);
  REQUIRE_FALSE(s.ok);
  REQUIRE_THAT(s.reason, Catch::Contains("not divisible"));
  // 404 bytes (101 floats): padded to the plan's granularity, every rank alike.
  s = plan::sizeCall(p->header, r0.inputChunks, r0.outputChunks, r0.scratchChunks, 4, 404, 404, 4, &g);
  REQUIRE(s.ok);
  REQUIRE(g.padded);
  REQUIRE(g.partBytes == 404);
  REQUIRE(g.paddedPartBytes % (r0.inputChunks * p->header.bufferAlignment) == 0);
  REQUIRE(g.paddedPartBytes - 404 < r0.inputChunks * p->header.bufferAlignment);
  // The emulation's world holds the call's buffers: it refuses a size that only runs padded, and says so.
  REQUIRE_THROWS_WITH(exec::LocalWorld(p, 404, 404, DataType::Float32),
                      Catch::Contains("the emulation runs exact sizes only"));
  // An aligned size keeps the exact geometry.
  s = plan::sizeCall(p->header, r0.inputChunks, r0.outputChunks, r0.scratchChunks, 4, g.paddedPartBytes,
                     g.paddedPartBytes, 4, &g);
  REQUIRE(s.ok);
  REQUIRE_FALSE(g.padded);
}
