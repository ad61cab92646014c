// The mscclpp-plan command-line tool, run as a subprocess: exit codes, stdout and stderr.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "mscclpp_config.h"
#include "plan_test_util.hpp"

extern char** environ;

namespace {

struct Run {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with args; kills it and fails the test if it has not finished within 30 s.
Run runCli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {MSCCLPP_PLAN_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int outPipe[2], errPipe[2];
  REQUIRE(pipe2(outPipe, O_CLOEXEC) == 0);
  REQUIRE(pipe2(errPipe, O_CLOEXEC) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(outPipe[1]);
  close(errPipe[1]);
  REQUIRE(rc == 0);
  Run run;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  int open = 2;
  while (open > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      FAIL("mscclpp-plan did not finish within 30 s");
    }
    if (poll(fds, 2, static_cast<int>(left)) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? run.out : run.err).append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  run.status = WEXITSTATUS(status);
  return run;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kRef = plantest::referencePlansDir() + "/mscclpp/";

}  // namespace

TEST_CASE("mscclpp-plan validate", "[plan][cli]") {
  const std::string good = kRef + "committed/allreduce.json";
  Run r = runCli({"validate", good, kRef + "generated/sn_allgather_pkt_8.json"});
  CHECK(r.status == 0);
  CHECK(r.out == good + ": OK (allreduce, allreduce, 2 ranks)\n" + kRef +
                     "generated/sn_allgather_pkt_8.json: OK (allgather_pkt, allgather, 8 ranks)\n");
  const std::string bad = plantest::planDataDir() + "/invalid/index_out_of_range.json";
  const std::string cut = plantest::planDataDir() + "/invalid/truncated.json";
  r = runCli({"validate", bad, good, cut});
  CHECK(r.status == 1);
  CHECK(r.out == good + ": OK (allreduce, allreduce, 2 ranks)\n");
  CHECK(contains(r.err,
                 bad + ": gpus[0].threadblocks[0].ops[0].src_buff[0].index=40 out of range (input has 2 chunks)\n"));
  CHECK(contains(r.err, cut + ": invalid JSON at line "));
  r = runCli({"validate"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan validate: needs at least one FILE\nusage: mscclpp-plan validate FILE..."));
}

TEST_CASE("mscclpp-plan info", "[plan][cli]") {
  Run r = runCli({"info", kRef + "committed/allreduce_packet.json"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "plan             allreduce_pkt\n"));
  CHECK(contains(r.out, "protocol         LL\n"));
  CHECK(contains(r.out, "ranks            2 (ranks per node: any)\n"));
  CHECK(contains(r.out, "reduce ops       sum\n"));
  CHECK(contains(r.out, "chunks           input 4, output 4, scratch up to 4 per rank\n"));
  CHECK(contains(r.out, "scratch          chunk x 4 x 2 (LL packets) x 2 (double buffer) per rank (largest rank)\n"));
  CHECK(contains(r.out, "threadblocks     4 (2 to 2 per rank)\n"));
  CHECK(contains(r.out, "ops              8: ppkt 2, respkt 4, upkt 2\n"));
  CHECK(contains(r.out, "channels         memory 2, port 0, switch 0 (+0 implicit pairs)\n"));
  CHECK(contains(r.out,
                 "message sizes    any size in [0 B, unbounded]: multiples of 64 B (64 bytes) fit its chunks "
                 "exactly, others run padded up to the next one; e.g. 64 B: chunk 16 B, scratch 256 B per rank\n"));
  r = runCli({"info", kRef + "generated/ut_flush_test.json"});
  CHECK(contains(r.out, "channels         memory 0, port 1, switch 0 (+1 implicit pairs)\n"));
  CHECK(contains(r.out, "message sizes    none: the plan has no input or output chunks\n"));
  r = runCli({"info", plantest::planDataDir() + "/invalid/index_out_of_range.json"});
  CHECK(r.status == 1);
  r = runCli({"info"});
  CHECK(r.status == 2);
}

TEST_CASE("mscclpp-plan select", "[plan][cli]") {
  const std::string dir = plantest::planDataDir() + "/select";
  Run r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2", "--ranks-per-node", "2",
                  "--bytes", "1K", "--inplace"});
  CHECK(r.status == 0);
  CHECK(r.out ==
        "plan: ar_small (" + dir + "/allreduce_2r_small.json)\nplan 'ar_small' (" + dir +
            "/allreduce_2r_small.json) for allreduce on 2 ranks (2 per node), 1 KiB, in-place, float32, sum: "
            "preferred over the other 1 that can serve it because its size range [0 B, 64 KiB] is narrower than "
            "[0 B, unbounded]; chunk 512 B\n");
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2", "--bytes", "1M", "--dtype", "bf16",
              "--op", "max"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "plan: ar_any ("));
  CHECK(contains(r.out,
                 "1 MiB, out-of-place, bfloat16, max: the only one of 2 candidate(s) that can serve it; chunk 512 KiB; "
                 "the plan is in-place and the call is not"));
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2", "--bytes", "1002", "--inplace"});
  CHECK(r.status == 1);
  CHECK(contains(r.out,
                 "no plan: no plan for allreduce on 2 ranks (2 per node), 1002 B, in-place, float32, sum: 'ar_any' ("));
  r = runCli({"select", "--dir", dir, "--collective", "allgather", "--ranks", "2", "--bytes", "64", "--tag", "demo"});
  CHECK(r.status == 1);
  CHECK(contains(r.out, "it lacks the tag \"demo\""));
  r = runCli({"select", "--dir", dir, "--collective", "reduce", "--ranks", "4", "--bytes", "64", "--root", "2"});
  CHECK(r.status == 1);
  CHECK(contains(r.out, "none is registered for reduce on 4 ranks (3 plan(s) registered)"));

  // usage errors exit with 2 and say what is wrong
  r = runCli({"select", "--collective", "allreduce", "--ranks", "2", "--bytes", "1K"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --dir is required\n"));
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2", "--bytes", "1X"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --bytes '1X': unknown unit 'X'; a byte count is a whole number"));
  r = runCli({"select", "--dir", dir, "--collective", "allreduse", "--ranks", "2", "--bytes", "1K"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --collective 'allreduse' is not one of"));
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2", "--bytes"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --bytes needs a value\n"));
  r = runCli({"select", "--dir", dir, "--frobnicate"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: unknown option '--frobnicate'\n"));
  r = runCli({"frob"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan: unknown command 'frob'\n"));
  r = runCli({});
  CHECK(r.status == 2);
  r = runCli({"--help"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "usage: mscclpp-plan validate FILE..."));
  r = runCli({"select", "--help"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "usage: mscclpp-plan validate FILE..."));
  CHECK(r.err.empty());
  r = runCli({"--version"});
  CHECK(r.status == 0);
  CHECK(r.out == "mscclpp-plan (MSCCL++) " MSCCLPP_VERSION_STRING "\n");
  // numbers and sizes are checked whole, with a precise error
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2x", "--bytes", "1K"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --ranks '2x': not an integer (trailing 'x')\n"));
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "-2", "--bytes", "1K"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --ranks '-2': must not be negative\n"));
  r = runCli({"select", "--dir", dir, "--collective", "allreduce", "--ranks", "2", "--bytes", "99999999999999999999"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan select: --bytes '99999999999999999999': too large: more than 2^64 - 1 bytes\n"));
  r = runCli({"select", "--dir=" + dir, "--collective=allreduce", "--ranks=2", "--ranks-per-node=2", "--bytes=1KiB",
              "--inplace"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "plan: ar_small ("));
  r = runCli({"validate", "--strict", kRef + "committed/allreduce.json"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "mscclpp-plan validate: unknown option '--strict'\n"));
}

TEST_CASE("mscclpp-plan info and select: gather and scatter", "[plan][cli]") {
  const std::string presets = plantest::planDataDir() + "/../../../plans";
  Run r = runCli({"info", presets + "/scatter_put_n4_oop_root3.json"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "collective       scatter\n"));
  CHECK(contains(r.out, "root             3\n"));
  // The message is the per-rank part: one output chunk; the input holds 4 of them.
  CHECK(contains(r.out,
                 "message sizes    any size in [0 B, unbounded]: multiples of 16 B (16 bytes) fit its "
                 "chunks exactly, others run padded up to the next one; e.g. 16 B: chunk 16 B"));
  r = runCli({"select", "--dir", presets, "--collective", "gather", "--ranks", "4", "--bytes", "4K", "--root", "2"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "plan: gather_put_n4_oop_root2 ("));
  CHECK(contains(r.out, "for gather on 4 ranks (4 per node), 4 KiB, out-of-place, float32, root 2: "));
  CHECK(contains(r.out, "; chunk 4 KiB\n"));
  r = runCli({"select", "--dir", presets, "--collective", "scatter", "--ranks", "4", "--bytes", "4K", "--root", "1",
              "--inplace"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "plan: scatter_put_n4_ip_root1 ("));
}

TEST_CASE("mscclpp-plan explain: every candidate, and why", "[plan][cli]") {
  const std::string presets = MSCCLPP_SOURCE_PLAN_DIR;
  plantest::TempDir mine;
  std::ifstream in(presets + "/allreduce_allpairs_n4_ip.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string from = "\"name\":\"allreduce_allpairs_n4_ip\"";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), "\"name\":\"mine\"");
  plantest::writeFile(mine.file("mine.json"), text);
  Run r = runCli({"explain", "--dir", presets, "--register", mine.file("mine.json"), "--collective", "allreduce",
                  "--ranks", "4", "--bytes", "2M", "--inplace"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "runs: 'mine'\n"));
  CHECK(contains(r.out, "  RUNS   'mine' (" + mine.file("mine.json") + ") [registered]: chosen by the default rule\n"));
  CHECK(contains(r.out, "  loses  'allreduce_allpairs_n4_ip' (" + presets +
                            "/allreduce_allpairs_n4_ip.json) [installed default]: 'mine' goes first because it is "
                            "the user's plan (registered) and the other an installed default\n"));
  CHECK(contains(r.out, "  cannot 'allreduce_ll_n4_ip' ("));
  // No plan: exit 1, and each candidate's reason.
  r = runCli({"explain", "--dir", presets, "--collective", "allreduce", "--ranks", "3", "--bytes", "2M"});
  CHECK(r.status == 1);
  CHECK(contains(r.out, "runs: no plan (NCCL runs it)\n"));
  // Without --dir: the runtime's directories. From the build folder,
  // with no MSCCLPP_PLAN_DIR, the source tree's plans are the defaults.
  const char* saved = std::getenv("MSCCLPP_PLAN_DIR");
  const std::string savedDir = saved ? saved : "";
  unsetenv("MSCCLPP_PLAN_DIR");
  setenv("MSCCLPP_CACHE_DIR", mine.path().c_str(), 1);
  r = runCli({"explain", "--collective", "allreduce", "--ranks", "4", "--bytes", "4K", "--inplace"});
  unsetenv("MSCCLPP_CACHE_DIR");
  if (saved) setenv("MSCCLPP_PLAN_DIR", savedDir.c_str(), 1);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "runs: 'allreduce_ll_n4_ip'\n"));
  CHECK(contains(r.out, "plan directories:\n  " + presets + " (installed defaults)\n  " + mine.path() +
                            "/plans (your plan directory)\n"));
  CHECK_FALSE(contains(r.out, "skipped"));  // an absent plan cache is no problem
  r = runCli({"explain", "--collective", "allreduce", "--ranks", "4"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--bytes"));
}
