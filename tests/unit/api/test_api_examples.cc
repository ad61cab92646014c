// The examples (examples/*.hpp) with ranks as threads on the CPU backend.
// Each rank's data is checked against values computed here, not by the examples.
#include <catch2/catch.hpp>

#include "../bootstrap/rank_threads.hpp"
#include "alltoall.hpp"
#include "overlap.hpp"
#include "packets.hpp"
#include "put_signal_wait.hpp"

using namespace mscclpp;
using namespace mscclpp::examples;

namespace {

Options cpuOptions(int nRanks, const std::string& transport = "auto", int iterations = 3) {
  Options o;
  o.nRanks = nRanks;
  o.device = "cpu";
  o.transport = transport;
  o.iterations = iterations;
  return o;
}

}  // namespace

TEST_CASE("example put_signal_wait: rank 1 reads every byte put", "[api][examples]") {
  auto results = runRanksAsThreads<PutSignalWaitResult>(cpuOptions(2, "auto", 4), runPutSignalWait);
  REQUIRE(results.size() == 2);
  CHECK(results[0].mismatch == "");
  CHECK(results[1].mismatch == "");
  CHECK(results[0].seen.empty());
  REQUIRE(results[1].seen.size() == 4 * 1024);
  for (int it = 0; it < 4; ++it) {
    for (int i = 0; i < 1024; ++i) REQUIRE(results[1].seen[it * 1024 + i] == uint8_t((i * 7 + it * 13 + 1) & 0xff));
  }
  CHECK(results[0].summary == "put 1024 bytes and signalled rank 1, 4 times over SHM on the CPU backend");
  CHECK(results[1].summary == "waited, then read 1024 correct bytes from rank 0, 4 times over SHM on the CPU backend");
}

TEST_CASE("example put_signal_wait needs exactly two ranks", "[api][examples]") {
  CHECK_THROWS_WITH(runRanksAsThreads<PutSignalWaitResult>(cpuOptions(3), runPutSignalWait),
                    "put_signal_wait runs on exactly 2 ranks (got 3)");
}

TEST_CASE("example packets: LL16 and LL8 deliver every word", "[api][examples]") {
  SECTION("LL16") {
    auto results = runRanksAsThreads<PacketsResult>(cpuOptions(2, "auto", 5), runPackets<LL16Packet>);
    CHECK(results[1].mismatch == "");
    REQUIRE(results[1].received.size() == 5 * 256);
    for (uint32_t it = 0; it < 5; ++it) {
      for (uint32_t i = 0; i < 256; ++i) REQUIRE(results[1].received[it * 256 + i] == 0x5a000000u + it * 0x10000u + i);
    }
    CHECK(results[0].summary == "put 1024 bytes as 2048 bytes of LL16 packets, flags 1..5");
    CHECK(results[1].summary == "got 1024 correct bytes from LL16 packets, flags 1..5");
  }
  SECTION("LL8") {
    auto results = runRanksAsThreads<PacketsResult>(cpuOptions(2, "auto", 2), runPackets<LL8Packet>);
    CHECK(results[1].mismatch == "");
    REQUIRE(results[1].received.size() == 2 * 256);
    CHECK(results[1].received[256 + 255] == 0x5a000000u + 0x10000u + 255u);
    CHECK(results[0].summary == "put 1024 bytes as 2048 bytes of LL8 packets, flags 1..2");
  }
}

TEST_CASE("example overlap: the put and the product are exact", "[api][examples]") {
  std::string transport = GENERATE(std::string("shm"), std::string("tcp"));
  INFO(transport);
  auto results = runRanksAsThreads<OverlapResult>(cpuOptions(2, transport), runOverlap);
  const uint32_t n = 48;
  for (int r = 0; r < 2; ++r) {
    CHECK(results[r].mismatch == "");
    REQUIRE(results[r].received.size() == 256);
    for (uint32_t i = 0; i < 256; ++i) REQUIRE(results[r].received[i] == uint32_t(1 - r) * 0x01000000u + 0xc0000u + i);
    REQUIRE(results[r].product.size() == n * n);
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t j = 0; j < n; ++j) {
        uint32_t sum = 0;
        for (uint32_t k = 0; k < n; ++k) sum += ((i + 2 * k) % 17) * ((3 * k + j + uint32_t(r)) % 13);
        REQUIRE(results[r].product[i * n + j] == sum);
      }
    }
  }
  std::string name = transport == "shm" ? "SHM" : "TCP";
  CHECK(results[0].summary == "putWithSignal of 1024 bytes over " + name +
                                  " overlapped with a 48x48 matrix product; both correct (2 triggers handled by the "
                                  "proxy)");
}

TEST_CASE("example alltoall: each rank gets every peer's chunk", "[api][examples]") {
  int nRanks = GENERATE(2, 3, 4);
  std::string transport = GENERATE(std::string("shm"), std::string("tcp"));
  INFO(nRanks << " ranks over " << transport);
  auto results = runRanksAsThreads<AlltoallResult>(cpuOptions(nRanks, transport), runAlltoall);
  const int elements = 1024;
  for (int r = 0; r < nRanks; ++r) {
    CHECK(results[r].mismatch == "");
    REQUIRE(results[r].received.size() == size_t(nRanks * elements));
    for (int from = 0; from < nRanks; ++from) {
      for (int i = 0; i < elements; ++i) {
        REQUIRE(results[r].received[from * elements + i] == from * 0x1000000 + r * 0x10000 + i);
      }
    }
    CHECK(results[r].summary == "all-to-all of 1024 ints per rank pair among " + std::to_string(nRanks) + " ranks (" +
                                    std::to_string(nRanks - 1) + " blocks, DeviceSyncer) correct");
  }
}

TEST_CASE("example alltoall refuses a single rank", "[api][examples]") {
  CHECK_THROWS_WITH(runRanksAsThreads<AlltoallResult>(cpuOptions(1), runAlltoall),
                    "alltoall (localAlltoall) needs at least 2 ranks, all on one node (got 1 ranks, 1 on this node)");
}
