// Starts N ranks of a worker program as separate processes the way a launcher
// would: rank 0 first, which calls ncclGetUniqueId and prints the id; the
// others get it on their stdin. Collects every rank's output and exit status
// with a deadline (a hung rank is killed and reported, never waited for
// forever).
#ifndef MSCCLPP_TESTS_MP_SHIM_MP_LAUNCH_HPP_
#define MSCCLPP_TESTS_MP_SHIM_MP_LAUNCH_HPP_

#include <string>
#include <vector>

namespace shimmp {

struct RankResult {
  int rank = -1;
  int exitCode = -1;   // -1: killed at the deadline or by a signal
  std::string output;  // stdout and stderr together
};

struct LaunchOptions {
  std::string program;
  std::vector<std::string> args;  // after the program: the worker gets args + {rank, nRanks}
  std::vector<std::string> env;   // extra "NAME=value" entries on top of this process's environment
  int nRanks = 2;
  double timeoutSeconds = 120;
};

std::vector<RankResult> launchRanks(const LaunchOptions& options);

// "rank 2 exited with 1:\n<output>" for every rank that did not exit 0 with "RESULT OK" in its output.
std::string describeFailures(const std::vector<RankResult>& results);

}  // namespace shimmp

#endif  // MSCCLPP_TESTS_MP_SHIM_MP_LAUNCH_HPP_
