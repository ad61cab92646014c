// runtime_launch: runs a command as several ranks (processes) on this
// machine, torchrun-style, so multi-process and multi-host tests start any
// program the same way: runtime_launch [options] -- command [args...].
// The option loop in main says what each option does.
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT and MSCCLPP_COMM_ID. Exit status: 0 when every rank not allowed
// to fail exited 0, else 1; 124 when ranks were killed at the timeout. Prints
// one line per rank that did not exit 0.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/net/socket.hpp"

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "runtime_launch: %s\nusage: runtime_launch --nranks N [--first-rank R] [--local-ranks K] "
               "[--comm-id HOST:PORT] [--timeout S] [--allow-fail R] [--env K=V] -- command [args...]\n",
               why);
  std::exit(2);
}

int toInt(const char* text, const char* what) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!end || *end || v < 0 || v > 1000000) usage((std::string("bad value for ") + what + ": " + text).c_str());
  return static_cast<int>(v);
}

std::string freeLoopbackAddress() {
  mscclpp::net::SocketAddress addr = mscclpp::net::SocketAddress::parse("127.0.0.1:1");
  addr.setPort(0);
  mscclpp::net::Socket s = mscclpp::net::Socket::listenOn(addr);
  return s.localAddress().toString();  // closed on return; the rank 0 root binds it again
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

int main(int argc, char** argv) {
  int nRanks = -1, firstRank = 0, localRanks = -1;
  double timeout = 120;
  std::string commId;
  std::set<int> allowFail;
  std::vector<std::string> extraEnv;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    if (a == "--nranks") {  // the world size; required
      nRanks = toInt(argv[++i], "--nranks");
    } else if (a == "--first-rank") {  // the first rank started here; default 0
      firstRank = toInt(argv[++i], "--first-rank");
    } else if (a == "--local-ranks") {  // start ranks R .. R+K-1 here; default N - R
      localRanks = toInt(argv[++i], "--local-ranks");
    } else if (a == "--comm-id") {  // MSCCLPP_COMM_ID; default: a free 127.0.0.1 port
      commId = argv[++i];
    } else if (a == "--timeout") {  // seconds before every rank left is killed; default 120
      timeout = std::atof(argv[++i]);
    } else if (a == "--allow-fail") {  // this rank may fail or die, as a fault victim; repeatable
      allowFail.insert(toInt(argv[++i], "--allow-fail"));
    } else if (a == "--env") {  // KEY=VALUE for every rank; repeatable
      extraEnv.push_back(argv[++i]);
      if (extraEnv.back().find('=') == std::string::npos) usage("--env needs KEY=VALUE");
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  if (i >= argc) usage("no command after --");
  if (nRanks <= 0) usage("--nranks is required and must be > 0");
  if (localRanks < 0) localRanks = nRanks - firstRank;
  if (firstRank + localRanks > nRanks || localRanks <= 0) usage("--first-rank/--local-ranks exceed --nranks");
  if (commId.empty()) {
    if (firstRank != 0) usage("--comm-id is required when this launcher does not start rank 0");
    commId = freeLoopbackAddress();
  }
  std::string masterAddr = commId.substr(0, commId.rfind(':'));
  std::string masterPort = commId.substr(commId.rfind(':') + 1);

  // SIGCHLD is blocked and waited for with sigtimedwait: a child's exit wakes the launcher at once.
  sigset_t childSet;
  sigemptyset(&childSet);
  sigaddset(&childSet, SIGCHLD);
  sigprocmask(SIG_BLOCK, &childSet, nullptr);
  std::vector<pid_t> pids;
  for (int k = 0; k < localRanks; ++k) {
    int rank = firstRank + k;
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("runtime_launch: fork");
      for (pid_t p : pids) kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      sigprocmask(SIG_UNBLOCK, &childSet, nullptr);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nRanks).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(k).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(localRanks).c_str(), 1);
      setenv("MASTER_ADDR", masterAddr.c_str(), 1);
      setenv("MASTER_PORT", masterPort.c_str(), 1);
      setenv("MSCCLPP_COMM_ID", commId.c_str(), 1);
      for (const auto& kv : extraEnv) putenv(const_cast<char*>(kv.c_str()));
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "runtime_launch: exec %s: %s\n", argv[i], std::strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
  }

  // Reap children until all exited or the deadline passed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  std::vector<int> status(pids.size(), -1);
  std::vector<bool> done(pids.size(), false);
  size_t remaining = pids.size();
  bool timedOut = false;
  while (remaining > 0) {
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (size_t k = 0; k < pids.size(); ++k) {
        if (pids[k] == p && !done[k]) {
          done[k] = true;
          status[k] = st;
          --remaining;
        }
      }
      continue;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      timedOut = true;
      for (size_t k = 0; k < pids.size(); ++k)
        if (!done[k]) kill(pids[k], SIGKILL);
      for (size_t k = 0; k < pids.size(); ++k) {
        if (!done[k]) {
          waitpid(pids[k], &status[k], 0);
          std::fprintf(stderr, "runtime_launch: rank %d still running after %.0f s: killed\n", firstRank + int(k),
                       timeout);
        }
      }
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    long ms = std::max<long>(1, std::min<long>(left.count(), 1000));
    timespec ts{ms / 1000, (ms % 1000) * 1000000};
    sigtimedwait(&childSet, nullptr, &ts);
  }
  int failures = 0;
  for (size_t k = 0; k < pids.size(); ++k) {
    int rank = firstRank + static_cast<int>(k);
    bool ok = done[k] && WIFEXITED(status[k]) && WEXITSTATUS(status[k]) == 0;
    if (ok) continue;
    bool allowed = allowFail.count(rank) > 0;
    std::fprintf(stderr, "runtime_launch: rank %d %s%s\n", rank, done[k] ? describeStatus(status[k]).c_str() : "hung",
                 allowed ? " (allowed)" : "");
    if (!allowed) ++failures;
  }
  if (timedOut) return 124;
  return failures == 0 ? 0 : 1;
}
