// exec_mp_worker: one rank of an execution-plan run across processes and
// hosts. runtime_launch or runtime_netns_run.sh starts it with RANK,
// WORLD_SIZE and MSCCLPP_COMM_ID set. It builds a TcpBootstrap, a CPU-backend
// Communicator and an Executor, loads a plan and runs one scenario:
// run, test, kill, fault, unreachable or refuse. Each scenario* function
// says what it checks; the usage text in main lists their arguments.
// Exit status 0: this rank passed; 1: it failed, the reason on stderr;
// 2: bad usage.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "executor/executor_internal.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan_loader.hpp"

using namespace mscclpp;

namespace {

int gRank = -1;
int gSize = -1;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "exec_mp_worker rank %d: FAILED: %s\n", gRank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') fail(std::string(name) + " is not set (start this program with runtime_launch)");
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 20) fail(std::string(name) + "=" + v + " is not a rank number");
  return static_cast<int>(x);
}

std::vector<size_t> parseSizes(const std::string& text) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v == 0 || v % 4 != 0)
      fail("--sizes: '" + item + "' is not a positive multiple of 4 bytes");
    out.push_back(static_cast<size_t>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

// Integer-valued and small: the sum over 64 ranks stays exact in float.
float inputValue(int rank, size_t i) { return static_cast<float>((i * 7 + 3) % 101) + 100.0f * rank + 1.0f; }

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Job {
  // Held until the process ends: a survivor that failed in init must not look
  // like a leaving or dead rank to the others while they still find out about
  // the victim.
  std::shared_ptr<TcpBootstrap> bootstrap;
  std::shared_ptr<Communicator> comm;
  std::unique_ptr<exec::RuntimeExecutor> executor;
};

Job join() {
  std::fprintf(stderr, "exec_mp_worker rank %d: pid %d\n", gRank, static_cast<int>(getpid()));
  Job j;
  auto bootstrap = std::make_shared<TcpBootstrap>(gRank, gSize);
  bootstrap->initialize(TcpBootstrap::createUniqueId(), 0);  // the id comes from MSCCLPP_COMM_ID
  j.comm = std::make_shared<Communicator>(bootstrap, kHostDevice);
  j.executor = std::make_unique<exec::RuntimeExecutor>(j.comm);
  return j;
}

plan::PlanPtr load(const std::string& path) {
  plan::PlanPtr p = plan::loadPlanFile(path, plan::LoadOptions{gRank});
  if (static_cast<int>(p->ranks.size()) != gSize)
    fail(path + " is written for " + std::to_string(p->ranks.size()) + " ranks, the job has " + std::to_string(gSize));
  return p;
}

// One allreduce call of `bytes` on plan p; returns the first mismatch ("" when every element is right).
std::string runAllReduce(exec::RuntimeExecutor& ex, const plan::PlanPtr& p, size_t bytes, std::vector<float>& send,
                         std::vector<float>& recv, const std::vector<float>& expect, double* seconds = nullptr) {
  const size_t count = bytes / 4;
  const bool inPlace = p->header.inPlace;
  float* in = send.data();
  float* out = inPlace ? send.data() : recv.data();
  for (size_t i = 0; i < count; ++i) in[i] = inputValue(gRank, i);
  if (!inPlace) std::memset(out, 0xA5, bytes);  // poison: a missed element cannot look right
  auto t0 = std::chrono::steady_clock::now();
  ex.execute(gRank, in, out, bytes, bytes, DataType::Float32, p);
  if (seconds != nullptr) *seconds += secondsSince(t0);
  for (size_t i = 0; i < count; ++i) {
    if (out[i] != expect[i]) {
      char buf[256];
      std::snprintf(buf, sizeof(buf), "element %zu (byte %zu): expected %g, got %g", i, i * 4, expect[i], out[i]);
      return buf;
    }
  }
  return std::string();
}

// run: every allreduce plan at every size, K launches back to back on each.
// Every output element is checked against a reference computed here. Inputs
// are small integer-valued floats, so sums are exact in any order. In-place
// plans get in-place calls (send == recv), out-of-place plans the others.
int scenarioRun(const std::vector<std::string>& plans, const std::vector<size_t>& sizes, int iterations) {
  Job job = join();
  size_t launches = 0;
  auto start = std::chrono::steady_clock::now();
  for (const std::string& path : plans) {
    plan::PlanPtr p = load(path);
    if (p->header.collective != plan::Collective::AllReduce) fail(path + ": the 'run' scenario checks allreduce plans");
    for (size_t bytes : sizes) {
      const size_t count = bytes / 4;
      std::vector<float> send(count), recv(count), expect(count, 0.0f);
      for (size_t i = 0; i < count; ++i)
        for (int r = 0; r < gSize; ++r) expect[i] += inputValue(r, i);
      double inExecute = 0;
      for (int it = 0; it < iterations; ++it) {
        // The first launch builds the context (connections, registrations): timed apart.
        double* timed = it == 0 ? nullptr : &inExecute;
        std::string bad = runAllReduce(*job.executor, p, bytes, send, recv, expect, timed);
        if (!bad.empty())
          fail(p->header.name + " " + std::to_string(bytes) + " bytes, iteration " + std::to_string(it) + ": " + bad);
        ++launches;
      }
      if (gRank == 0 && iterations > 1)
        std::printf("exec_mp_worker rank 0: %s %zu bytes: %.1f us per execute (mean of launches 2..%d)\n",
                    p->header.name.c_str(), bytes, inExecute / (iterations - 1) * 1e6, iterations);
    }
  }
  std::printf("exec_mp_worker rank %d (host %s, %d ranks on it): %zu launches checked in %.2f s\n", gRank,
              job.comm->hostId().c_str(), job.comm->nRanksPerNode(), launches, secondsSince(start));
  return 0;
}

// test: a "test" plan has no reference result; it must complete K times on
// every rank.
int scenarioTest(const std::string& path, size_t bytes, int iterations) {
  Job job = join();
  plan::PlanPtr p = load(path);
  std::vector<char> in(bytes, 1), out(bytes, 0);
  for (int it = 0; it < iterations; ++it)
    job.executor->execute(gRank, in.data(), out.data(), bytes, bytes, DataType::Float32, p);
  std::printf("exec_mp_worker rank %d (host %s): %s completed %d times at %zu bytes\n", gRank,
              job.comm->hostId().c_str(), p->header.name.c_str(), iterations, bytes);
  return 0;
}

// kill: K good launches, then rank VICTIM SIGKILLs itself as the next
// collective starts. Every other rank's call must fail with an Error within
// MSCCLPP_TIMEOUT_S plus a margin.
int scenarioKill(const std::string& path, int victim, int iterations) {
  if (victim < 0 || victim >= gSize) fail("kill: victim " + std::to_string(victim) + " is not a rank");
  Job job = join();
  plan::PlanPtr p = load(path);
  const size_t bytes = 1 << 20;
  const size_t count = bytes / 4;
  std::vector<float> send(count), recv(count), expect(count, 0.0f);
  for (size_t i = 0; i < count; ++i)
    for (int r = 0; r < gSize; ++r) expect[i] += inputValue(r, i);
  const char* t = std::getenv("MSCCLPP_TIMEOUT_S");
  const double timeout = t ? std::atof(t) : 0;
  // A dead peer is found by the bootstrap's liveness protocol, whatever the deadline of live waits.
  const double limit = timeout > 0 ? std::min(timeout * 1.5 + 3, 10.0) : 10.0;
  // Collectives 0..K-1 are good. The victim dies once its collective K-1
  // returned; a peer may still be completing K-1 then (its last flush waits for
  // the victim's acknowledgement), so a failure of K-1 is as right as one of K.
  // Every other rank must fail by collective K, within the deadline.
  for (int it = 0; it <= iterations; ++it) {
    if (it == iterations && gRank == victim) {
      std::fprintf(stderr, "exec_mp_worker rank %d: killing myself as collective %d starts\n", gRank, it);
      std::fflush(stderr);
      kill(getpid(), SIGKILL);
    }
    auto start = std::chrono::steady_clock::now();
    try {
      std::string bad = runAllReduce(*job.executor, p, bytes, send, recv, expect);
      if (!bad.empty()) fail("kill: iteration " + std::to_string(it) + ": " + bad);
    } catch (const Error& e) {
      const double took = secondsSince(start);
      if (it < iterations - 1)
        fail("kill: collective " + std::to_string(it) + " failed before the victim died: " + e.what());
      if (took > limit) fail("kill: the call failed only after " + std::to_string(took) + " s");
      std::printf(
          "exec_mp_worker rank %d: collective %d (rank %d dead) failed after %.2f s (MSCCLPP_TIMEOUT_S=%g): "
          "%s\n",
          gRank, it, victim, took, timeout, std::string(e.what()).substr(0, 400).c_str());
      std::fflush(stdout);
      std::_Exit(0);  // the job is broken: skip tearing down connections to a dead peer
    }
  }
  fail("kill: the collective succeeded although rank " + std::to_string(victim) + " was dead");
}

// Records now as the fault's time in $MSCCLPP_FAULT_FILE, for the others to time their errors.
void recordFaultTime() {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  if (const char* file = std::getenv("MSCCLPP_FAULT_FILE")) {
    if (FILE* f = std::fopen(file, "w")) {
      std::fprintf(f, "%.6f\n", now.tv_sec + now.tv_nsec * 1e-9);
      std::fclose(f);
    }
  }
}

// Stops this process for `seconds` (SIGSTOP, then SIGCONT from a child of
// its own) `delayUs` microseconds from the call, while it goes on with its
// phase: a debugger or py-spy attached, a VM migrating. Returns the read end
// of a pipe the child writes once it stopped us: reading it waits for the stop.
int pauseSelfAfter(long delayUs, double seconds) {
  int stopped[2];
  if (pipe(stopped) != 0) fail("pause: pipe failed");
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child != 0) {
    close(stopped[1]);
    return stopped[0];
  }
  close(stopped[0]);
  usleep(static_cast<useconds_t>(delayUs));
  kill(parent, SIGSTOP);
  (void)!write(stopped[1], "s", 1);
  usleep(static_cast<useconds_t>(seconds * 1e6));
  kill(parent, SIGCONT);
  std::_Exit(0);
}

// Kills this process `delayUs` microseconds from the call, on a thread of its
// own while the main thread goes on with its phase. The time of death goes to
// $MSCCLPP_FAULT_FILE first, so the others can time their errors.
void killSelfAfter(long delayUs) {
  std::thread([delayUs] {
    std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
    recordFaultTime();
    kill(getpid(), SIGKILL);
  }).detach();
}

// Seconds since the victim's recorded death (negative when it has not died yet).
double secondsSinceDeath() {
  const char* file = std::getenv("MSCCLPP_FAULT_FILE");
  double death = 0;
  if (file != nullptr) {
    if (FILE* f = std::fopen(file, "r")) {
      if (std::fscanf(f, "%lf", &death) != 1) death = 0;
      std::fclose(f);
    }
  }
  if (death == 0) return -1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return now.tv_sec + now.tv_nsec * 1e-9 - death;
}

// A survivor's failed call: RemoteError naming the victim, and the next call fails at once with it too.
// A victim that left must be named as having left; one that died as having failed.
[[noreturn]] void survivorFailed(const Error& e, Job& job, const plan::PlanPtr& p, int victim, const char* where,
                                 bool left = false) {
  const double detect = secondsSinceDeath();
  const std::string m = e.what();
  if (left && (e.code() != ErrorCode::RemoteError ||
               m.find("rank " + std::to_string(victim) + " (host ") == std::string::npos ||
               m.find(") left: ") == std::string::npos))
    fail(std::string("fault: ") + where +
         " failed, but not with RemoteError saying the victim left: " + m.substr(0, 600));
  // The communicator names a rank with its host id, the bootstrap (during init) with its host's address.
  const std::string victimName = "rank " + std::to_string(victim);
  const bool named =
      m.find(victimName + " (host ") != std::string::npos || m.find(victimName + " at ") != std::string::npos;
  // A victim killed before its hello reached the root never arrives: the root
  // names it as missing; when it is rank 0, which hosts the root, the others
  // cannot connect.
  const bool neverArrived = e.code() == ErrorCode::Timeout && std::string(where) == "the rendezvous" &&
                            (m.find("ranks " + std::to_string(victim) + " (1 of ") != std::string::npos ||
                             (victim == 0 && m.find("cannot connect to the bootstrap root") != std::string::npos &&
                              m.find("hosted by rank 0") != std::string::npos));
  if (neverArrived) {
  } else if (e.code() != ErrorCode::RemoteError || !named)
    fail(std::string("fault: ") + where + " failed with " + errorCodeName(e.code()) + ", not RemoteError naming " +
         victimName + " and its host: " + m.substr(0, 600));
  if (detect < 0) fail(std::string("fault: ") + where + " failed before the victim died: " + m.substr(0, 600));
  double next = -1;
  if (job.executor) {
    std::vector<float> buf(1024, 1.0f);
    auto t0 = std::chrono::steady_clock::now();
    try {
      job.executor->execute(gRank, buf.data(), buf.data(), 4096, 4096, DataType::Float32, p);
      fail("fault: a call after the failure succeeded");
    } catch (const Error& again) {
      next = secondsSince(t0);
      if (again.code() != ErrorCode::RemoteError) fail(std::string("fault: the next call failed with ") + again.what());
    }
    if (next > 1) fail("fault: the next call took " + std::to_string(next) + " s to fail");
    ErrorCode async = ErrorCode::InternalError;
    if (job.comm && !job.comm->asyncError(&async, nullptr)) fail("fault: no async error after the failed calls");
    if (job.comm && async != ErrorCode::RemoteError)
      fail(std::string("fault: the async error is ") + errorCodeName(async) + ", not RemoteError");
  }
  auto t0 = std::chrono::steady_clock::now();
  job.executor.reset();
  job.comm.reset();
  const double teardown = secondsSince(t0);
  // Stay until every survivor has its error (or 5 s): a survivor that exits at
  // once would look dead to the others, which may still be waiting on it and
  // would then rightly blame it instead of the victim.
  const std::string done = std::string(std::getenv("MSCCLPP_FAULT_FILE")) + ".survivor.";
  std::fclose(std::fopen((done + std::to_string(gRank)).c_str(), "w"));
  for (auto w = std::chrono::steady_clock::now(); secondsSince(w) < 5;) {
    int n = 0;
    for (int r = 0; r < gSize; ++r) n += access((done + std::to_string(r)).c_str(), F_OK) == 0;
    if (n >= gSize - 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::printf("FAULT rank %d: error %.3f s after the fault (%s); next call failed in %.3f s; teardown %.3f s: %s\n",
              gRank, detect, where, next, teardown, m.substr(0, 200).c_str());
  std::fflush(stdout);
  std::_Exit(0);
}

// fault: one run of the fault sweep (tools/ci/fault_sweep.py). Rank VICTIM
// SIGKILLs itself DELAY_US microseconds after PHASE begins:
//   rendezvous  the bootstrap's initialize, before, during or after its hello
//   init        after the rendezvous: communicator, executor, first context
//   first       the first collective
//   steady      collective K/2
//   destroy     the teardown after K collectives
// or, in the steady state, does something else than die:
//   leave       destroys its executor, communicator and bootstrap DELAY_US
//               after collective K/2 and exits cleanly; the others go on
//   pause       is stopped (SIGSTOP) DELAY_US into collective K/2 for
//               MSCCLPP_TEST_PAUSE_S seconds, then continued
// Survivors check every result. A failed call must be RemoteError naming the
// victim (survivorFailed) as failed, or as left, the next call must fail at
// once, the async error must be set, and teardown must end. A paused victim
// fails nobody. Prints the "FAULT rank R: ..." lines the sweep parses.
int scenarioFault(const std::string& path, int victim, const std::string& phase, long delayUs, int iterations) {
  if (victim < 0 || victim >= gSize) fail("fault: victim " + std::to_string(victim) + " is not a rank");
  if (phase != "rendezvous" && phase != "init" && phase != "first" && phase != "steady" && phase != "destroy" &&
      phase != "leave" && phase != "pause")
    fail("fault: phase '" + phase + "' is not rendezvous, init, first, steady, destroy, leave or pause");
  std::fprintf(stderr, "exec_mp_worker rank %d: pid %d\n", gRank, static_cast<int>(getpid()));
  const bool victimHere = gRank == victim;
  const bool leave = phase == "leave";
  const int killAt = phase == "first" ? 0 : phase == "steady" ? iterations / 2 : -1;
  const int leaveAfter = leave ? iterations / 2 : -1;
  Job job;
  plan::PlanPtr p = load(path);
  const size_t bytes = 64 * 1024, count = bytes / 4;
  std::vector<float> send(count), recv(count), expect(count, 0.0f);
  for (size_t i = 0; i < count; ++i)
    for (int r = 0; r < gSize; ++r) expect[i] += inputValue(r, i);
  try {
    auto bootstrap = job.bootstrap = std::make_shared<TcpBootstrap>(gRank, gSize);
    if (victimHere && phase == "rendezvous") killSelfAfter(delayUs);
    try {
      bootstrap->initialize(TcpBootstrap::createUniqueId(), 0);
    } catch (const Error& e) {
      survivorFailed(e, job, p, victim, "the rendezvous");
    }
    if (victimHere && phase == "init") killSelfAfter(delayUs);
    job.comm = std::make_shared<Communicator>(bootstrap, kHostDevice);
    job.executor = std::make_unique<exec::RuntimeExecutor>(job.comm);
  } catch (const Error& e) {
    survivorFailed(e, job, p, victim, "init");
  }
  double longest = 0;
  int pausePipe = -1;
  for (int it = 0; it < iterations; ++it) {
    if (victimHere && it == killAt) killSelfAfter(delayUs);
    if (victimHere && phase == "pause" && it == iterations / 2) {
      const char* seconds = std::getenv("MSCCLPP_TEST_PAUSE_S");
      pausePipe = pauseSelfAfter(delayUs, seconds ? std::atof(seconds) : 2.0);
    }
    if (pausePipe >= 0 && it == iterations / 2 + 1) {
      // Stopped during collective K/2 or before K/2+1 starts: the others wait in a call.
      char c;
      (void)!read(pausePipe, &c, 1);
      close(pausePipe);
      pausePipe = -1;
    }
    if (leave && victimHere && it == leaveAfter + 1) {
      // Leaves on purpose while the others go on: as ncclCommDestroy and a clean exit.
      std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
      recordFaultTime();
      job.executor.reset();
      job.comm.reset();
      job.bootstrap.reset();
      std::printf("FAULT rank %d: left after %d collectives\n", gRank, it);
      std::fflush(stdout);
      std::exit(0);
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
      std::string bad = runAllReduce(*job.executor, p, bytes, send, recv, expect);
      if (!bad.empty()) fail("fault: WRONG RESULT in collective " + std::to_string(it) + ": " + bad);
    } catch (const Error& e) {
      survivorFailed(e, job, p, victim, it == 0 ? "the first collective" : "a collective", leave);
    }
    longest = std::max(longest, secondsSince(t0));
  }
  if (leave && !victimHere) fail("fault: every collective succeeded although rank " + std::to_string(victim) + " left");
  const bool dies = phase != "pause";
  if (victimHere && dies && phase != "destroy") pause();  // killed in its phase; its kill may still be on the way
  if (victimHere && dies) killSelfAfter(delayUs);
  auto t0 = std::chrono::steady_clock::now();
  try {
    job.executor.reset();
    job.comm.reset();
  } catch (const Error& e) {
    fail(std::string("fault: teardown threw: ") + e.what());
  }
  if (victimHere && dies) pause();                                    // the killer thread ends it
  if (phase == "pause" && victimHere) waitpid(-1, nullptr, WNOHANG);  // the child that stopped us
  std::printf("FAULT rank %d: completed %d collectives (longest %.3f s); teardown %.3f s\n", gRank, iterations, longest,
              secondsSince(t0));
  std::fflush(stdout);
  return 0;
}

// unreachable: every rank runs collectives in a loop while
// runtime_netns_run.sh --cut-link-after takes host B's link down, closing
// nothing. Each rank's call must fail within 10 s of the cut with RemoteError
// naming a rank of the other host. Every result before the cut is checked.
int scenarioUnreachable(const std::string& path) {
  Job job = join();
  plan::PlanPtr p = load(path);
  const size_t bytes = 4096, count = bytes / 4;
  std::vector<float> send(count), recv(count), expect(count, 0.0f);
  for (size_t i = 0; i < count; ++i)
    for (int r = 0; r < gSize; ++r) expect[i] += inputValue(r, i);
  const int half = gSize / 2;
  const bool onHostA = gRank < half;
  const char* cutFile = std::getenv("MSCCLPP_TEST_CUT_FILE");
  if (cutFile == nullptr)
    fail("unreachable: MSCCLPP_TEST_CUT_FILE is not set (run under runtime_netns_run.sh --cut-link-after)");
  // The wall-clock time the script wrote when it cut the link, 0 before.
  auto cutTime = [&] {
    double cut = 0;
    if (FILE* f = std::fopen(cutFile, "r")) {
      if (std::fscanf(f, "%lf", &cut) != 1) cut = 0;
      std::fclose(f);
    }
    return cut;
  };
  auto wallNow = [] {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
  };
  // Calls go on until one fails; measured from the cut, whenever the script
  // manages to make it (a loaded kernel may take long to take a link down),
  // within the script's 80 s.
  auto start = std::chrono::steady_clock::now();
  for (int it = 0; secondsSince(start) < 75; ++it) {
    if (it % 256 == 0) {
      const double cut = cutTime();
      if (cut != 0 && wallNow() - cut > 20)
        fail("unreachable: every collective succeeded for 20 s after the link was cut");
    }
    try {
      std::string bad = runAllReduce(*job.executor, p, bytes, send, recv, expect);
      if (!bad.empty()) fail("unreachable: iteration " + std::to_string(it) + ": " + bad);
      // Working: the script cuts the link once every rank said so.
      if (it == 10) std::fclose(std::fopen((std::string(cutFile) + ".ready." + std::to_string(gRank)).c_str(), "w"));
    } catch (const Error& e) {
      const std::string m = e.what();
      const double now = wallNow(), cut = cutTime();
      if (cut == 0) fail("unreachable: the call failed before the link was cut: " + m);
      const double detect = now - cut;
      bool namesOtherHost = false;
      for (int r = onHostA ? half : 0; r < (onHostA ? gSize : half); ++r)
        namesOtherHost = namesOtherHost || m.find("rank " + std::to_string(r) + " (host ") != std::string::npos;
      if (e.code() != ErrorCode::RemoteError || !namesOtherHost)
        fail("unreachable: expected RemoteError naming a rank of the other host, got: " + m);
      if (detect > 10) fail("unreachable: the call failed " + std::to_string(detect) + " s after the cut");
      std::printf("exec_mp_worker rank %d: host %s unreachable: call %d failed %.2f s after the cut: %s\n", gRank,
                  onHostA ? "B" : "A", it, detect, m.substr(0, 300).c_str());
      std::fflush(stdout);
      // Stay until every rank has its error (or 10 s): ranks find the cut at
      // different times (an IB retry, a heartbeat), and one that exited at once
      // would look dead to those still waiting, which would then blame it.
      const std::string done = std::string(cutFile) + ".failed.";
      std::fclose(std::fopen((done + std::to_string(gRank)).c_str(), "w"));
      for (auto w = std::chrono::steady_clock::now(); secondsSince(w) < 10;) {
        int n = 0;
        for (int r = 0; r < gSize; ++r) n += access((done + std::to_string(r)).c_str(), F_OK) == 0;
        if (n >= gSize) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      std::_Exit(0);  // the job is broken: skip tearing down connections to an unreachable host
    }
  }
  fail("unreachable: every collective succeeded for 75 s and the link was " +
       std::string(cutTime() == 0 ? "never cut" : "cut less than 20 s ago"));
}

// refuse: a plan with memory channels between every pair of ranks. On ranks
// spread over hosts, every rank must refuse it at context build with
// NotSupported, naming plan, channel and hosts, and nobody hangs.
int scenarioRefuse(const std::string& path) {
  Job job = join();
  plan::PlanPtr p = load(path);
  std::vector<float> send(1024, 1.0f), recv(1024);
  try {
    job.executor->execute(gRank, send.data(), recv.data(), 4096, 4096, DataType::Float32, p);
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.code() != ErrorCode::NotSupported || m.find("is on another host") == std::string::npos ||
        m.find("across hosts plans must use port channels") == std::string::npos ||
        m.find("plan " + p->header.name) == std::string::npos)
      fail("refuse: unexpected error: " + m);
    std::printf("exec_mp_worker rank %d: refused as expected: %s\n", gRank, m.c_str());
    return 0;
  }
  fail("refuse: " + p->header.name + " ran across hosts although it uses memory channels between them");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(
        stderr,
        "usage: exec_mp_worker run PLAN.json [PLAN.json...] [--sizes B,B] [--iterations K]\n"
        "       exec_mp_worker kill PLAN.json VICTIM [--iterations K]\n"
        "       exec_mp_worker test PLAN.json [--sizes B] [--iterations K]\n"
        "       exec_mp_worker fault PLAN.json VICTIM rendezvous|init|first|steady|destroy|leave|pause DELAY_US "
        "[--iterations K]\n"
        "       exec_mp_worker refuse PLAN.json\n"
        "       exec_mp_worker unreachable PLAN.json\n");
    return 2;
  }
  gRank = envInt("RANK");
  gSize = envInt("WORLD_SIZE");
  const std::string scenario = argv[1];
  std::vector<std::string> positional;
  std::vector<size_t> sizes = {64, 4160, (1 << 20) + 192, 4 << 20};
  int iterations = 5;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      sizes = parseSizes(argv[++i]);
    } else if (a == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
      if (iterations <= 0) fail("--iterations must be positive");
    } else {
      positional.push_back(a);
    }
  }
  try {
    if (scenario == "run" && !positional.empty()) return scenarioRun(positional, sizes, iterations);
    if (scenario == "refuse" && positional.size() == 1) return scenarioRefuse(positional[0]);
    if (scenario == "test" && positional.size() == 1) return scenarioTest(positional[0], sizes[0], iterations);
    if (scenario == "unreachable" && positional.size() == 1) return scenarioUnreachable(positional[0]);
    if (scenario == "fault" && positional.size() == 4)
      return scenarioFault(positional[0], std::atoi(positional[1].c_str()), positional[2],
                           std::atol(positional[3].c_str()), iterations);
    if (scenario == "kill" && positional.size() == 2)
      return scenarioKill(positional[0], std::atoi(positional[1].c_str()), iterations);
  } catch (const std::exception& e) {
    fail(std::string("uncaught: ") + e.what());
  }
  std::fprintf(stderr, "exec_mp_worker: bad arguments for scenario '%s'\n", scenario.c_str());
  return 2;
}
