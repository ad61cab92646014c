// A communicator's life through the C ABI: nonblocking init, groups of inits
// from one thread, ncclCommInitAll, split (colors, keys, NOCOLOR), shrink,
// finalize, revoke, destroy and abort (prompt, peers gone), with the real NCCL
// twin (the test double) carried along. Ranks are threads of this process over
// our TCP bootstrap.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "shim_test_util.hpp"

using shimtest::Double;
using shimtest::lastError;
using shimtest::soloComm;

namespace {

const Double& dbl() {
  static Double d(NCCL_DOUBLE_PATH);
  return d;
}

// n ranks created by this thread inside one group (their rendezvous runs concurrently at the group end).
std::vector<ncclComm_t> groupInit(int n) {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<ncclComm_t> comms(n, nullptr);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; ++r) REQUIRE(ncclCommInitRank(&comms[r], n, id, r) == ncclSuccess);
  // Handles exist before the group end; using them now is NCCL's "not ready" error.
  ncclResult_t async = ncclSuccess;
  CHECK(ncclCommGetAsyncError(comms[0], &async) == ncclSuccess);
  CHECK(async == ncclInProgress);
  ncclResult_t end = ncclGroupEnd();
  INFO(lastError());
  REQUIRE(end == ncclSuccess);
  return comms;
}

void destroyAll(std::vector<ncclComm_t>& comms) {
  for (ncclComm_t c : comms) {
    if (c) CHECK(ncclCommDestroy(c) == ncclSuccess);
  }
}

// Runs f(rank) on n threads and waits for them.
template <class F>
void onThreads(int n, F f) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&f, r] { f(r); });
  for (auto& t : threads) t.join();
}

int realRankOf(void* realComm) {
  // The double answers ncclCommUserRank for its own communicators; ask it directly.
  auto userRank = reinterpret_cast<ncclResult_t (*)(ncclComm_t, int*)>(
      dlsym(dlopen(NCCL_DOUBLE_PATH, RTLD_LAZY | RTLD_NOLOAD), "ncclCommUserRank"));
  int r = -2;
  if (userRank) userRank(reinterpret_cast<ncclComm_t>(realComm), &r);
  return r;
}

}  // namespace

TEST_CASE("one thread, four ranks in a group; calls reach each twin", "[lifecycle]") {
  std::vector<ncclComm_t> comms = groupInit(4);
  for (int r = 0; r < 4; ++r) {
    int rank = -1, count = -1;
    CHECK(ncclCommUserRank(comms[r], &rank) == ncclSuccess);
    CHECK(ncclCommCount(comms[r], &count) == ncclSuccess);
    CHECK(rank == r);
    CHECK(count == 4);
  }
  dbl().reset();
  std::vector<std::vector<float>> bufs(4, std::vector<float>(32, 1.0f));
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 4; ++r) {
    REQUIRE(ncclAllReduce(bufs[r].data(), bufs[r].data(), 32, ncclFloat32, ncclSum, comms[r], nullptr) == ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  INFO(dbl().dump());
  std::vector<int> ranksSeen;
  for (int i = 0; i < dbl().count(); ++i) {
    if (dbl().record(i).rfind("ncclAllReduce(", 0) != 0) continue;
    void* real = dbl().comm(i);
    CHECK(dbl().isComm(real));
    ranksSeen.push_back(realRankOf(real));
    CHECK(dbl().record(i).find("count=32, datatype=7, op=0") != std::string::npos);
  }
  CHECK(ranksSeen == std::vector<int>{0, 1, 2, 3});
  CHECK(dbl().find("ncclGroupStart()") == 0);
  CHECK(dbl().find("ncclGroupEnd()") > 0);
  destroyAll(comms);
}

TEST_CASE("ncclCommInitAll creates a working clique", "[lifecycle]") {
  std::vector<ncclComm_t> comms(3, nullptr);
  ncclResult_t r = ncclCommInitAll(comms.data(), 3, nullptr);
  INFO(lastError());
  REQUIRE(r == ncclSuccess);
  for (int i = 0; i < 3; ++i) {
    int rank = -1;
    REQUIRE(comms[i] != nullptr);
    CHECK(ncclCommUserRank(comms[i], &rank) == ncclSuccess);
    CHECK(rank == i);
  }
  destroyAll(comms);
  std::vector<ncclComm_t> none(1, reinterpret_cast<ncclComm_t>(0x1));
  CHECK(ncclCommInitAll(none.data(), 0, nullptr) == ncclSuccess);
}

TEST_CASE("nonblocking init: a valid handle at once, progress reported", "[lifecycle]") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t c0 = nullptr, c1 = nullptr;
  // One thread, no group: possible only because a nonblocking init does not wait for its peers.
  ncclResult_t r0 = ncclCommInitRankConfig(&c0, 2, id, 0, &cfg);
  CHECK(r0 == ncclInProgress);
  REQUIRE(c0 != nullptr);
  ncclResult_t async = ncclSuccess;
  REQUIRE(ncclCommGetAsyncError(c0, &async) == ncclSuccess);
  CHECK(async == ncclInProgress);  // rank 1 has not even started
  float a = 1, b = 0;
  CHECK(ncclAllReduce(&a, &b, 1, ncclFloat32, ncclSum, c0, nullptr) == ncclInvalidArgument);
  CHECK(lastError().find(
            "AllReduce : Attempt to use communicator before the previous operation returned ncclSuccess") == 0);
  REQUIRE(ncclCommInitRankConfig(&c1, 2, id, 1, &cfg) == ncclInProgress);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ncclResult_t s0 = ncclInProgress, s1 = ncclInProgress;
  while ((s0 == ncclInProgress || s1 == ncclInProgress) && std::chrono::steady_clock::now() < deadline) {
    REQUIRE(ncclCommGetAsyncError(c0, &s0) == ncclSuccess);
    REQUIRE(ncclCommGetAsyncError(c1, &s1) == ncclSuccess);
    std::this_thread::yield();
  }
  INFO(lastError());
  CHECK(s0 == ncclSuccess);
  CHECK(s1 == ncclSuccess);
  int rank = -1;
  CHECK(ncclCommUserRank(c1, &rank) == ncclSuccess);
  CHECK(rank == 1);
  CHECK(ncclCommDestroy(c0) == ncclSuccess);
  CHECK(ncclCommDestroy(c1) == ncclSuccess);
}

TEST_CASE("split: colors, reversed keys, NOCOLOR is NULL, real split", "[lifecycle]") {
  std::vector<ncclComm_t> comms = groupInit(4);
  dbl().reset();
  std::vector<ncclComm_t> children(4, reinterpret_cast<ncclComm_t>(0x1));
  std::vector<ncclResult_t> results(4, ncclInternalError);
  onThreads(4, [&](int r) {
    // Ranks 0..2 in color 7 ordered by descending parent rank; rank 3 takes no part.
    int color = r == 3 ? NCCL_SPLIT_NOCOLOR : 7;
    results[r] = ncclCommSplit(comms[r], color, -r, &children[r], nullptr);
  });
  INFO(lastError());
  for (int r = 0; r < 4; ++r) CHECK(results[r] == ncclSuccess);
  CHECK(children[3] == nullptr);
  for (int r = 0; r < 3; ++r) {
    REQUIRE(children[r] != nullptr);
    int rank = -1, count = -1;
    CHECK(ncclCommUserRank(children[r], &rank) == ncclSuccess);
    CHECK(ncclCommCount(children[r], &count) == ncclSuccess);
    CHECK(rank == 2 - r);
    CHECK(count == 3);
  }
  int splits = 0;
  for (int i = 0; i < dbl().count(); ++i) {
    if (dbl().record(i).rfind("ncclCommSplit(", 0) == 0) ++splits;
  }
  CHECK(splits == 4);  // every parent rank, NOCOLOR included
  CHECK(dbl().find("ncclCommSplit(comm=") >= 0);
  CHECK(dbl().record(dbl().find("ncclCommSplit(")).find("blocking=0") != std::string::npos);
  // The child works: its collectives reach its own real twin.
  dbl().reset();
  float x = 1;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 3; ++r)
    REQUIRE(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, children[r], nullptr) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(dbl().find("ncclAllReduce(") >= 0);
  children.resize(3);
  destroyAll(children);
  // Argument checks.
  ncclComm_t child;
  CHECK(ncclCommSplit(comms[0], -5, 0, &child, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "CommSplit : invalid color -5 (a color is >= 0, or NCCL_SPLIT_NOCOLOR)");
  CHECK(ncclCommSplit(comms[0], 0, 0, nullptr, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "CommSplit : newcomm argument is NULL");
  CHECK(ncclCommSplit(nullptr, 0, 0, &child, nullptr) == ncclInvalidArgument);
  CHECK(lastError() == "CommSplit : comm argument is NULL");
  destroyAll(comms);
}

TEST_CASE("split inside a group, from one thread", "[lifecycle]") {
  std::vector<ncclComm_t> comms = groupInit(2);
  std::vector<ncclComm_t> children(2, nullptr);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) REQUIRE(ncclCommSplit(comms[r], 0, r, &children[r], nullptr) == ncclSuccess);
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    int rank = -1;
    REQUIRE(children[r] != nullptr);
    CHECK(ncclCommUserRank(children[r], &rank) == ncclSuccess);
    CHECK(rank == r);
  }
  destroyAll(children);
  destroyAll(comms);
}

TEST_CASE("shrink: survivors form a communicator without the excluded", "[lifecycle]") {
  std::vector<ncclComm_t> comms = groupInit(4);
  dbl().reset();
  std::vector<ncclComm_t> children(3, nullptr);
  std::vector<ncclResult_t> results(3, ncclInternalError);
  int exclude[1] = {1};
  onThreads(3, [&](int i) {
    int parent = i == 0 ? 0 : i + 1;  // ranks 0, 2, 3 stay; rank 1 never calls
    int list[1] = {exclude[0]};
    results[i] = ncclCommShrink(comms[parent], list, 1, &children[i], nullptr, NCCL_SHRINK_DEFAULT);
  });
  INFO(lastError());
  for (int i = 0; i < 3; ++i) {
    CHECK(results[i] == ncclSuccess);
    REQUIRE(children[i] != nullptr);
    int rank = -1, count = -1;
    CHECK(ncclCommUserRank(children[i], &rank) == ncclSuccess);
    CHECK(ncclCommCount(children[i], &count) == ncclSuccess);
    CHECK(rank == i);
    CHECK(count == 3);
  }
  CHECK(dbl().find("ncclCommShrink(comm=") >= 0);
  destroyAll(children);
  ncclComm_t child;
  int self[1] = {0};
  CHECK(ncclCommShrink(comms[0], self, 1, &child, nullptr, 0) == ncclInvalidArgument);
  CHECK(lastError() == "CommShrink : rank 0 is in excludeRanksList; excluded ranks must not call ncclCommShrink");
  int far[1] = {9};
  CHECK(ncclCommShrink(comms[0], far, 1, &child, nullptr, 0) == ncclInvalidArgument);
  CHECK(lastError() == "CommShrink : excludeRanksList[0] = 9 is not a rank of the communicator (0..3)");
  CHECK(ncclCommShrink(comms[0], exclude, 0, &child, nullptr, 0) == ncclInvalidArgument);
  CHECK(ncclCommShrink(comms[0], exclude, 1, &child, nullptr, 5) == ncclInvalidArgument);
  CHECK(lastError() == "CommShrink : invalid shrinkFlags 5 (NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT)");
  destroyAll(comms);
}

TEST_CASE("finalize flushes, then only destroy is allowed", "[lifecycle]") {
  ncclComm_t comm = soloComm();
  dbl().reset();
  REQUIRE(ncclCommFinalize(comm) == ncclSuccess);
  CHECK(dbl().find("ncclCommFinalize(comm=") >= 0);
  float a = 0;
  CHECK(ncclAllReduce(&a, &a, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidUsage);
  CHECK(lastError() == "AllReduce : communicator (rank 0 of 1) was finalized; only ncclCommDestroy may use it now");
  CHECK(ncclCommFinalize(comm) == ncclInvalidArgument);
  CHECK(lastError() == "CommFinalize : communicator rank 0 of 1 was already finalized");
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
  CHECK(dbl().find("ncclCommDestroy(comm=") >= 0);
}

TEST_CASE("revoke stops the communicator; destroy and split still work", "[lifecycle]") {
  ncclComm_t comm = soloComm();
  dbl().reset();
  CHECK(ncclCommRevoke(comm, 3) == ncclInvalidArgument);
  CHECK(lastError() == "CommRevoke : revokeFlags 3 must be NCCL_REVOKE_DEFAULT (0)");
  REQUIRE(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) == ncclSuccess);
  CHECK(dbl().find("ncclCommRevoke(comm=") >= 0);
  float a = 0;
  CHECK(ncclAllReduce(&a, &a, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidUsage);
  CHECK(lastError().find("AllReduce : communicator (rank 0 of 1) was revoked") == 0);
  CHECK(ncclCommRevoke(comm, 0) == ncclInvalidArgument);
  ncclComm_t child = nullptr;
  REQUIRE(ncclCommSplit(comm, 0, 0, &child, nullptr) == ncclSuccess);
  REQUIRE(child != nullptr);
  CHECK(ncclAllReduce(&a, &a, 1, ncclFloat32, ncclSum, child, nullptr) == ncclSuccess);
  CHECK(ncclCommDestroy(child) == ncclSuccess);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("abort returns promptly when a peer is gone", "[lifecycle]") {
  std::vector<ncclComm_t> comms = groupInit(2);
  // Rank 1 disappears (aborted: its sockets close), then rank 0 aborts.
  REQUIRE(ncclCommAbort(comms[1]) == ncclSuccess);
  auto start = std::chrono::steady_clock::now();
  REQUIRE(ncclCommAbort(comms[0]) == ncclSuccess);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 5.0);
}

TEST_CASE("abort in a nonblocking init missing a peer returns promptly", "[lifecycle]") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = nullptr;
  REQUIRE(ncclCommInitRankConfig(&comm, 2, id, 0, &cfg) == ncclInProgress);  // rank 1 never comes
  ncclResult_t async = ncclSuccess;
  REQUIRE(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
  CHECK(async == ncclInProgress);
  auto start = std::chrono::steady_clock::now();
  REQUIRE(ncclCommAbort(comm) == ncclSuccess);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 5.0);  // far below the 60 s deadline the rendezvous would otherwise wait
}

TEST_CASE("a watchdog polls ncclCommGetAsyncError during collectives", "[lifecycle][concurrency]") {
  std::vector<ncclComm_t> comms = groupInit(2);
  std::atomic<bool> stop{false};
  std::atomic<long> polls{0};
  std::atomic<int> bad{0};
  std::thread watchdog([&] {
    while (!stop.load()) {
      for (ncclComm_t c : comms) {
        ncclResult_t async = ncclInternalError;
        if (ncclCommGetAsyncError(c, &async) != ncclSuccess || async != ncclSuccess) bad.fetch_add(1);
        polls.fetch_add(1);
      }
    }
  });
  std::vector<std::vector<float>> bufs(comms.size(), std::vector<float>(256, 1.0f));  // one per rank
  for (int i = 0; i < 200; ++i) {
    REQUIRE(ncclGroupStart() == ncclSuccess);
    for (size_t r = 0; r < comms.size(); ++r) {
      REQUIRE(ncclAllReduce(bufs[r].data(), bufs[r].data(), 256, ncclFloat32, ncclSum, comms[r], nullptr) ==
              ncclSuccess);
    }
    REQUIRE(ncclGroupEnd() == ncclSuccess);
  }
  // Keep going until the watchdog has polled a few times (it runs concurrently; bounded by a deadline).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (polls.load() < 10 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  stop = true;
  watchdog.join();
  CHECK(polls.load() >= 10);
  CHECK(bad.load() == 0);
  destroyAll(comms);
}

TEST_CASE("ncclCommInitRankScalable creates ranks from one id", "[lifecycle]") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<ncclComm_t> comms(2, nullptr);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) REQUIRE(ncclCommInitRankScalable(&comms[r], 2, r, 1, &id, &cfg) == ncclSuccess);
  ncclResult_t end = ncclGroupEnd();
  INFO(lastError());
  REQUIRE(end == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    int rank = -1;
    CHECK(ncclCommUserRank(comms[r], &rank) == ncclSuccess);
    CHECK(rank == r);
  }
  destroyAll(comms);
}

TEST_CASE("a grouped init whose rendezvous fails fails the group end", "[lifecycle]") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  // Rank 1 of 2 never comes: with a short deadline the group end fails (and names the problem) instead of hanging.
  shimtest::ScopedEnv timeout("MSCCLPP_TIMEOUT_S", "2");
  ncclComm_t comm = nullptr;
  REQUIRE(ncclGroupStart() == ncclSuccess);
  REQUIRE(ncclCommInitRank(&comm, 2, id, 0) == ncclSuccess);
  auto start = std::chrono::steady_clock::now();
  ncclResult_t end = ncclGroupEnd();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(end == ncclRemoteError);
  CHECK(seconds < 30.0);
  INFO(lastError());
  CHECK_FALSE(lastError().empty());
  ncclResult_t async = ncclSuccess;
  REQUIRE(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
  CHECK(async == ncclRemoteError);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
