// Shared host memory (allocator, names and what removes them, import) and the shared-memory connection.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

#include "../../support/scoped_env.hpp"
#include "../bootstrap/rank_threads.hpp"
#include "core/deadline.hpp"
#include "core/params.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/host_shm/memory.hpp"
#include "transport/registration.hpp"

using namespace mscclpp;
using mscclpp::test::runRanks;

namespace {
bool shmNameExists(const std::string& exported) {
  struct stat st {};
  return ::stat(("/dev/shm" + exported.substr(6)).c_str(), &st) == 0;
}
}  // namespace

TEST_CASE("allocSharedHost gives zeroed, page-aligned, findable memory", "[shm]") {
  std::shared_ptr<uint64_t> p = allocSharedHost<uint64_t>(1000);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(p.get()) % 4096 == 0);
  bool zero = true;
  for (int i = 0; i < 1000; ++i) zero = zero && p.get()[i] == 0;
  CHECK(zero);
  CHECK(isSharedHost(p.get(), 8000));
  CHECK(isSharedHost(p.get() + 500, 8));
  CHECK_FALSE(isSharedHost(p.get(), 8192 + 1));  // past the (page-rounded) end
  transport::host_shm::HostShmRecord e;
  REQUIRE(transport::host_shm::exportRange(p.get() + 10, 80, &e));
  CHECK(e.offset == 80);
  CHECK(e.segmentSize == 8192);
  CHECK(e.segmentName.rfind("memfd:" + std::to_string(getpid()) + ":", 0) == 0);
  void* raw = p.get();
  p.reset();
  CHECK_FALSE(isSharedHost(raw, 8));
  CHECK_THROWS_WITH(allocSharedHost<char>(0), "allocSharedHost: 0 bytes requested");
}

TEST_CASE("imports map the exporter's pages; a gone one fails clearly", "[shm]") {
  auto p = allocSharedHost<int>(1024);
  transport::host_shm::HostShmRecord e;
  REQUIRE(transport::host_shm::exportRange(p.get(), 4096, &e));
  void* data = nullptr;
  auto mapping = transport::host_shm::importRange(e, 4096, &data, "test import");
  REQUIRE(data != nullptr);
  CHECK(data != static_cast<void*>(p.get()));
  static_cast<int*>(data)[3] = 33;  // a second mapping of the same pages
  CHECK(p.get()[3] == 33);
  void* again = nullptr;
  auto mapping2 = transport::host_shm::importRange(e, 4096, &again, "test import");
  CHECK(again == data);  // cached: one mapping per allocation
  p.reset();             // the exporter frees; our mapping keeps the pages
  CHECK(static_cast<int*>(data)[3] == 33);
  mapping.reset();
  mapping2.reset();
  void* late = nullptr;
  CHECK_THROWS_WITH(transport::host_shm::importRange(e, 4096, &late, "late import"),
                    Catch::StartsWith("late import: ") &&
                        (Catch::Contains("cannot open /proc/") || Catch::Contains("is not the exported allocation")));

  transport::host_shm::HostShmRecord bad = e;
  bad.segmentName = "memfd:x:y";
  CHECK_THROWS_WITH(transport::host_shm::importRange(bad, 8, &late, "forged"),
                    "forged: malformed shared memory name 'memfd:x:y'");
  bad.segmentName = "tmpfs:/etc/passwd";
  CHECK_THROWS_WITH(transport::host_shm::importRange(bad, 8, &late, "forged"),
                    "forged: unknown shared memory name 'tmpfs:/etc/passwd'");
  bad = e;
  bad.offset = e.segmentSize;
  CHECK_THROWS_WITH(transport::host_shm::importRange(bad, 8, &late, "forged"),
                    "forged: range [4096, +8) is outside its shared memory segment of 4096 bytes");
}

TEST_CASE("POSIX mode names segments, unlinks on free or request", "[shm]") {
  test::ScopedEnv mode("MSCCLPP_HOST_SHM", "posix");
  auto p = allocSharedHost<char>(100);
  transport::host_shm::HostShmRecord e;
  REQUIRE(transport::host_shm::exportRange(p.get(), 100, &e));
  REQUIRE(e.segmentName.rfind("posix:/mscclpp-shm.", 0) == 0);
  CHECK(sharedHostHasName(p.get()));
  CHECK(shmNameExists(e.segmentName));
  void* data = nullptr;
  auto m = transport::host_shm::importRange(e, 100, &data, "posix import");
  CHECK(unlinkSharedHostName(p.get()));  // every peer mapped it: the name can go
  CHECK_FALSE(shmNameExists(e.segmentName));
  CHECK_FALSE(unlinkSharedHostName(p.get()));
  CHECK_FALSE(sharedHostHasName(p.get()));
  static_cast<char*>(data)[0] = 'x';  // still shared after the unlink
  CHECK(p.get()[0] == 'x');
  auto q = allocSharedHost<char>(100);
  transport::host_shm::HostShmRecord e2;
  REQUIRE(transport::host_shm::exportRange(q.get(), 100, &e2));
  CHECK(shmNameExists(e2.segmentName));
  q.reset();  // freed without an explicit unlink: the name goes too
  CHECK_FALSE(shmNameExists(e2.segmentName));
  void* late = nullptr;
  CHECK_THROWS_WITH(transport::host_shm::importRange(e2, 100, &late, "late"),
                    Catch::StartsWith("late: cannot open POSIX shared memory /mscclpp-shm."));
}

namespace {

// A child process that allocates POSIX shared memory, sends its exported
// record's name down a pipe, then ends as `how` says: "kill" (SIGKILL),
// "exit" (exit(0) with the memory alive) or "wait" (until killed).
struct ShmOwner {
  pid_t pid = -1;
  std::string name;  // "posix:/mscclpp-shm..."

  explicit ShmOwner(const char* how) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::fflush(nullptr);  // the child's exit must not print our buffered output again
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      setenv("MSCCLPP_HOST_SHM", "posix", 1);
      params::resetCache();
      auto p = allocSharedHost<char>(100);
      transport::host_shm::HostShmRecord e;
      transport::host_shm::exportRange(p.get(), 100, &e);
      (void)!write(fds[1], e.segmentName.c_str(), e.segmentName.size() + 1);
      close(fds[1]);
      if (std::strcmp(how, "exit") == 0) std::exit(0);
      if (std::strcmp(how, "kill") == 0) kill(getpid(), SIGKILL);
      pause();
      std::_Exit(0);
    }
    close(fds[1]);
    char c;
    while (read(fds[0], &c, 1) == 1 && c != '\0') name += c;
    close(fds[0]);
  }
  void end() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~ShmOwner() { end(); }
};

transport::host_shm::HostShmRecord recordOf(const std::string& name) {
  transport::host_shm::HostShmRecord e;
  e.segmentName = name;
  e.segmentSize = 4096;
  e.offset = 0;
  return e;
}

}  // namespace

TEST_CASE("a POSIX name goes with the last process that maps it", "[shm]") {
  test::ScopedEnv mode("MSCCLPP_HOST_SHM", "posix");
  SECTION("its maker killed, nobody else mapped it: the next sweep") {
    ShmOwner owner("kill");
    waitpid(owner.pid, nullptr, 0);
    owner.pid = -1;
    REQUIRE(shmNameExists(owner.name));
    CHECK(transport::host_shm::sweepUnusedSegments(200) >= 1);  // its lock may outlive it a moment
    CHECK_FALSE(shmNameExists(owner.name));
  }
  SECTION("its maker exits with it alive") {
    ShmOwner owner("exit");
    waitpid(owner.pid, nullptr, 0);
    owner.pid = -1;
    CHECK_FALSE(shmNameExists(owner.name));
  }
  SECTION("its maker killed while we map it: gone when we unmap") {
    ShmOwner owner("wait");
    void* data = nullptr;
    auto m = transport::host_shm::importRange(recordOf(owner.name), 100, &data, "import");
    owner.end();
    CHECK(transport::host_shm::sweepUnusedSegments() == 0);  // we still map it
    CHECK(shmNameExists(owner.name));
    m.reset();
    CHECK_FALSE(shmNameExists(owner.name));
  }
  SECTION("a sweep never takes a name its maker holds") {
    for (int i = 0; i < 50; ++i) {
      auto p = allocSharedHost<char>(100);
      transport::host_shm::HostShmRecord e;
      REQUIRE(transport::host_shm::exportRange(p.get(), 100, &e));
      transport::host_shm::sweepUnusedSegments();
      REQUIRE(shmNameExists(e.segmentName));
    }
  }
}

TEST_CASE("the SHM connection writes, signals in order, checks bounds", "[shm][connection]") {
  auto bs = test::makeInProcessBootstraps(2);
  std::vector<std::shared_ptr<Communicator>> comms(2);
  runRanks(2, [&](int r) { comms[r] = std::make_shared<Communicator>(bs[r], kHostDevice); });
  std::vector<std::shared_ptr<uint64_t>> bufs = {allocSharedHost<uint64_t>(1024), allocSharedHost<uint64_t>(1024)};
  runRanks(2, [&](int r) {
    Communicator& c = *comms[r];
    int peer = 1 - r;
    auto connF = c.connect(peer, 0, Transport::HostShm);
    RegisteredMemory mine = c.registerMemory(bufs[r].get(), 8192, Transport::HostShm);
    c.sendMemory(mine, peer, 0);
    RegisteredMemory theirs = c.recvMemory(peer, 0).get();
    std::shared_ptr<Connection> conn = connF.get();
    CHECK(conn->transport() == Transport::HostShm);
    CHECK(conn->describe() == "rank " + std::to_string(r) + " -> rank " + std::to_string(peer) + " over SHM");
    CHECK(conn->getTransportName() == "SHM -> SHM");
    // Our data in words 1..500, written to the peer's words 501..1000, then the flag in word 1023.
    for (int i = 1; i <= 500; ++i) bufs[r].get()[i] = 1000000 * (r + 1) + i;
    conn->write(theirs, 501 * 8, mine, 8, 4000);
    uint64_t outbound = 0;
    conn->updateAndSync(theirs, 1023 * 8, &outbound, 1);
    CHECK(outbound == 1);
    conn->flush();
    // Wait for the peer's flag (acquire), then check its data.
    uint64_t* flag = bufs[r].get() + 1023;
    waitUntil([&] { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) == 1; }, Deadline(10), "peer flag");
    for (int i = 1; i <= 500; ++i) REQUIRE(bufs[r].get()[500 + i] == uint64_t(1000000 * (peer + 1) + i));
    CHECK_THROWS_WITH(conn->write(theirs, 8000, mine, 0, 200),
                      "rank " + std::to_string(r) + " -> rank " + std::to_string(peer) +
                          " over SHM: write of 200 bytes at destination offset 8000 overruns rank " +
                          std::to_string(peer) + "'s 8192-byte memory");
    CHECK_THROWS_WITH(conn->updateAndSync(theirs, 12, &outbound, 2), Catch::Contains("needs an aligned 8-byte word"));
    RegisteredMemory tcpOnly = c.registerMemory(bufs[r].get(), 64, Transport::Tcp);
    c.sendMemory(tcpOnly, peer, 1);
    RegisteredMemory peerTcpOnly = c.recvMemory(peer, 1).get();
    CHECK_THROWS_WITH(conn->write(peerTcpOnly, 0, mine, 0, 8), Catch::Contains("is not mapped in this process"));
    c.bootstrap()->barrier();
  });
}
