// bench_runtime_bootstrap: how long N processes
// on this machine take to form a job.
//
//   bench_runtime_bootstrap [--ranks 2,4,8,16,32,64] [--repeat 3]
//
// For each N, the parent creates the unique id, which
// starts the root as rank 0 does in PyTorch, and forks N
// ranks. Each rank measures from the fork to a bootstrap
// initialized with a barrier, and to a Communicator built
// on it with a second barrier. A job takes its slowest
// rank's time; the median over the repeats is printed.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mscclpp/communicator.hpp"
#include "support/args.hpp"

using Clock = std::chrono::steady_clock;

namespace {

struct Times {
  double bootstrapMs;
  double communicatorMs;
};

double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// Runs one job of n ranks; returns the
// slowest rank's times (negative on failure).
Times runJob(int n) {
  mscclpp::UniqueId id = mscclpp::TcpBootstrap::createUniqueId();
  int fds[2];
  if (pipe(fds) != 0) return {-1, -1};
  Clock::time_point start = Clock::now();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      Times t{-1, -1};
      try {
        auto b = std::make_shared<mscclpp::TcpBootstrap>(r, n);
        b->initialize(id);
        b->barrier();
        t.bootstrapMs = ms(start, Clock::now());
        mscclpp::Communicator comm(b, mscclpp::kHostDevice);
        b->barrier();
        t.communicatorMs = ms(start, Clock::now());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      ssize_t w = write(fds[1], &t, sizeof(t));
      _exit(w == sizeof(t) && t.bootstrapMs >= 0 ? 0 : 1);
    }
    pids.push_back(pid);
  }
  close(fds[1]);
  Times worst{0, 0};
  bool ok = true;
  for (int r = 0; r < n; ++r) {
    Times t;
    if (read(fds[0], &t, sizeof(t)) != sizeof(t) || t.bootstrapMs < 0) {
      ok = false;
      break;
    }
    worst.bootstrapMs = std::max(worst.bootstrapMs, t.bootstrapMs);
    worst.communicatorMs = std::max(worst.communicatorMs, t.communicatorMs);
  }
  close(fds[0]);
  for (pid_t p : pids) {
    int st;
    waitpid(p, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  return ok ? worst : Times{-1, -1};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {2, 4, 8, 16, 32, 64};
  int repeat = 3;
  mscclpp::tools::ArgParser args("bench_runtime_bootstrap",
                                 "usage: bench_runtime_bootstrap [--ranks 2,4,8,16,32,64] [--repeat 3]\n"
                                 "  --ranks: the job sizes to time, each 1 to 1024; --repeat: 1 to 100 (the median is "
                                 "printed)\n");
  args.integerList("--ranks", &sizes, 1, 1024).integer("--repeat", &repeat, 1, 100);
  if (int stop = args.parse(argc, argv); stop != mscclpp::tools::ArgParser::kContinue) return stop;
  std::printf("# ranks  bootstrap+barrier (ms)  +communicator (ms)   [median of %d, slowest rank, from fork]\n",
              repeat);
  for (int n : sizes) {
    std::vector<double> b, c;
    for (int k = 0; k < repeat; ++k) {
      Times t = runJob(n);
      if (t.bootstrapMs < 0) {
        std::printf("%7d  FAILED\n", n);
        return 1;
      }
      b.push_back(t.bootstrapMs);
      c.push_back(t.communicatorMs);
    }
    std::printf("%7d  %22.1f  %18.1f\n", n, median(b), median(c));
    std::fflush(stdout);
  }
  return 0;
}
