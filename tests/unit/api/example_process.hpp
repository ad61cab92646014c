// Runs example programs as child processes (one per rank, or one holding every
// rank as threads) and collects their exit status and output, with a deadline
// that kills what is still running.
#ifndef MSCCLPP_TESTS_UNIT_API_EXAMPLE_PROCESS_HPP_
#define MSCCLPP_TESTS_UNIT_API_EXAMPLE_PROCESS_HPP_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mscclpp::test {

struct ProcessResult {
  int exitCode = -1;  // -1: killed (signal or deadline)
  std::string out;
  std::string err;  // stderr without the library's log lines
  std::string log;  // stderr as written
};

inline std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// `text` without the library's log lines ("host:pid:tid [rank] MSCCLPP LEVEL
// ..."): what the program itself wrote.
inline std::string withoutLogLines(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("] MSCCLPP ") == std::string::npos) out += line + "\n";
  }
  return out;
}

// Starts every command at once and waits for all of them (at most timeoutSec;
// then the rest are killed and reported with exitCode -1).
inline std::vector<ProcessResult> runProcesses(const std::vector<std::vector<std::string>>& commands,
                                               double timeoutSec) {
  struct Child {
    pid_t pid;
    std::string outPath, errPath;
    int status;
    bool done;
  };
  std::vector<Child> children;
  for (const auto& argv : commands) {
    char outTemplate[] = "/tmp/mscclpp_api_out_XXXXXX";
    char errTemplate[] = "/tmp/mscclpp_api_err_XXXXXX";
    int outFd = mkstemp(outTemplate), errFd = mkstemp(errTemplate);
    if (outFd < 0 || errFd < 0) throw std::runtime_error("mkstemp failed");
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      dup2(outFd, 1);
      dup2(errFd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(outFd);
    close(errFd);
    children.push_back(Child{pid, outTemplate, errTemplate, 0, false});
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  size_t remaining = children.size();
  while (remaining > 0) {
    bool progressed = false;
    for (auto& c : children) {
      if (!c.done && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.done = true;
        --remaining;
        progressed = true;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (auto& c : children) {
        if (!c.done) {
          kill(c.pid, SIGKILL);
          waitpid(c.pid, &c.status, 0);
          c.status = -1;
          c.done = true;
        }
      }
      break;
    }
    // Polling the children's exit: a bounded wait, not a synchronisation between them.
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<ProcessResult> results;
  for (auto& c : children) {
    ProcessResult r;
    r.exitCode = (c.status != -1 && WIFEXITED(c.status)) ? WEXITSTATUS(c.status) : -1;
    r.out = readFile(c.outPath);
    r.log = readFile(c.errPath);
    r.err = withoutLogLines(r.log);
    unlink(c.outPath.c_str());
    unlink(c.errPath.c_str());
    results.push_back(r);
  }
  return results;
}

// "127.0.0.1:<port>" with a port that was free a moment ago (rank 0's rendezvous binds it).
inline std::string freeLoopbackRoot() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error("could not find a free loopback port");
  }
  close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_UNIT_API_EXAMPLE_PROCESS_HPP_
