// The registry: directory scans and their limits, registration, the
// selection rules and tie-break, the user selector, lazy per-rank loading,
// and allocation-free cached lookups.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "../../support/scoped_env.hpp"
#include "core/logger.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp_config.h"
#include "plan/plan_names.hpp"
#include "plan/registry.hpp"
#include "plan_test_util.hpp"
#include "support/allocation_counter.hpp"

using namespace mscclpp::plan;
using plantest::json;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

// Captures this process's log lines in a file for the scope of a test.
class LogCapture {
 public:
  explicit LogCapture(const char* level = "WARN") : file_(dir_.file("log.txt")) {
    setenv("MSCCLPP_DEBUG_FILE", file_.c_str(), 1);
    setenv("MSCCLPP_DEBUG", level, 1);
    mscclpp::reloadLogConfig();
  }
  ~LogCapture() {
    unsetenv("MSCCLPP_DEBUG_FILE");
    unsetenv("MSCCLPP_DEBUG");
    mscclpp::reloadLogConfig();
  }
  size_t count(const std::string& text) const {
    std::ifstream in(file_);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) n += line.find(text) != std::string::npos;
    return n;
  }
  size_t lines() const { return count(""); }

 private:
  plantest::TempDir dir_;
  std::string file_;
};

json plan(const std::string& name, const std::string& collective, int nRanks, bool inPlace, uint64_t min = 0,
          uint64_t max = UINT64_MAX, const std::string& reduceOp = "sum") {
  const bool gather = collective == "allgather" || collective == "gather";
  const bool scatter = collective == "scatter";
  json j = plantest::minimalPlan(name, collective, nRanks,
                                 gather    ? 1
                                 : scatter ? static_cast<uint32_t>(nRanks)
                                           : 2,
                                 gather    ? static_cast<uint32_t>(nRanks)
                                 : scatter ? 1
                                           : 2,
                                 inPlace, collective == "allreduce" || collective == "reduce" ? reduceOp : "");
  j["min_message_size"] = min;
  j["max_message_size"] = max;
  return j;
}

void add(Registry& reg, const json& j, const std::vector<std::string>& tags = {}) {
  REQUIRE(reg.registerJson(j.dump(), j["name"].get<std::string>() + ".json", tags) == Registry::Status::Ok);
}

SelectRequest request(Collective c, int n, uint64_t bytes, bool inPlace = true) {
  SelectRequest r;
  r.collective = c;
  r.worldSize = n;
  r.nRanksPerNode = n;
  r.messageBytes = bytes;
  r.inPlace = inPlace;
  r.dtype = 7;  // float32
  r.redOp = (c == Collective::AllReduce || c == Collective::Reduce || c == Collective::ReduceScatter) ? 0 : -1;
  r.root = isRootedCollective(c) ? 0 : -1;
  return r;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a scan skips bad files with a WARN; the first name wins", "[plan][registry]") {
  plantest::TempDir dir;
  plantest::writeFile(dir.file("a.json"), plan("alpha", "allreduce", 2, true).dump());
  plantest::writeFile(dir.file("b.json"), "{ broken");
  plantest::writeFile(dir.file("c.json"), plan("alpha", "allgather", 2, true).dump());
  plantest::writeFile(dir.file("d.txt"), plan("delta", "allreduce", 2, true).dump());
  REQUIRE(::mkdir(dir.file("e.json").c_str(), 0755) == 0);
  LogCapture log;
  Registry reg({dir.path(), dir.file("missing"), dir.file("d.txt")});
  CHECK(reg.count() == 1);
  CHECK(log.count("skipping plan file " + dir.file("b.json") + ": " + dir.file("b.json") +
                  ": invalid JSON at line 1, column 3: expected a member name (a string)") == 1);
  CHECK(log.count("skipping plan file " + dir.file("c.json") + ": plan name 'alpha' is already registered from " +
                  dir.file("a.json") + " (the first one found wins)") == 1);
  CHECK(log.count("skipping plan file " + dir.file("e.json") + ": " + dir.file("e.json") +
                  ": is a directory, not a plan file") == 1);
  CHECK(log.count("plan directory " + dir.file("missing") + " cannot be used: No such file or directory") == 1);
  CHECK(log.count("plan directory " + dir.file("d.txt") + " is not a directory; skipped") == 1);
  CHECK(log.count("d.txt") == 1);  // only as a directory: the scan reads *.json files
  const size_t lines = log.lines();
  CHECK(reg.count() == 1);  // scanned once
  CHECK(log.lines() == lines);
  mscclppPlanInfo info{};
  REQUIRE(reg.info(0, &info));
  CHECK(std::string(info.name) == "alpha");
  CHECK(std::string(info.source) == dir.file("a.json"));
  CHECK(std::string(info.collective) == "allreduce");
  CHECK(std::string(info.protocol) == "Simple");
  CHECK(info.worldSize == 2);
  CHECK(info.inPlace == 1);
  CHECK(info.root == -1);
  CHECK(info.nTags == 0);
  CHECK_FALSE(reg.info(1, &info));
  // rescan picks up a file added since
  plantest::writeFile(dir.file("f.json"), plan("phi", "allreduce", 2, true).dump());
  reg.rescan();
  CHECK(reg.count() == 2);
}

TEST_CASE("a plan file too large or past the total is skipped", "[plan][registry]") {
  plantest::TempDir dir, other;
  const std::string a = plan("alpha", "allreduce", 2, true).dump(), b = plan("beta", "allreduce", 2, true).dump();
  plantest::writeFile(dir.file("a.json"), a);
  plantest::writeFile(dir.file("b.json"), b);
  plantest::writeFile(other.file("c.json"), plan("gamma", "allreduce", 2, true).dump());
  // A sparse 200 MiB file: over the default MSCCLPP_PLAN_MAX_BYTES, skipped unread.
  const std::string huge = dir.file("huge.json");
  const int fd = ::open(huge.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, 200 * MiB) == 0);
  ::close(fd);
  {
    LogCapture log;
    const auto start = std::chrono::steady_clock::now();
    Registry reg({dir.path(), other.path()});
    CHECK(reg.count() == 3);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    CHECK(log.count("WARN PLAN skipping plan file " + huge + ": " + huge +
                    ": 200 MiB (209715200 bytes) is larger than MSCCLPP_PLAN_MAX_BYTES=134217728 (128 MiB)") == 1);
  }
  // Room for the first two files only: the third, in the next directory, is skipped by name.
  const std::string total = std::to_string(a.size() + b.size() + 10);
  mscclpp::test::ScopedEnv limit("MSCCLPP_PLAN_DIR_MAX_BYTES", total.c_str());
  LogCapture log;
  Registry reg({dir.path(), other.path()});
  CHECK(reg.count() == 2);
  CHECK(log.count("WARN PLAN skipping plan file " + other.file("c.json") + ": its ") == 1);
  CHECK(log.count("more than MSCCLPP_PLAN_DIR_MAX_BYTES=" + total) == 2);  // the third file, and the huge one before it
  CHECK(log.lines() == 2);
}

TEST_CASE("selection: sizes, in-place, ranks per node, tie-break", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  add(reg, plan("small", "allreduce", 8, true, 0, 64 * KiB));
  add(reg, plan("large", "allreduce", 8, true, 64 * KiB + 1));
  add(reg, plan("wide", "allreduce", 8, true));
  SelectionPtr s = reg.select(request(Collective::AllReduce, 8, 32 * KiB));
  CHECK(s->name == "small");
  CHECK(s->chunkBytes == 16 * KiB);
  CHECK(s->plan == nullptr);  // rank -1: choose only
  CHECK(
      s->reason ==
      "plan 'small' (small.json) for allreduce on 8 ranks (8 per node), 32 KiB, in-place, float32, sum: preferred over "
      "the other 1 that can serve it because its size range [0 B, 64 KiB] is narrower than [0 B, unbounded]; chunk 16 "
      "KiB");
  CHECK(reg.select(request(Collective::AllReduce, 8, 64 * KiB))->name == "small");  // bounds are inclusive
  CHECK(reg.select(request(Collective::AllReduce, 8, 64 * KiB + 32))->name == "large");
  CHECK(reg.select(request(Collective::AllReduce, 8, 1 * MiB))->name == "large");

  // an in-place plan serves an out-of-place call through a copy; an out-of-place plan never serves in-place
  s = reg.select(request(Collective::AllReduce, 8, MiB, false));
  CHECK(s->name == "large");
  CHECK(s->copyInput);
  CHECK(contains(s->reason,
                 "; the plan is in-place and the call is not: the executor copies the send buffer into the "
                 "receive buffer first"));
  add(reg, plan("oop", "allreduce", 8, false));
  s = reg.select(request(Collective::AllReduce, 8, MiB, false));
  CHECK(s->name == "oop");
  CHECK_FALSE(s->copyInput);
  CHECK(contains(s->reason, "because it needs no copy of the send buffer"));
  CHECK(reg.select(request(Collective::AllReduce, 8, MiB, true))->name == "large");

  // a plan stating its ranks per node beats one serving any, and serves no other shape
  json node4 = plan("node4", "allreduce", 8, true);
  node4["nranks_per_node"] = 4;
  add(reg, node4);
  SelectRequest twoNodes = request(Collective::AllReduce, 8, MiB);
  twoNodes.nRanksPerNode = 4;
  s = reg.select(twoNodes);
  CHECK(s->name == "node4");
  CHECK(contains(s->reason, "because it states nranks_per_node (the other serves any)"));
  CHECK(reg.select(request(Collective::AllReduce, 8, MiB))->name == "large");

  // reducescatter cannot reach in-place by copying
  add(reg, plan("rs", "reducescatter", 8, true));
  s = reg.select(request(Collective::ReduceScatter, 8, MiB, false));
  CHECK(s->name.empty());
  CHECK(contains(s->reason,
                 "'rs' (rs.json): it is in-place, the call is out-of-place (reducescatter cannot copy its way "
                 "to in-place)"));
}

TEST_CASE("a name in two directories warns only if the files differ", "[plan][registry]") {
  plantest::TempDir installed, cache, other;
  const std::string text = plan("alpha", "allreduce", 2, true).dump();
  plantest::writeFile(installed.file("alpha.json"), text);
  plantest::writeFile(cache.file("alpha.json"), text);  // what `--install` copies into the cache
  plantest::writeFile(other.file("alpha.json"), plan("alpha", "allreduce", 2, false).dump());
  {
    LogCapture log("INFO");
    Registry reg({installed.path(), cache.path()});
    CHECK(reg.count() == 1);
    CHECK(log.count("WARN") == 0);
    CHECK(log.count("skipping plan file " + cache.file("alpha.json") + ": the same file as " +
                    installed.file("alpha.json") + ", registered first") == 1);
  }
  LogCapture log;
  Registry reg({installed.path(), other.path()});
  CHECK(reg.count() == 1);
  CHECK(log.count("WARN PLAN skipping plan file " + other.file("alpha.json") +
                  ": plan name 'alpha' is already "
                  "registered from") == 1);
}

TEST_CASE("tie-break: registrations, then directory plans, then names", "[plan][registry]") {
  plantest::TempDir dir;
  plantest::writeFile(dir.file("b.json"), plan("b", "allgather", 2, true).dump());
  Registry reg({dir.path()});
  CHECK(reg.select(request(Collective::AllGather, 2, 64))->name == "b");
  add(reg, plan("c", "allgather", 2, true));
  SelectionPtr s = reg.select(request(Collective::AllGather, 2, 64));
  CHECK(s->name == "c");
  CHECK(contains(s->reason, "because it was registered explicitly (directory plans come after)"));
  add(reg, plan("a", "allgather", 2, true));
  s = reg.select(request(Collective::AllGather, 2, 64));
  CHECK(s->name == "a");
  CHECK(contains(s->reason, "preferred over the other 2 that can serve it because its name comes first"));
  REQUIRE(reg.unregister("a") == Registry::Status::Ok);
  CHECK(reg.select(request(Collective::AllGather, 2, 64))->name == "c");
  // registry order: registrations first, in call order, then directory plans
  add(reg, plan("d", "allgather", 2, true));
  mscclppPlanInfo info{};
  REQUIRE(reg.info(0, &info));
  CHECK(std::string(info.name) == "c");
  REQUIRE(reg.info(1, &info));
  CHECK(std::string(info.name) == "d");
  REQUIRE(reg.info(2, &info));
  CHECK(std::string(info.name) == "b");
  reg.rescan();  // directory plans scanned again stay after the registrations
  REQUIRE(reg.info(0, &info));
  CHECK(std::string(info.name) == "c");
  REQUIRE(reg.info(2, &info));
  CHECK(std::string(info.name) == "b");
}

TEST_CASE("selection: root, tags, reduce ops and datatypes", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  json b0 = plan("b0", "broadcast", 2, false);
  json b1 = plan("b1", "broadcast", 2, false);
  b1["root"] = 1;
  add(reg, b0);
  add(reg, b1);
  SelectRequest r = request(Collective::Broadcast, 2, 64, false);
  r.root = 1;
  CHECK(reg.select(r)->name == "b1");
  r.root = 0;
  CHECK(reg.select(r)->name == "b0");

  json tagged = plan("tagged", "allreduce", 2, true);
  tagged["tags"] = {"own"};
  add(reg, tagged, {"fast"});
  add(reg, plan("plain", "allreduce", 2, true, 0, MiB));  // narrower: wins without tags
  CHECK(reg.select(request(Collective::AllReduce, 2, 64))->name == "plain");
  const char* fast[] = {"fast"};
  SelectRequest withTag = request(Collective::AllReduce, 2, 64);
  withTag.tags = fast;
  withTag.nTags = 1;
  CHECK(reg.select(withTag)->name == "tagged");
  const char* both[] = {"fast", "own"};
  withTag.tags = both;
  withTag.nTags = 2;
  CHECK(reg.select(withTag)->name == "tagged");
  const char* other[] = {"slow"};
  withTag.tags = other;
  withTag.nTags = 1;
  CHECK(contains(reg.select(withTag)->reason, "'plain' (plain.json): it lacks the tag \"slow\""));
  mscclppPlanInfo info{};
  REQUIRE(reg.info(2, &info));
  REQUIRE(info.nTags == 2);
  CHECK(std::string(info.tags[0]) == "own");
  CHECK(std::string(info.tags[1]) == "fast");

  // reduce ops: a max-only plan serves max; a sum plan serves every built-in op; a mix serves none
  add(reg, plan("maxonly", "allreduce", 3, true, 0, UINT64_MAX, "max"));
  add(reg, plan("sumplan", "allreduce", 4, true, 0, UINT64_MAX, "sum"));
  json mixed = plan("mixed", "allreduce", 5, true, 0, UINT64_MAX, "sum");
  for (auto& g : mixed["gpus"]) g["threadblocks"][0]["ops"].push_back(g["threadblocks"][0]["ops"][1]);
  mixed["gpus"][4]["threadblocks"][0]["ops"][2]["reduce_op"] = "max";
  add(reg, mixed);
  SelectRequest q = request(Collective::AllReduce, 3, 64);
  q.redOp = 2;  // ncclMax
  CHECK(reg.select(q)->name == "maxonly");
  q.redOp = 0;
  CHECK(contains(reg.select(q)->reason, "'maxonly' (maxonly.json): it reduces with max, the call asks for sum"));
  q.worldSize = q.nRanksPerNode = 4;
  for (int op : {0, 1, 2, 3, 4}) {
    q.redOp = op;
    CHECK(reg.select(q)->name == "sumplan");
  }
  q.redOp = 5;  // PreMulSum: the executor scales the inputs, then sums
  CHECK(reg.select(q)->name == "sumplan");
  q.worldSize = q.nRanksPerNode = 3;
  CHECK(contains(reg.select(q)->reason, "'maxonly' (maxonly.json): it reduces with max, the call asks for premulsum"));
  q.worldSize = q.nRanksPerNode = 4;
  q.redOp = 7;  // an op the executor does not know
  CHECK(contains(reg.select(q)->reason, "it cannot apply the user-defined reduce op 7"));
  q.redOp = 0;
  q.dtype = 99;
  CHECK(contains(reg.select(q)->reason, "it reduces and dtype 99 is not an NCCL datatype"));
  q.worldSize = q.nRanksPerNode = 5;
  q.dtype = 7;
  CHECK(contains(reg.select(q)->reason, "it mixes reduce ops (sum, max), which no single call op matches"));
  // a plan that only moves data ignores the datatype
  add(reg, plan("gather", "allgather", 2, true));
  SelectRequest g = request(Collective::AllGather, 2, 64);
  g.dtype = 99;
  CHECK(reg.select(g)->name == "gather");

  // whole elements per chunk for a reducing plan
  json narrow = plan("narrow", "allreduce", 6, true);
  narrow["buffer_alignment"] = 4;
  add(reg, narrow);
  SelectRequest e = request(Collective::AllReduce, 6, 16);
  e.dtype = 8;  // ncclFloat64
  CHECK(reg.select(e)->name == "narrow");
  e.messageBytes = 8;  // chunks of 4 B would split a double: the padded geometry serves it
  CHECK(reg.select(e)->name == "narrow");
  CHECK(
      contains(reg.select(e)->reason, "; the call's 8 B parts do not fit the plan's chunks: they run padded to 16 B"));
  e.messageBytes = 12;  // 1.5 doubles: no count of elements
  CHECK(contains(reg.select(e)->reason, "12 B input is not divisible into"));
}

TEST_CASE("selection: an exact fit goes before a padded one", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  json coarse = plan("coarse", "allreduce", 2, true, 0, MiB);  // the narrower size range, 64-byte chunks
  coarse["buffer_alignment"] = 64;
  add(reg, coarse);
  json fine = plan("fine", "allreduce", 2, true);
  fine["buffer_alignment"] = 4;
  add(reg, fine);
  const auto aligned = reg.select(request(Collective::AllReduce, 2, 1024));  // both exact: the narrower range
  CHECK(aligned->name == "coarse");
  CHECK(contains(aligned->reason, "because its size range"));
  const auto odd = reg.select(request(Collective::AllReduce, 2, 40));  // 10 floats: coarse would pad to 128 B
  CHECK(odd->name == "fine");
  CHECK(contains(odd->reason, "because it fits the call's sizes exactly (the other runs them padded)"));
  const auto padded = reg.select(request(Collective::AllReduce, 2, 44));  // 11 floats: both pad
  CHECK(padded->name == "coarse");
  CHECK(contains(padded->reason, "the call's 44 B parts do not fit the plan's chunks: they run padded to 128 B"));
}

TEST_CASE("why no plan: none registered, or each candidate's reason", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  add(reg, plan("a", "allreduce", 2, true, 0, KiB));
  add(reg, plan("b", "allreduce", 2, false));
  SelectionPtr s = reg.select(request(Collective::AllReduce, 16, MiB));
  CHECK(s->name.empty());
  CHECK(s->plan == nullptr);
  CHECK(s->reason ==
        "no plan for allreduce on 16 ranks (16 per node), 1 MiB, in-place, float32, sum: none is registered "
        "for allreduce on 16 ranks (2 plan(s) registered)");
  s = reg.select(request(Collective::AllReduce, 2, 1002));  // 250.5 floats: not a whole count
  CHECK(s->reason ==
        "no plan for allreduce on 2 ranks (2 per node), 1002 B, in-place, float32, sum: 'a' (a.json): 1002 B "
        "input is not divisible into 2 chunks of a multiple of 16 bytes; 'b' (b.json): it is out-of-place, the "
        "call is in-place");
  s = reg.select(request(Collective::AllReduce, 2, 2 * KiB));
  CHECK(contains(s->reason, "'a' (a.json): 2 KiB is outside its size range [0 B, 1 KiB]"));
  SelectRequest bad = request(Collective::AllReduce, 2, 64);
  bad.nRanksPerNode = 3;
  CHECK_THROWS_WITH(reg.select(bad), "plan selection: 3 ranks per node is not in 1..2 (the world size)");
  bad.worldSize = 0;
  CHECK_THROWS_WITH(reg.select(bad), "plan selection: world size 0 must be positive");
}

namespace {
struct SelectorState {
  int calls = 0;
  int answer = -2;
  std::vector<std::string> seen;
  std::string collective;
};
int testSelector(const mscclppPlanInfo* candidates, int n, const mscclppPlanRequest* request, void* userData) {
  auto* s = static_cast<SelectorState*>(userData);
  ++s->calls;
  s->seen.clear();
  for (int i = 0; i < n; ++i) s->seen.emplace_back(candidates[i].name);
  s->collective = request->collective;
  return s->answer;
}
int indexOf(const SelectorState& s, const std::string& name) {
  for (size_t i = 0; i < s.seen.size(); ++i)
    if (s.seen[i] == name) return static_cast<int>(i);
  return -100;
}
}  // namespace

TEST_CASE("a user selector overrides, is validated, cached per request", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  add(reg, plan("a", "allreduce", 2, true));
  add(reg, plan("b", "allreduce", 2, true, 0, 64 * KiB));
  add(reg, plan("c", "allreduce", 2, true, MiB));
  add(reg, plan("other", "allgather", 2, true));
  SelectorState state;
  reg.setSelector(testSelector, &state);
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "b");  // -2: the default choice
  CHECK(state.calls == 1);
  CHECK(state.seen == std::vector<std::string>{"a", "b", "c"});  // the collective's plans, registry order
  CHECK(state.collective == "allreduce");

  state.answer = indexOf(state, "a");
  reg.setSelector(testSelector, &state);  // clears the cache
  SelectionPtr s = reg.select(request(Collective::AllReduce, 2, KiB));
  CHECK(s->name == "a");
  CHECK(contains(s->reason, ": chosen by the user selector; chunk 512 B"));
  CHECK(state.calls == 2);
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "a");
  CHECK(state.calls == 2);  // cached
  CHECK(reg.select(request(Collective::AllReduce, 2, 2 * KiB))->name == "a");
  CHECK(state.calls == 3);  // a new request key

  state.answer = -1;
  reg.setSelector(testSelector, &state);
  s = reg.select(request(Collective::AllReduce, 2, KiB));
  CHECK(s->name.empty());
  CHECK(s->reason ==
        "no plan for allreduce on 2 ranks (2 per node), 1 KiB, in-place, float32, sum: the user selector "
        "chose no plan");

  LogCapture log;
  state.answer = indexOf(state, "c");  // c cannot serve 1 KiB
  reg.setSelector(testSelector, &state);
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "b");
  CHECK(
      log.count("the plan selector chose 'c' (c.json) for allreduce on 2 ranks (2 per node), 1 KiB, in-place, float32, "
                "sum, which cannot serve it: 1 KiB is outside its size range [1 MiB, unbounded]; using the default "
                "choice") == 1);
  state.answer = 7;
  reg.setSelector(testSelector, &state);
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "b");
  CHECK(log.count(
            "the plan selector returned 7 for allreduce on 2 ranks (2 per node), 1 KiB, in-place, float32, sum, not "
            "a candidate index (0..3), -1 or -2; using the default choice") == 1);

  const int before = state.calls;
  reg.setSelector(nullptr, nullptr);
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "b");
  CHECK(state.calls == before);
}

TEST_CASE("plans load lazily; one broken on any rank is skipped by all", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  add(reg, plan("good", "allreduce", 2, true));
  json bad = plan("bad", "allreduce", 2, true, 0, 64 * KiB);                 // narrower: preferred
  bad["gpus"][0]["threadblocks"][0]["ops"][0]["src_buff"][0]["index"] = 40;  // broken for rank 0 only
  add(reg, bad);  // its summary is fine: ops are not read at registration
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "bad");

  LogCapture log;
  SelectRequest r = request(Collective::AllReduce, 2, KiB);
  // Rank 1's own part of "bad" is valid but rank 0's is not. Rank 1 must skip
  // it too, or the two ranks would run different plans for one call. The
  // warning names the plan, the rank and the JSON path.
  r.rank = 1;
  SelectionPtr s = reg.select(r);
  CHECK(s->name == "good");
  REQUIRE(s->plan != nullptr);
  CHECK(s->plan->ranks[1].hasOps);
  CHECK_FALSE(s->plan->ranks[0].hasOps);  // validated, then dropped: only the asking rank's ops are kept
  CHECK(
      log.count("skipping plan 'bad' (bad.json): bad.json: gpus[0].threadblocks[0].ops[0].src_buff[0].index=40 out of "
                "range (input has 2 chunks)") == 1);

  r.rank = 0;
  s = reg.select(r);
  CHECK(s->name == "good");
  REQUIRE(s->plan != nullptr);
  CHECK(s->plan->ranks[0].hasOps);
  CHECK_FALSE(s->plan->ranks[1].hasOps);
  r.messageBytes = 2 * KiB;
  SelectionPtr again = reg.select(r);
  CHECK(again->plan == s->plan);  // the loaded plan is shared, not reloaded
  CHECK(log.count("skipping plan 'bad'") == 1);
  // from now on every selection skips it, with the reason
  CHECK(reg.select(request(Collective::AllReduce, 2, KiB))->name == "good");
  SelectRequest oop = request(Collective::AllReduce, 2, 1002);  // no whole count: 'good' refuses it too
  CHECK(contains(reg.select(oop)->reason,
                 "'bad' (bad.json): it failed to load: bad.json: gpus[0].threadblocks[0].ops[0]"));
}

TEST_CASE("registration: duplicates, unregister, bad plans and args", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  std::string name;
  CHECK(reg.registerJson(plan("x", "allreduce", 2, true).dump(), "x.json", {}, &name) == Registry::Status::Ok);
  CHECK(name == "x");
  CHECK(reg.registerJson(plan("x", "allgather", 2, true).dump(), "x2.json", {}) == Registry::Status::Duplicate);
  CHECK(reg.count() == 1);
  CHECK_THROWS_WITH(reg.registerJson("{", "s.json", {}),
                    "s.json: invalid JSON at line 1, column 2: unexpected end of input inside an object");
  try {
    reg.registerFile("/nonexistent/p.json", {});
    FAIL("no throw");
  } catch (const mscclpp::Error& e) {
    CHECK(e.code() == mscclpp::ErrorCode::SystemError);
    CHECK(std::string(e.what()) == "/nonexistent/p.json: cannot open plan file: No such file or directory");
  }
  CHECK_THROWS_WITH(reg.registerJson(plan("y", "allreduce", 2, true).dump(), "y.json", {""}),
                    "y.json: an empty tag was given at registration");
  CHECK(reg.unregister("x") == Registry::Status::Ok);
  CHECK(reg.unregister("x") == Registry::Status::NotFound);
  CHECK(reg.count() == 0);
  CHECK(reg.select(request(Collective::AllReduce, 2, 64))->name.empty());
}

TEST_CASE("1,000 plans: lookups find the right one without allocating", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  for (int i = 0; i < 1000; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "p%04d", i);
    const uint64_t min = static_cast<uint64_t>(i / 10) * 64 * KiB;
    add(reg, plan(name, "allreduce", 2 + i % 10, true, min, min + 64 * KiB - 1));
  }
  CHECK(reg.count() == 1000);
  SelectRequest r = request(Collective::AllReduce, 5, 50 * 64 * KiB + 64);
  CHECK(reg.select(r)->name == "p0503");
  SelectRequest none = request(Collective::AllReduce, 5, 1002);  // not whole float32 elements: no plan
  CHECK(reg.select(none)->name.empty());

  {  // the counter sees allocations at all (else the zero below would prove nothing)
    mscclpp::support::AllocationCounter probe;
    std::string* text = new std::string(100, 'x');
    delete text;
    CHECK(probe.stop() >= 2);
  }
  bool same = true;
  const SelectionPtr first = reg.select(r);
  mscclpp::support::AllocationCounter counter;
  for (int i = 0; i < 1000; ++i) {
    same = same && reg.select(r) == first;
    same = same && reg.select(none)->name.empty();
  }
  const uint64_t allocations = counter.stop();
  CHECK(same);
  CHECK(allocations == 0);
}

TEST_CASE("lookups run while plans are registered and unregistered", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  add(reg, plan("base", "allreduce", 4, true));
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      while (!stop.load()) {
        SelectRequest r = request(Collective::AllReduce, 4, static_cast<uint64_t>(64 * (1 + t)));
        r.rank = t % 2;
        const SelectionPtr s = reg.select(r);
        if (s->name != "base" && s->name != "narrow") ++wrong;
        if (s->plan == nullptr || !s->plan->ranks[static_cast<size_t>(t % 2)].hasOps) ++wrong;
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    add(reg, plan("narrow", "allreduce", 4, true, 0, 4 * KiB));
    REQUIRE(reg.unregister("narrow") == Registry::Status::Ok);
  }
  stop = true;
  for (auto& th : readers) th.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("unknown keys are logged at TRACE; implicit channels at INFO", "[plan][registry]") {
  json j = plantest::simplePlan();
  j["compiler"] = "dsl 9";
  j["gpus"][1]["threadblocks"][0]["ops"][1]["comment"] = "copy";
  j["gpus"][0]["channels"][1]["connected_to"] = {1, 1};  // rank 1 lists one port channel back
  {
    LogCapture log("TRACE");
    plantest::load(j);
    CHECK(log.count("TRACE PLAN t.json: ignoring unknown key \"compiler\" in the top level") == 1);
    CHECK(log.count("TRACE PLAN t.json: ignoring unknown key \"comment\" in gpus[1].threadblocks[0].ops[1]") == 1);
    CHECK(
        log.count("INFO PLAN t.json: added 1 implicit port channel(s) so that every listed channel has its pair (e.g. "
                  "rank 0 lists 2 port channel(s) to rank 1, which lists 1 back)") == 1);
  }
  LogCapture quiet("WARN");
  plantest::load(j);
  CHECK(quiet.count("ignoring unknown key") == 0);
}

TEST_CASE("selection: gather, scatter match root and per-rank size", "[plan][registry]") {
  Registry reg(std::vector<std::string>{});
  for (const char* c : {"gather", "scatter"}) {
    for (int root = 0; root < 4; ++root) {
      json j = plan(std::string(c) + "_r" + std::to_string(root), c, 4, false);
      j["root"] = root;
      add(reg, j);
    }
  }
  for (Collective c : {Collective::Gather, Collective::Scatter}) {
    const std::string name = c == Collective::Gather ? "gather" : "scatter";
    for (int root = 0; root < 4; ++root) {
      SelectRequest r = request(c, 4, 64, false);
      r.root = root;
      r.rank = 2;
      SelectionPtr s = reg.select(r);
      INFO(s->reason);
      REQUIRE(s->plan != nullptr);
      CHECK(s->name == name + "_r" + std::to_string(root));
      CHECK(s->inputBytes == (c == Collective::Gather ? 64u : 256u));
      CHECK(s->outputBytes == (c == Collective::Gather ? 256u : 64u));
      // 64 bytes per rank: gather's one input chunk, scatter's one output chunk.
      CHECK(contains(s->reason, "chunk 64 B"));
    }
    SelectRequest r = request(c, 4, 64, false);
    r.root = 1;
    SelectionPtr s = reg.select(r);
    CHECK(contains(s->reason, ", root 1"));
    r.inPlace = true;  // only out-of-place plans: a copy cannot make a rooted call in-place
    s = reg.select(r);
    CHECK(s->name.empty());
    CHECK(contains(s->reason, "'" + name + "_r1' (" + name + "_r1.json): it is out-of-place, the call is in-place"));
    CHECK(contains(s->reason, "'" + name + "_r0' (" + name + "_r0.json): it is out-of-place, the call is in-place"));
  }
  mscclppPlanInfo info{};
  REQUIRE(reg.info(5, &info));
  CHECK(std::string(info.collective) == "scatter");
  CHECK(info.root == 1);
}

namespace {

// The user's 4-rank all-pairs allreduce, in-place, for every size: the
// default plan's algorithm under another name and the widest size range.
json usersAllPairs(const std::string& name) {
  std::ifstream in(std::string(MSCCLPP_SOURCE_PLAN_DIR) + "/allreduce_allpairs_n4_ip.json");
  json j = json::parse(in);
  j["name"] = name;
  j["min_message_size"] = 0;
  j["max_message_size"] = UINT64_MAX;
  return j;
}

const std::string kUsersRule = "because it is the user's plan";

// The sizes where the default rule alone prefers an installed default:
// a narrower size range (4 KiB, 1 MiB), no copy of the send buffer (32 MiB
// out-of-place).
void checkUsersPlanServesAll(Registry& reg, const std::string& name) {
  for (auto [bytes, inPlace] : {std::pair{4 * KiB, true}, {MiB, true}, {32 * MiB, false}}) {
    SelectionPtr s = reg.select(request(Collective::AllReduce, 4, bytes, inPlace));
    INFO(s->reason);
    CHECK(s->name == name);
    CHECK(contains(s->reason, kUsersRule));
  }
}

}  // namespace

TEST_CASE("a registered plan wins over installed defaults", "[plan][registry]") {
  Registry reg({MSCCLPP_SOURCE_PLAN_DIR});
  REQUIRE(reg.registerJson(usersAllPairs("mine").dump(), "mine.json", {}) == Registry::Status::Ok);
  checkUsersPlanServesAll(reg, "mine");
  CHECK(contains(reg.select(request(Collective::AllReduce, 4, 4 * KiB))->reason,
                 "it is the user's plan (registered) and the other an installed default"));
  // Calls it cannot serve still get the defaults.
  CHECK(reg.select(request(Collective::AllReduce, 2, 4 * KiB))->name == "allreduce_ll_n2_ip");
}

TEST_CASE("a plan directory's plan wins over installed defaults", "[plan][registry]") {
  plantest::TempDir mine;
  plantest::writeFile(mine.file("mine.json"), usersAllPairs("mine").dump());
  // Whichever order MSCCLPP_PLAN_DIR lists them in.
  for (const auto& dirs : {std::vector<std::string>{mine.path(), MSCCLPP_SOURCE_PLAN_DIR},
                           std::vector<std::string>{MSCCLPP_SOURCE_PLAN_DIR, mine.path()}}) {
    Registry reg(dirs);
    checkUsersPlanServesAll(reg, "mine");
    CHECK(contains(reg.select(request(Collective::AllReduce, 4, 4 * KiB))->reason,
                   "it is the user's plan (your plan directory) and the other an installed default"));
    // A selector sees the user's plans before the defaults.
    mscclppPlanInfo info{};
    REQUIRE(reg.info(0, &info));
    CHECK(std::string(info.name) == "mine");
  }
}

TEST_CASE("the user's selector still overrules the user's plan", "[plan][registry]") {
  Registry reg({MSCCLPP_SOURCE_PLAN_DIR});
  REQUIRE(reg.registerJson(usersAllPairs("mine").dump(), "mine.json", {}) == Registry::Status::Ok);
  SelectorState state;
  reg.setSelector(testSelector, &state);
  reg.select(request(Collective::AllReduce, 4, 4 * KiB));
  state.answer = indexOf(state, "allreduce_ll_n4_ip");
  REQUIRE(state.answer >= 0);
  reg.setSelector(testSelector, &state);  // clears the cache
  SelectionPtr s = reg.select(request(Collective::AllReduce, 4, 4 * KiB));
  CHECK(s->name == "allreduce_ll_n4_ip");
  CHECK(s->bySelector);
}

TEST_CASE("explain lists each candidate and why it runs or loses", "[plan][registry]") {
  Registry reg({MSCCLPP_SOURCE_PLAN_DIR});
  REQUIRE(reg.registerJson(usersAllPairs("mine").dump(), "mine.json", {}) == Registry::Status::Ok);
  const std::string text = reg.explain(request(Collective::AllReduce, 4, 4 * KiB));
  INFO(text);
  CHECK(contains(text, "call: allreduce on 4 ranks (4 per node), 4 KiB, in-place, float32, sum\nruns: 'mine'\n"));
  CHECK(contains(text, "  RUNS   'mine' (mine.json) [registered]: chosen by the default rule\n"));
  CHECK(contains(text, "  loses  'allreduce_ll_n4_ip' (" + std::string(MSCCLPP_SOURCE_PLAN_DIR) +
                           "/allreduce_ll_n4_ip.json) [installed default]: 'mine' goes first because it is the "
                           "user's plan (registered) and the other an installed default\n"));
  CHECK(contains(text, "  cannot 'allreduce_allpairs_n4_ip' ("));
  CHECK(contains(text, "4 KiB is outside its size range [1 MiB, 16.0 MiB]"));
  CHECK(contains(text, "  cannot 'allreduce_ll_n4_oop' ("));
  CHECK(contains(text, "plan directories:\n  " + std::string(MSCCLPP_SOURCE_PLAN_DIR) + " (installed defaults)\n"));
  // Every plan of the collective and world size has its line.
  size_t lines = 0;
  for (size_t at = text.find("\n  RUNS"); at != std::string::npos; at = text.find("\n  ", at + 1)) ++lines;
  CHECK(lines > 6);
}

TEST_CASE("no plan: the reason names what the scan skipped", "[plan][registry]") {
  plantest::TempDir dir;
  plantest::writeFile(dir.file("a_typo.json"), "{\"name\": \"x\",\n  \"collective\" \"allreduce\"}");
  plantest::writeFile(dir.file("b.json"), plan("b", "allgather", 2, true).dump());
  Registry reg({dir.path(), dir.file("missing")});
  SelectionPtr s = reg.select(request(Collective::AllReduce, 2, 4 * KiB));
  INFO(s->reason);
  CHECK(s->name.empty());
  CHECK(contains(s->reason, "(1 plan(s) registered); the plan scan skipped 2 thing(s): " + dir.file("a_typo.json") +
                                ": invalid JSON at line 2, column 16"));
  CHECK(contains(s->reason, "; plan directory " + dir.file("missing") + ": No such file or directory"));
  // A call a plan serves says nothing of them.
  CHECK_FALSE(contains(reg.select(request(Collective::AllGather, 2, 4 * KiB))->reason, "skipped"));
  // The first few only, and how many in all.
  plantest::TempDir many;
  for (int i = 0; i < 6; ++i) plantest::writeFile(many.file("bad" + std::to_string(i) + ".json"), "{");
  Registry crowded({many.path()});
  s = crowded.select(request(Collective::AllReduce, 2, 4 * KiB));
  CHECK(contains(s->reason, "the plan scan skipped 6 thing(s): "));
  CHECK(contains(s->reason, "bad3.json"));
  CHECK_FALSE(contains(s->reason, "bad4.json"));
  CHECK(contains(s->reason, "; and 2 more"));
}
