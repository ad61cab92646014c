// Dead, departed and paused peers (docs/failure-handling.md). A peer
// process that is killed or crashes is reported to every rank as failed
// within seconds; one that destroys its bootstrap or exits is reported as
// left; one that is stopped is waited for. Peers that must die, exit or
// stop run as liveness_peer processes; the others are threads of this test.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "../../support/scoped_env.hpp"
#include "bootstrap/liveness_rule.hpp"
#include "bootstrap/message_endpoint.hpp"
#include "bootstrap/wire.hpp"
#include "core/logger.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/errors.hpp"
#include "rank_threads.hpp"

using namespace mscclpp;
using Clock = std::chrono::steady_clock;
using mscclpp::test::runRanks;

namespace {

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the failure listeners of one rank heard: failed rank -> (reason, when).
class Heard {
 public:
  void attach(Bootstrap& b) {
    b.addPeerFailureListener([this](int rank, const std::string& reason, bool left) {
      std::lock_guard<std::mutex> lock(mutex_);
      got_.emplace(rank, std::make_pair(reason, Clock::now()));
      if (left) left_.insert(rank);
    });
  }
  bool left(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    return left_.count(rank) != 0;
  }
  // Waits (bounded) until `rank` was reported; its reason, or "" after the wait.
  std::string waitFor(int rank, double seconds) {
    const auto until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (Clock::now() < until) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = got_.find(rank);
        if (it != got_.end()) return it->second.first;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return "";
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return got_.size();
  }

 private:
  std::mutex mutex_;
  std::multimap<int, std::pair<std::string, Clock::time_point>> got_;
  std::set<int> left_;
};

// A liveness_peer process as `rank` of the job described by `id`.
struct PeerProcess {
  pid_t pid = -1;
  int in = -1;   // its stdin
  int out = -1;  // its stdout

  PeerProcess(const UniqueId& id, int rank, int nRanks) {
    std::string hex;
    for (uint8_t c : id) {
      char b[3];
      std::snprintf(b, sizeof(b), "%02x", c);
      hex += b;
    }
    int toChild[2], fromChild[2];
    REQUIRE(pipe(toChild) == 0);
    REQUIRE(pipe(fromChild) == 0);
    std::string r = std::to_string(rank), n = std::to_string(nRanks);
    const char* argv[] = {LIVENESS_PEER, hex.c_str(), r.c_str(), n.c_str(), nullptr};
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(toChild[0], 0);
      dup2(fromChild[1], 1);
      close(toChild[1]);
      close(fromChild[0]);
      execv(LIVENESS_PEER, const_cast<char**>(argv));
      _exit(127);
    }
    close(toChild[0]);
    close(fromChild[1]);
    in = toChild[1];
    out = fromChild[0];
  }
  // Blocks until the peer printed READY (its bootstrap is initialized).
  bool ready() {
    std::string got;
    char c;
    while (got.find("READY\n") == std::string::npos && read(out, &c, 1) == 1) got += c;
    return got.find("READY\n") != std::string::npos;
  }
  void command(const char* text) { (void)!write(in, text, std::strlen(text)); }
  ~PeerProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    close(in);
    close(out);
  }
};

// Ranks 0..n-2 as threads (returned), rank n-1 as a liveness_peer process.
std::vector<std::shared_ptr<Bootstrap>> withPeerProcess(int n, std::unique_ptr<PeerProcess>* peer) {
  UniqueId id = TcpBootstrap::createUniqueId();
  std::vector<std::shared_ptr<Bootstrap>> out(static_cast<size_t>(n - 1));
  *peer = std::make_unique<PeerProcess>(id, n - 1, n);
  runRanks(n - 1, [&](int r) {
    auto b = std::make_shared<TcpBootstrap>(r, n);
    b->initialize(id);
    out[r] = b;
  });
  REQUIRE((*peer)->ready());
  return out;
}

}  // namespace

TEST_CASE("a killed or crashed peer is reported to all ranks", "[bootstrap][liveness]") {
  test::ScopedEnv interval("MSCCLPP_HEARTBEAT_INTERVAL_S", "0.2");
  test::ScopedEnv limit("MSCCLPP_HEARTBEAT_TIMEOUT_S", "1.5");
  const int n = 5;  // rank 4 is the process; ranks 0 and 3 are its ring neighbours, 1 and 2 hear it from them
  for (const char* kind : {"SIGKILL", "crash"}) {
    SECTION(kind) {
      std::vector<Heard> heard(n - 1);  // outlives the bootstraps, which report to it as they go
      std::unique_ptr<PeerProcess> peer;
      auto bs = withPeerProcess(n, &peer);
      for (int r = 0; r < n - 1; ++r) heard[r].attach(*bs[r]);
      const auto start = Clock::now();
      if (std::string(kind) == "SIGKILL") kill(peer->pid, SIGKILL);
      if (std::string(kind) == "crash") peer->command("crash\n");
      for (int r = 0; r < n - 1; ++r) {
        std::string why = heard[r].waitFor(n - 1, 5);
        INFO("rank " << r << ": " << why);
        CHECK_THAT(why, Catch::Contains("rank 4 at ") && Catch::Contains("closed its bootstrap connection without "
                                                                         "leaving"));
        CHECK_FALSE(heard[r].left(n - 1));
        if (r == 1 || r == 2) CHECK_THAT(why, Catch::Contains("(reported by rank"));
      }
      CHECK(secondsSince(start) < 2.0);
      // Waits on it fail at once, naming it; the live ranks still talk to each other.
      try {
        bs[1]->recv(n - 1, 3, 8);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::RemoteError);
        CHECK_THAT(e.what(), Catch::Contains("rank 4 at "));
      }
      int v = 5, got = 0;
      bs[0]->send(&v, sizeof(v), 2, 1);
      bs[2]->recv(&got, sizeof(got), 0, 1);
      CHECK(got == 5);
      for (int r = 0; r < n - 1; ++r) CHECK(heard[r].count() == 1);  // nobody else was declared failed
    }
  }
}

TEST_CASE("a stopped peer is waited for, then resumes", "[bootstrap][liveness]") {
  test::ScopedEnv interval("MSCCLPP_HEARTBEAT_INTERVAL_S", "0.1");
  test::ScopedEnv limit("MSCCLPP_HEARTBEAT_TIMEOUT_S", "0.4");
  char logPath[] = "/tmp/mscclpp-liveness-log-XXXXXX";
  const int logFd = mkstemp(logPath);
  REQUIRE(logFd >= 0);
  close(logFd);
  test::ScopedEnv logFile("MSCCLPP_DEBUG_FILE", logPath);
  test::ScopedEnv logLevel("MSCCLPP_DEBUG", "WARN");
  reloadLogConfig();
  const int n = 3;
  std::vector<Heard> heard(n - 1);  // outlives the bootstraps, which report to it as they go
  std::unique_ptr<PeerProcess> peer;
  auto bs = withPeerProcess(n, &peer);
  for (int r = 0; r < n - 1; ++r) heard[r].attach(*bs[r]);
  // Stopped for five heartbeat timeouts: its kernel still acknowledges our heartbeats.
  kill(peer->pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (int r = 0; r < n - 1; ++r) CHECK(heard[r].count() == 0);
  // A message sent to it while it was stopped arrives once it runs again.
  int v = 7;
  bs[0]->send(&v, sizeof(v), n - 1, 9);
  kill(peer->pid, SIGCONT);
  peer->command("echo 9 0\n");  // it receives tag 9 from rank 0 and sends it back
  int got = 0;
  bs[0]->recv(&got, sizeof(got), n - 1, 9);
  CHECK(got == 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  for (int r = 0; r < n - 1; ++r) CHECK(heard[r].count() == 0);
  // Each neighbour said, while it was silent, that it waits for it, and then that it was back.
  std::ifstream in(logPath);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(logPath);
  INFO(log);
  CHECK_THAT(log, Catch::Contains("rank 2 at ") && Catch::Contains("but its host acknowledges what we send: its "
                                                                   "process is stopped or starved"));
  CHECK_THAT(log, Catch::Contains("speaks again after"));
}

TEST_CASE("a peer that destroys its bootstrap or exits has left", "[bootstrap][liveness]") {
  test::ScopedEnv interval("MSCCLPP_HEARTBEAT_INTERVAL_S", "0.2");
  test::ScopedEnv limit("MSCCLPP_HEARTBEAT_TIMEOUT_S", "1");
  const int n = 5;  // rank 4 is the process; ranks 1 and 2 never talked to it
  struct Kind {
    const char* command;
    const char* reason;
  };
  for (Kind kind : {Kind{"destroy\n", "said goodbye: it destroyed or finalized its communicator"},
                    Kind{"exit\n", "said goodbye: its process exited without destroying its communicator"}}) {
    SECTION(kind.command) {
      std::vector<Heard> heard(n - 1);  // outlives the bootstraps, which report to it as they go
      std::unique_ptr<PeerProcess> peer;
      auto bs = withPeerProcess(n, &peer);
      for (int r = 0; r < n - 1; ++r) heard[r].attach(*bs[r]);
      const auto start = Clock::now();
      peer->command(kind.command);
      for (int r = 0; r < n - 1; ++r) {
        std::string why = heard[r].waitFor(n - 1, 3);
        INFO("rank " << r << ": " << why);
        CHECK_THAT(why, Catch::Contains("rank 4 at ") && Catch::Contains(kind.reason));
        CHECK(heard[r].left(n - 1));
        if (r == 1 || r == 2) CHECK_THAT(why, Catch::Contains("(reported by rank"));
      }
      CHECK(secondsSince(start) < 1.0);
      int status = 0;
      REQUIRE(waitpid(peer->pid, &status, 0) == peer->pid);
      peer->pid = -1;
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
      CHECK_THROWS_WITH(bs[1]->recv(n - 1, 1, 8), Catch::Contains(kind.reason));
      CHECK_THROWS_WITH(bs[2]->send(&status, sizeof(status), n - 1, 1), Catch::Contains(kind.reason));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nothing more is reported
      for (int r = 0; r < n - 1; ++r) CHECK(heard[r].count() == 1);
    }
  }
  SECTION("threads") {
    Heard heard;
    auto bs = test::makeTcpBootstraps(3);
    heard.attach(*bs[0]);
    bs[1].reset();
    CHECK_THAT(heard.waitFor(1, 1.5), Catch::Contains("said goodbye: it destroyed or finalized"));
    CHECK(heard.left(1));
    // leave() says the same and keeps the object; its later calls fail.
    auto tcp = std::dynamic_pointer_cast<TcpBootstrap>(bs[2]);
    REQUIRE(tcp != nullptr);
    tcp->leave();
    CHECK_THAT(heard.waitFor(2, 1.5), Catch::Contains("said goodbye"));
    CHECK_THROWS_WITH(bs[2]->send(&n, sizeof(n), 0, 1), Catch::Contains("this rank left"));
  }
}

TEST_CASE("a silent neighbour: stopped if its host acknowledges", "[bootstrap][liveness]") {
  using bootstrap::classifyNeighbour;
  using bootstrap::NeighbourFacts;
  using bootstrap::NeighbourState;
  const double t = 6;
  CHECK(classifyNeighbour(NeighbourFacts{1, 0}, t) == NeighbourState::Alive);
  CHECK(classifyNeighbour(NeighbourFacts{6, 7}, t) == NeighbourState::Alive);  // not silent long enough
  CHECK(classifyNeighbour(NeighbourFacts{600, 0}, t) == NeighbourState::Stopped);
  CHECK(classifyNeighbour(NeighbourFacts{600, 5.9}, t) == NeighbourState::Stopped);
  CHECK(classifyNeighbour(NeighbourFacts{7, 6.1}, t) == NeighbourState::Unreachable);
  CHECK(classifyNeighbour(NeighbourFacts{600, 600}, 0) == NeighbourState::Alive);  // MSCCLPP_HEARTBEAT_TIMEOUT_S=0
}

TEST_CASE("a rank dying in the rendezvous fails the others at once", "[bootstrap][liveness]") {
  UniqueId id = TcpBootstrap::createUniqueId();
  auto fields = bootstrap::decodeUniqueId(id);
  // Rank 2 of 3 says hello to the root, then its process dies (the socket closes).
  {
    net::Socket s = net::Socket::connectTo(fields.root, Deadline(5), "root", true);
    bootstrap::RendezvousHello hello{};
    hello.header = net::makeHelloHeader(bootstrap::kRendezvousHelloMagic, fields.secret);
    hello.rank = 2;
    hello.nRanks = 3;
    net::SocketAddress any = fields.root;
    any.setPort(0);
    net::Socket::listenOn(any).localAddress().encode(hello.listenAddress);
    s.sendAll(&hello, sizeof(hello), Deadline(5), "hello");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto start = Clock::now();
  std::vector<std::string> errors(2);
  std::vector<ErrorCode> codes(2, ErrorCode::InternalError);
  runRanks(2, [&](int r) {
    TcpBootstrap b(r, 3);
    try {
      b.initialize(id);
    } catch (const Error& e) {
      codes[r] = e.code();
      errors[r] = e.what();
    }
  });
  CHECK(secondsSince(start) < 3.0);
  for (int r = 0; r < 2; ++r) {
    INFO(errors[r]);
    CHECK(codes[r] == ErrorCode::RemoteError);
    CHECK_THAT(errors[r],
               Catch::Contains("rank 2 at ") && Catch::Contains("closed its connection to the bootstrap root"));
  }
}

TEST_CASE("in process: an aborted rank fails its peers in every view", "[bootstrap][liveness]") {
  Heard world, even, odd, late;  // outlive the bootstraps, which report to them as they go
  auto bs = test::makeInProcessBootstraps(4);
  std::vector<std::shared_ptr<Bootstrap>> views(4);
  runRanks(4, [&](int r) { views[r] = bs[r]->split(r % 2, -r); });  // {0, 2} and {1, 3}, by descending rank
  world.attach(*bs[0]);
  even.attach(*views[0]);  // view {2, 0}: world rank 2 is view rank 0
  odd.attach(*views[1]);
  bs[2]->abort();
  CHECK_THAT(world.waitFor(2, 1), Catch::Contains("rank 2 aborted"));
  CHECK_THAT(even.waitFor(0, 1), Catch::Contains("rank 2 aborted"));
  CHECK(odd.count() == 0);
  // A listener added later still hears about it.
  late.attach(*bs[3]);
  CHECK_FALSE(late.waitFor(2, 1).empty());
}

TEST_CASE("the peer's helper thread answers requests, not the app's", "[bootstrap][liveness]") {
  for (std::string kind : {"tcp", "inproc"}) {
    SECTION(kind) {
      auto bs = kind == "tcp" ? test::makeTcpBootstraps(3) : test::makeInProcessBootstraps(3);
      std::vector<std::shared_ptr<Bootstrap>> views(3);
      for (int r = 0; r < 3; ++r) views[r] = bs[r]->withNamespace("test.requests");
      for (int r = 0; r < 3; ++r) {
        views[r]->serve([r](int peer, const std::vector<char>& request) {
          std::string answer = "rank " + std::to_string(r) + " answers rank " + std::to_string(peer) + ": " +
                               std::string(request.begin(), request.end());
          return std::vector<char>(answer.begin(), answer.end());
        });
      }
      // Nobody calls recv on ranks 1 and 2: their handlers answer anyway.
      std::vector<char> q = {'h', 'i'};
      std::vector<char> a = views[0]->ask(2, q, 5);
      CHECK(std::string(a.begin(), a.end()) == "rank 2 answers rank 0: hi");
      a = views[1]->ask(0, q, 5);
      CHECK(std::string(a.begin(), a.end()) == "rank 0 answers rank 1: hi");
      // Another namespace serves nothing: an empty answer.
      CHECK(bs[0]->withNamespace("test.other")->ask(1, q, 5).empty());
      if (kind == "inproc") {
        bs[2]->abort();
        CHECK_THROWS_WITH(views[0]->ask(2, q, 5), Catch::Contains("rank 2 aborted"));
      }
      for (int r = 0; r < 3; ++r) views[r]->serve(nullptr);
    }
  }
}

// A communicator's listener may hold the communicator while it runs. If
// removing it did not wait, the reporting thread could drop the last
// reference and destroy the communicator, and its bootstrap, on the
// bootstrap's own thread.
TEST_CASE("PeerFailures::remove waits for calls on other threads only", "[bootstrap][liveness]") {
  detail::PeerFailures failures(3);
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> returned{false};
  const uint64_t id = failures.add([&](int, const std::string&, bool) {
    entered.set_value();
    released.wait();
    returned = true;
  });
  std::thread reporter([&] { failures.report(1, "test"); });
  entered.get_future().wait();
  auto removed = std::async(std::launch::async, [&] { failures.remove(id); });
  CHECK(removed.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);  // the call still runs
  release.set_value();
  removed.wait();
  CHECK(returned);
  reporter.join();
  // A removed listener is not called again; one that removes itself from inside its call does not wait for itself.
  bool called = false;
  uint64_t self = 0;
  self = failures.add([&](int rank, const std::string&, bool) {
    if (rank == 2) failures.remove(self);
    called = rank == 2;
  });
  failures.report(2, "test");
  CHECK(called);
  called = false;
  failures.report(0, "test");
  CHECK_FALSE(called);
}
