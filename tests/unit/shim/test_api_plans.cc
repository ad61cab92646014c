// The plan path through the C ABI with ranks as threads of this process (CPU
// backend; MSCCLPP_PLAN_DIR = the default plans and tests/data/shim/plans): one
// thread driving several ranks in a group, one thread per rank, the two-rank
// exchange plan, forced fallback with a plan available, and the INFO decision
// lines.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shim_test_util.hpp"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // ncclResetDebugInit: deprecated, still ABI

using shimtest::Double;
using shimtest::lastError;
using shimtest::ScopedEnv;

namespace {

const Double& dbl() {
  static Double d(NCCL_DOUBLE_PATH);
  return d;
}

std::vector<ncclComm_t> groupInit(int n) {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  std::vector<ncclComm_t> comms(n, nullptr);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < n; ++r) REQUIRE(ncclCommInitRank(&comms[r], n, id, r) == ncclSuccess);
  ncclResult_t end = ncclGroupEnd();
  INFO(lastError());
  REQUIRE(end == ncclSuccess);
  return comms;
}

void destroyAll(const std::vector<ncclComm_t>& comms) {
  for (ncclComm_t c : comms) CHECK(ncclCommDestroy(c) == ncclSuccess);
}

// Whether the double got any collective since its last reset.
bool ncclGotCollective() {
  for (const char* name : {"ncclAllReduce(", "ncclAllGather(", "ncclReduceScatter(", "ncclBroadcast(", "ncclReduce(",
                           "ncclAlltoAll(", "ncclGather(", "ncclScatter(", "ncclSend(", "ncclRecv("}) {
    if (dbl().find(name) >= 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("one thread, four ranks: a grouped allreduce runs each plan", "[plans]") {
  std::vector<ncclComm_t> comms = groupInit(4);
  const size_t count = 4096;
  std::vector<std::vector<float>> in(4, std::vector<float>(count)), out(4, std::vector<float>(count, -1));
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>(r * 10 + i % 7);
  }
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 4; ++r) {
    REQUIRE(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr) == ncclSuccess);
  }
  ncclResult_t end = ncclGroupEnd();
  INFO(lastError());
  REQUIRE(end == ncclSuccess);
  CHECK_FALSE(ncclGotCollective());
  for (int r = 0; r < 4; ++r) {
    for (size_t i = 0; i < count; ++i) {
      float want = static_cast<float>(60 + 4 * (i % 7));
      if (out[r][i] != want) {
        FAIL_CHECK("rank " << r << " element " << i << " is " << out[r][i] << ", expected " << want);
        break;
      }
    }
  }
  destroyAll(comms);
}

TEST_CASE("one thread per rank: ungrouped collectives on plans", "[plans]") {
  std::vector<ncclComm_t> comms = groupInit(2);
  std::vector<std::vector<int32_t>> bufs(2, std::vector<int32_t>(1024 * 2));
  std::vector<ncclResult_t> results(2, ncclInternalError);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      std::vector<int32_t>& b = bufs[r];
      for (size_t i = 0; i < 1024; ++i) b[r * 1024 + i] = static_cast<int32_t>(r * 100000 + i);
      // In-place allgather: my block already sits at rank * count.
      results[r] = ncclAllGather(b.data() + r * 1024, b.data(), 1024, ncclInt32, comms[r], nullptr);
    });
  }
  for (auto& t : threads) t.join();
  INFO(lastError());
  for (int r = 0; r < 2; ++r) {
    CHECK(results[r] == ncclSuccess);
    for (int src = 0; src < 2; ++src) {
      CHECK(bufs[r][src * 1024 + 5] == src * 100000 + 5);
      CHECK(bufs[r][src * 1024 + 1023] == src * 100000 + 1023);
    }
  }
  destroyAll(comms);
}

TEST_CASE("gather and scatter on plans: every root, in and out of place", "[plans]") {
  for (int n : {2, 4}) {
    std::vector<ncclComm_t> comms = groupInit(n);
    const size_t count = 1000;  // int32 elements per rank (4000 B: a multiple of the plans' 16-byte alignment)
    auto value = [](int rank, size_t i) { return static_cast<int32_t>(rank * 100000 + i); };
    for (int root = 0; root < n; ++root) {
      for (bool inPlace : {false, true}) {
        dbl().reset();
        // Gather: rank r's part lands at root's recv + r * count; the other ranks pass recv = NULL.
        std::vector<std::vector<int32_t>> part(n, std::vector<int32_t>(count));
        std::vector<int32_t> all(count * n, -1);
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < count; ++i) part[r][i] = value(r, i);
        if (inPlace) std::copy(part[root].begin(), part[root].end(), all.begin() + root * count);
        // Results are kept per rank and asserted after the join: Catch2 asserts only on this thread.
        std::vector<ncclResult_t> results(n, ncclInternalError);
        std::vector<std::thread> threads;
        for (int r = 0; r < n; ++r) {
          threads.emplace_back([&, r] {
            const void* send = r == root && inPlace ? all.data() + root * count : part[r].data();
            results[r] = ncclGather(send, r == root ? all.data() : nullptr, count, ncclInt32, root, comms[r], nullptr);
          });
        }
        for (auto& t : threads) t.join();
        INFO("gather, " << n << " ranks, root " << root << (inPlace ? ", in place" : ", out of place") << ": "
                        << lastError());
        CHECK(results == std::vector<ncclResult_t>(n, ncclSuccess));
        std::vector<int32_t> wantAll(count * n);
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < count; ++i) wantAll[r * count + i] = value(r, i);
        CHECK(all == wantAll);

        // Scatter: root's send + r * count lands in rank r's recv; the other ranks pass send = NULL.
        std::vector<int32_t> source(wantAll);
        for (int32_t& v : source) v = -v;
        const std::vector<int32_t> original = source;
        std::vector<std::vector<int32_t>> out(n, std::vector<int32_t>(count, 7));
        std::fill(results.begin(), results.end(), ncclInternalError);
        threads.clear();
        for (int r = 0; r < n; ++r) {
          threads.emplace_back([&, r] {
            int32_t* recv = r == root && inPlace ? source.data() + root * count : out[r].data();
            results[r] =
                ncclScatter(r == root ? source.data() : nullptr, recv, count, ncclInt32, root, comms[r], nullptr);
          });
        }
        for (auto& t : threads) t.join();
        INFO("scatter: " << lastError());
        CHECK(results == std::vector<ncclResult_t>(n, ncclSuccess));
        for (int r = 0; r < n; ++r) {
          const int32_t* got = r == root && inPlace ? source.data() + root * count : out[r].data();
          CHECK(std::vector<int32_t>(got, got + count) ==
                std::vector<int32_t>(original.begin() + r * count, original.begin() + (r + 1) * count));
        }
        CHECK(source == original);  // the root's send buffer is only read
        INFO(dbl().dump());
        CHECK_FALSE(ncclGotCollective());  // the double received neither
      }
    }
    destroyAll(comms);
  }
}

TEST_CASE("forced fallback of gather and scatter skips their plans", "[plans]") {
  std::vector<ncclComm_t> comms;
  {
    ScopedEnv force("MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION", "gather,scatter");
    comms = groupInit(2);
  }
  std::vector<int32_t> a(64, 3), b(128, 0);
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(ncclGather(a.data(), r == 0 ? b.data() : nullptr, 64, ncclInt32, 0, comms[r], nullptr) == ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(dbl().find("ncclGather(") >= 0);
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(ncclScatter(r == 1 ? b.data() : nullptr, a.data(), 64, ncclInt32, 1, comms[r], nullptr) == ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(dbl().find("ncclScatter(") >= 0);
  destroyAll(comms);
}

TEST_CASE("a grouped send and recv on two ranks runs the sendrecv plan", "[plans]") {
  std::vector<ncclComm_t> comms(2, nullptr);
  REQUIRE(ncclCommInitAll(comms.data(), 2, nullptr) == ncclSuccess);
  std::vector<std::vector<double>> send(2, std::vector<double>(512)), recv(2, std::vector<double>(512, -1));
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < 512; ++i) send[r][i] = r + i * 0.5;
  }
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(ncclSend(send[r].data(), 512, ncclFloat64, 1 - r, comms[r], nullptr) == ncclSuccess);
    REQUIRE(ncclRecv(recv[r].data(), 512, ncclFloat64, 1 - r, comms[r], nullptr) == ncclSuccess);
  }
  ncclResult_t end = ncclGroupEnd();
  INFO(lastError() << "\n" << dbl().dump());
  REQUIRE(end == ncclSuccess);
  CHECK_FALSE(ncclGotCollective());
  CHECK(recv[0] == send[1]);
  CHECK(recv[1] == send[0]);
  destroyAll(comms);
}

TEST_CASE("forced fallback sends a collective to NCCL despite its plan", "[plans]") {
  std::vector<ncclComm_t> comms;
  {
    ScopedEnv force("MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION", "AllReduce");  // read when a communicator is made
    comms = groupInit(2);
  }
  std::vector<float> a(256, 1.0f);                                          // only read
  std::vector<std::vector<float>> b(2, std::vector<float>(256 * 2, 0.0f));  // one output per rank
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(ncclAllReduce(a.data(), b[r].data(), 256, ncclFloat32, ncclSum, comms[r], nullptr) == ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK(dbl().find("ncclAllReduce(") >= 0);
  dbl().reset();
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(ncclAllGather(a.data(), b[r].data(), 256, ncclFloat32, comms[r], nullptr) == ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  CHECK_FALSE(ncclGotCollective());  // not forced: its plan ran
  for (int r = 0; r < 2; ++r) {
    CHECK(b[r][0] == 1.0f);
    CHECK(b[r][511] == 1.0f);
  }
  destroyAll(comms);
}

TEST_CASE("NCCL_DEBUG=INFO names the plan that ran", "[plans]") {
  auto runLogged = [](std::initializer_list<std::pair<const char*, const char*>> vars) {
    const std::string path = "/tmp/mscclpp-shim-plans-" + std::to_string(getpid()) + ".log";
    std::remove(path.c_str());
    {
      std::vector<std::unique_ptr<ScopedEnv>> env;
      for (const auto& v : vars) env.push_back(std::make_unique<ScopedEnv>(v.first, v.second));
      env.push_back(std::make_unique<ScopedEnv>("NCCL_DEBUG_FILE", path.c_str()));
      ncclResetDebugInit();
      std::vector<ncclComm_t> comms = groupInit(2);
      std::vector<float> a(64, 2.0f);
      std::vector<std::vector<float>> b(2, std::vector<float>(64));
      REQUIRE(ncclGroupStart() == ncclSuccess);
      for (int r = 0; r < 2; ++r) {
        REQUIRE(ncclAllReduce(a.data(), b[r].data(), 64, ncclFloat32, ncclSum, comms[r], nullptr) == ncclSuccess);
      }
      REQUIRE(ncclGroupEnd() == ncclSuccess);
      destroyAll(comms);
    }
    ncclResetDebugInit();
    return shimtest::takeLog(path);
  };
  std::string log = runLogged({{"NCCL_DEBUG", "INFO"}});
  INFO(log);
  CHECK(log.find("[0] MSCCLPP INFO SHIM plan allreduce_ll_n2_oop ran: allreduce, 2 ranks, 256 B, f32, sum") !=
        std::string::npos);
  CHECK(log.find("[1] MSCCLPP INFO SHIM plan allreduce_ll_n2_oop ran") != std::string::npos);
  CHECK(log.find("allreduce: 1 calls, 256 B, 1 via plans, 0 via NCCL") != std::string::npos);
  CHECK(log.find("MSCCLPP INFO PLAN") != std::string::npos);  // every subsystem unless asked otherwise

  log = runLogged({{"NCCL_DEBUG", "WARN"}, {"MSCCLPP_DEBUG", "INFO"}, {"MSCCLPP_DEBUG_SUBSYS", "SHIM"}});
  INFO(log);
  CHECK(log.find("[0] MSCCLPP INFO SHIM plan allreduce_ll_n2_oop ran") != std::string::npos);
  CHECK(log.find("MSCCLPP INFO PLAN") == std::string::npos);
}

TEST_CASE("revoke stops a plan waiting for a peer that never calls", "[plans]") {
  std::vector<ncclComm_t> comms = groupInit(2);
  const size_t count = 1024;
  std::vector<std::vector<float>> bufs(2, std::vector<float>(count, 1.0f));
  // Both ranks run once: their execution contexts exist, so the next call goes straight to a launch.
  std::vector<ncclResult_t> warm(2, ncclInternalError);  // Catch2 assertions only on this thread
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      warm[r] = ncclAllReduce(bufs[r].data(), bufs[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr);
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(warm == std::vector<ncclResult_t>(2, ncclSuccess));
  REQUIRE(bufs[0][7] == 2.0f);
  // Rank 0 calls again alone: its plan waits for rank 1 (MSCCLPP_TIMEOUT_S is
  // 60 s) until the revoke, whether it comes before the launch (refused at
  // once) or during it (stopped within a backoff).
  ncclResult_t alone = ncclSuccess;
  auto start = std::chrono::steady_clock::now();
  std::thread rank0(
      [&] { alone = ncclAllReduce(bufs[0].data(), bufs[0].data(), count, ncclFloat32, ncclSum, comms[0], nullptr); });
  // Not synchronisation (either order must return promptly): a moment for the
  // call to reach its launch, so the revoke usually meets a plan in flight.
  // test_exec_executor's [abort] case covers that path deterministically.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const ncclResult_t revoked = ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT);
  const std::string revokeError = revoked == ncclSuccess ? std::string() : lastError();
  rank0.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(revokeError);
  CHECK(revoked == ncclSuccess);
  CHECK(alone != ncclSuccess);
  CHECK(seconds < 20);
  destroyAll(comms);
}

TEST_CASE("an aborting peer fails the others with ncclRemoteError", "[plans]") {
  std::string path = "/tmp/mscclpp-shim-failure-" + std::to_string(getpid()) + ".log";
  std::remove(path.c_str());
  std::string log;
  {
    ScopedEnv level("MSCCLPP_DEBUG", "INFO");
    ScopedEnv subsys("MSCCLPP_DEBUG_SUBSYS", "SHIM");
    ScopedEnv file("MSCCLPP_DEBUG_FILE", path.c_str());
    ncclResetDebugInit();
    std::vector<ncclComm_t> comms = groupInit(2);
    const size_t count = 1024;
    std::vector<std::vector<float>> bufs(2, std::vector<float>(count, 1.0f));
    std::vector<ncclResult_t> warm(2, ncclInternalError);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        warm[r] = ncclAllReduce(bufs[r].data(), bufs[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr);
      });
    }
    for (auto& t : threads) t.join();
    REQUIRE(warm == std::vector<ncclResult_t>(2, ncclSuccess));
    // Rank 0 waits in its plan for rank 1 (no deadline by default); rank 1
    // aborts, which for its peers is what a crash looks like (its connections
    // close without a goodbye). Rank 0's call must fail promptly.
    ncclResult_t waiting = ncclSuccess;
    std::string waitingError;
    auto start = std::chrono::steady_clock::now();
    std::thread rank0([&] {
      waiting = ncclAllReduce(bufs[0].data(), bufs[0].data(), count, ncclFloat32, ncclSum, comms[0], nullptr);
      if (waiting != ncclSuccess) waitingError = ncclGetLastError(comms[0]);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(ncclCommAbort(comms[1]) == ncclSuccess);
    rank0.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO(waitingError);
    CHECK(waiting == ncclRemoteError);
    CHECK(waitingError.find("rank 1 (host ") != std::string::npos);
    CHECK(waitingError.find("without leaving") != std::string::npos);
    CHECK(seconds < 5);
    ncclResult_t async = ncclSuccess;
    CHECK(ncclCommGetAsyncError(comms[0], &async) == ncclSuccess);
    CHECK(async == ncclRemoteError);
    // The next call fails at once with the same cause.
    start = std::chrono::steady_clock::now();
    CHECK(ncclAllReduce(bufs[0].data(), bufs[0].data(), count, ncclFloat32, ncclSum, comms[0], nullptr) ==
          ncclRemoteError);
    CHECK(std::string(ncclGetLastError(comms[0])).find("rank 1 (host ") != std::string::npos);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1);
    start = std::chrono::steady_clock::now();
    CHECK(ncclCommAbort(comms[0]) == ncclSuccess);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1);
  }
  ncclResetDebugInit();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  log = text.str();
  std::remove(path.c_str());
  INFO(log);
  // The summary counts the calls that failed.
  CHECK(log.find("[0] MSCCLPP INFO SHIM comm") != std::string::npos);
  CHECK(log.find("allreduce: 1 calls, 4 KiB, 1 via plans, 0 via NCCL, 2 failed") != std::string::npos);
}
