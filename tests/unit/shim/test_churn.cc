// Communicators made and destroyed in a loop leave threads, file
// descriptors and memory where they started (docs/nccl-shim.md): one-rank
// ones with ncclGetUniqueId + ncclCommInitRank, every other one with a call
// that goes to the real NCCL, and every tenth a two-rank ncclCommInitAll.
// Run once per real NCCL: the test double, the real libnccl (no GPU here:
// its communicator is never completed), and none. MSCCLPP_TEST_CHURN sets
// the number of communicators (default 2000, under a second; 10000: 3 s).
#include <dirent.h>
#include <dlfcn.h>
#include <malloc.h>
#include <nccl.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

int entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (struct dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

long rssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

struct Usage {
  int threads, fds;
  long rss;
};

// The fd count leaves out the listing's own descriptor. Free heap
// goes back to the system first: only memory in use counts.
Usage usage() {
  malloc_trim(0);
  return Usage{entries("/proc/self/task"), entries("/proc/self/fd") - 1, rssKiB()};
}

// Threads and sockets end a moment after destroy: waits until the counts
// are at most `limit`'s and have not moved for 200 ms, bounded.
Usage settledUsage(const Usage* limit) {
  Usage u = usage();
  int still = 0;
  for (int i = 0; i < 500 && still < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const Usage next = usage();
    const bool above = limit && (next.threads > limit->threads || next.fds > limit->fds);
    still = !above && next.threads == u.threads && next.fds == u.fds ? still + 1 : 0;
    u = next;
  }
  return u;
}

// One communicator's life; "" when every call did as expected, else what
// went wrong. No Catch assertion per call: a reporter that keeps every
// assertion would grow with the loop.
std::string oneCommunicator(int i) {
  if (i % 10 == 9) {
    ncclComm_t comms[2] = {nullptr, nullptr};
    if (ncclCommInitAll(comms, 2, nullptr) != ncclSuccess) return "ncclCommInitAll failed";
    for (ncclComm_t c : comms) {
      if (ncclCommDestroy(c) != ncclSuccess) return "ncclCommDestroy failed";
    }
    return "";
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return "ncclGetUniqueId failed";
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess) return "ncclCommInitRank failed";
  if (i % 2 == 1) {
    // No plan serves one rank: the call goes to the real NCCL, or fails without one.
    float x = 1, y = 0;
    const ncclResult_t rc = ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, comm, nullptr);
    if (rc != ncclSuccess && rc != ncclInvalidUsage) return "ncclAllReduce returned " + std::to_string(rc);
  }
  if (ncclCommDestroy(comm) != ncclSuccess) return "ncclCommDestroy failed";
  return "";
}

}  // namespace

TEST_CASE("communicators made and destroyed leave nothing behind", "[churn]") {
  const char* env = std::getenv("MSCCLPP_TEST_CHURN");
  const int n = env ? std::atoi(env) : 2000;
  REQUIRE(n >= 40);
  const int warm = n / 4;
  for (int i = 0; i < warm; ++i) REQUIRE(oneCommunicator(i) == "");  // libraries loaded, caches and arenas warm
  // The test double keeps a record of every call it gets: not ours to count.
  if (void* dbl = dlopen(std::getenv("MSCCLPP_NCCL_LIB_PATH"), RTLD_NOLOAD | RTLD_LAZY)) {
    if (auto setRecording = reinterpret_cast<void (*)(int)>(dlsym(dbl, "ncclDoubleSetRecording"))) setRecording(0);
    dlclose(dbl);
  }
  const Usage start = settledUsage(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  std::string firstError;
  for (int i = warm; i < n && firstError.empty(); ++i) firstError = oneCommunicator(i);
  REQUIRE(firstError == "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Usage end = settledUsage(&start);
  std::printf("churn: %d communicators in %.2f s (%.0f us each): threads %d -> %d, fds %d -> %d, RSS %ld -> %ld KiB\n",
              n - warm, seconds, seconds / (n - warm) * 1e6, start.threads, end.threads, start.fds, end.fds, start.rss,
              end.rss);
  CHECK(end.threads == start.threads);
  CHECK(end.fds == start.fds);
  // A leak of one thread and socket per communicator costs about 20 KiB
  // each; what the allocator keeps is a few hundred KiB whatever n is.
  CHECK(end.rss - start.rss < 2048);
}
