// The built-in native algorithms against the emulator's reference on the
// CPU backend, every rank a thread. The matrix covers each dimension without
// the full cross product: every datatype x op at one size and world, every
// world of 2 to 16 ranks at a few sizes, counts from 1 to 1M (odd ones
// among them), in and out of place, back-to-back launches of one context.
#include <catch2/catch.hpp>

#include "native_test_util.hpp"

using namespace mscclpp;
using namespace mscclpp::test;

namespace {

const char* const kReducing[] = {"allreduce_packets", "allreduce_read_reduce", "allreduce_nvls", "allreduce_two_level",
                                 "reducescatter_mesh"};
const char* const kMoving[] = {"allgather_mesh", "broadcast_copy", "alltoall_mesh"};

bool fp8(DataType d) { return d == DataType::Float8E4M3 || d == DataType::Float8E5M2; }

}  // namespace

TEST_CASE("every datatype and reduce op, 3 ranks, 37 elements", "[native][dtypes]") {
  for (const char* algorithm : kReducing) {
    for (DataType dtype : everyDataType()) {
      for (ReduceOp op : everyReduceOp()) {
        // fp8 averages leave the reference's exact range (as for plans).
        if (fp8(dtype) && op == ReduceOp::Avg) continue;
        NativeCase c{algorithm, 3, dtype, op, 37};
        if (std::string(algorithm) == "allreduce_two_level") c.hostOf = {0, 1, 2};
        INFO(algorithm);
        REQUIRE(runNative(c) == "");
      }
    }
  }
  for (const char* algorithm : kMoving) {
    for (DataType dtype : {DataType::Int8, DataType::Float16, DataType::Float64}) {
      INFO(algorithm);
      REQUIRE(runNative(NativeCase{algorithm, 3, dtype, ReduceOp::Sum, 37}) == "");
    }
  }
}

TEST_CASE("every world of 2 to 16 ranks", "[native][worlds]") {
  for (int n = 2; n <= 16; ++n) {
    for (const char* algorithm : {"allreduce_packets", "allreduce_read_reduce", "allgather_mesh", "reducescatter_mesh",
                                  "alltoall_mesh", "broadcast_copy", "allreduce_nvls"}) {
      for (uint64_t count : {uint64_t{1}, uint64_t{1001}}) {
        NativeCase c{algorithm, n, DataType::Float32, ReduceOp::Sum, count};
        c.root = n - 1;
        c.iterations = 2;
        INFO(algorithm << " on " << n << " ranks");
        REQUIRE(runNative(c) == "");
      }
    }
  }
}

TEST_CASE("counts from 1 to 1M, odd ones among them", "[native][counts]") {
  for (uint64_t count : {1, 2, 3, 5, 7, 8, 9, 255, 1023, 4097, 65537}) {
    for (const char* algorithm : kReducing) {
      NativeCase c{algorithm, 4, DataType::Float16, ReduceOp::Sum, count};
      if (std::string(algorithm) == "allreduce_two_level") c.hostOf = {0, 0, 1, 1};
      INFO(algorithm << " count " << count);
      REQUIRE(runNative(c) == "");
      c.dtype = DataType::Int8;
      c.op = ReduceOp::Max;
      REQUIRE(runNative(c) == "");
    }
    for (const char* algorithm : kMoving) {
      INFO(algorithm << " count " << count);
      REQUIRE(runNative(NativeCase{algorithm, 4, DataType::Uint8, ReduceOp::Sum, count}) == "");
    }
  }
  // 1M elements: the large path of every algorithm on two ranks.
  for (const char* algorithm : {"allreduce_read_reduce", "allreduce_nvls", "allreduce_two_level", "reducescatter_mesh",
                                "allgather_mesh", "broadcast_copy", "alltoall_mesh"}) {
    NativeCase c{algorithm, 2, DataType::Float32, ReduceOp::Sum, 1 << 20};
    if (std::string(algorithm) == "allreduce_two_level") c.hostOf = {0, 1};
    INFO(algorithm);
    REQUIRE(runNative(c) == "");
  }
}

TEST_CASE("in place and out of place, three launches each", "[native][inplace]") {
  std::vector<const char*> all(std::begin(kReducing), std::end(kReducing));
  all.insert(all.end(), std::begin(kMoving), std::end(kMoving));
  for (const char* algorithm : all) {
    for (bool inPlace : {false, true}) {
      NativeCase c{algorithm, 4, DataType::Float32, ReduceOp::Sum, 1001, inPlace};
      c.iterations = 3;
      c.root = 2;
      if (std::string(algorithm) == "allreduce_two_level") c.hostOf = {0, 0, 1, 1};
      INFO(algorithm << (inPlace ? " in place" : " out of place"));
      REQUIRE(runNative(c) == "");
    }
  }
}

TEST_CASE("broadcast from every root", "[native][roots]") {
  for (int root = 0; root < 5; ++root) {
    NativeCase c{"broadcast_copy", 5, DataType::Int32, ReduceOp::Sum, 333, root % 2 == 0};
    c.root = root;
    INFO("root " << root);
    REQUIRE(runNative(c) == "");
  }
}

TEST_CASE("two levels: hosts of 1, 2 and 3 ranks", "[native][hosts]") {
  const std::vector<std::vector<int32_t>> shapes = {{0, 1, 2}, {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 2, 2}};
  for (const auto& hosts : shapes) {
    for (uint64_t count : {uint64_t{1}, uint64_t{1001}, uint64_t{65536}}) {
      NativeCase c{"allreduce_two_level", static_cast<int>(hosts.size()), DataType::Float32, ReduceOp::Sum, count};
      c.hostOf = hosts;
      c.iterations = 3;
      c.inPlace = count == 1001;
      INFO(hosts.size() << " ranks, count " << count);
      REQUIRE(runNative(c) == "");
    }
  }
}
