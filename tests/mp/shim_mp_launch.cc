#include "shim_mp_launch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace shimmp {

namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int outFd = -1;  // read end of its stdout+stderr
  int inFd = -1;   // write end of its stdin
  std::string output;
  bool exited = false;
  int status = 0;
};

Child spawn(const LaunchOptions& o, int rank) {
  int out[2], in[2];
  if (pipe(out) != 0 || pipe(in) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> argv = {o.program};
  argv.insert(argv.end(), o.args.begin(), o.args.end());
  argv.push_back(std::to_string(rank));
  argv.push_back(std::to_string(o.nRanks));
  // This process's environment with o.env's entries replacing those of the same name (getenv takes the first).
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    bool overridden = false;
    for (const std::string& mine : o.env) {
      size_t eq = mine.find('=');
      overridden = overridden || entry.compare(0, eq + 1, mine, 0, eq + 1) == 0;
    }
    if (!overridden) envs.push_back(entry);
  }
  envs.insert(envs.end(), o.env.begin(), o.env.end());
  // Prepare everything the child needs before fork (no allocation between fork and exec).
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  Child c;
  c.pid = pid;
  c.outFd = out[0];
  c.inFd = in[1];
  return c;
}

// Reads what is available from every child's output; true when all outputs reached EOF.
bool pump(std::vector<Child>& children, int timeoutMs) {
  std::vector<pollfd> fds;
  for (auto& c : children) {
    if (c.outFd >= 0) fds.push_back({c.outFd, POLLIN, 0});
  }
  if (fds.empty()) return true;
  poll(fds.data(), fds.size(), timeoutMs);
  char buf[4096];
  for (auto& c : children) {
    if (c.outFd < 0) continue;
    for (;;) {
      ssize_t n = read(c.outFd, buf, sizeof(buf));
      if (n > 0) {
        c.output.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) {
        close(c.outFd);
        c.outFd = -1;
      }
      break;
    }
  }
  for (auto& c : children) {
    if (c.outFd >= 0) return false;
  }
  return true;
}

}  // namespace

std::vector<RankResult> launchRanks(const LaunchOptions& o) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(o.timeoutSeconds * 1000));
  std::vector<Child> children;
  children.push_back(spawn(o, 0));
  close(children[0].inFd);
  children[0].inFd = -1;
  // Rank 0 prints "ID <hex>" once ncclGetUniqueId returned; pass that line to every other rank.
  std::string idLine;
  while (idLine.empty() && Clock::now() < deadline) {
    bool done = pump(children, 100);
    size_t pos = children[0].output.find("ID ");
    size_t eol = pos == std::string::npos ? std::string::npos : children[0].output.find('\n', pos);
    if (eol != std::string::npos) idLine = children[0].output.substr(pos, eol - pos + 1);
    if (done && idLine.empty()) break;
  }
  for (int r = 1; r < o.nRanks && !idLine.empty(); ++r) {
    children.push_back(spawn(o, r));
    ssize_t w = write(children.back().inFd, idLine.data(), idLine.size());
    (void)w;
    close(children.back().inFd);
    children.back().inFd = -1;
  }
  // Collect output until every rank closed it, then reap; kill whatever is left at the deadline.
  while (!pump(children, 100) && Clock::now() < deadline) {
  }
  for (auto& c : children) {
    while (!c.exited) {
      pid_t p = waitpid(c.pid, &c.status, WNOHANG);
      if (p == c.pid) {
        c.exited = true;
        break;
      }
      if (Clock::now() >= deadline) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &c.status, 0);
        c.exited = true;
        c.output += "\n[launcher] killed at the deadline";
        c.status = -1;
        break;
      }
      pump(children, 20);
    }
    if (c.outFd >= 0) {
      close(c.outFd);
      c.outFd = -1;
    }
  }
  std::vector<RankResult> results;
  for (size_t r = 0; r < children.size(); ++r) {
    RankResult res;
    res.rank = static_cast<int>(r);
    res.output = children[r].output;
    if (children[r].status != -1 && WIFEXITED(children[r].status)) res.exitCode = WEXITSTATUS(children[r].status);
    results.push_back(res);
  }
  if (idLine.empty()) {
    RankResult missing;
    missing.rank = 1;
    missing.output = "[launcher] rank 0 never printed its unique id; the other ranks were not started";
    results.push_back(missing);
  }
  return results;
}

std::string describeFailures(const std::vector<RankResult>& results) {
  std::string s;
  for (const auto& r : results) {
    if (r.exitCode == 0 && r.output.find("RESULT OK") != std::string::npos) continue;
    s += "rank " + std::to_string(r.rank) + " exited with " + std::to_string(r.exitCode) + ":\n" + r.output + "\n";
  }
  return s;
}

}  // namespace shimmp
