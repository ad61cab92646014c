// Helpers of the native algorithm tests: one call of a native algorithm on
// every rank of a world of threads (the emulator's shared-memory wiring,
// the executor's CPU backend), checked against the emulator's reference.
#ifndef MSCCLPP_TESTS_UNIT_ALGORITHM_NATIVE_TEST_UTIL_HPP_
#define MSCCLPP_TESTS_UNIT_ALGORITHM_NATIVE_TEST_UTIL_HPP_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mscclpp/datatype.hpp"

namespace mscclpp::test {

struct NativeCase {
  std::string algorithm;
  int nRanks = 2;
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  uint64_t count = 1;  // NCCL's count: per rank for allgather and reducescatter, per peer for alltoall
  bool inPlace = false;
  int root = 0;
  int iterations = 1;           // launches of the same context, each checked
  std::vector<int32_t> hostOf;  // per rank: its host; empty: one host
};

// "" when every rank's output matched the reference in every iteration,
// else the first failure, naming the case.
std::string runNative(const NativeCase& c);

// Every datatype, and the reduce ops the shim accepts (PreMulSum as user op).
const std::vector<DataType>& everyDataType();
const std::vector<ReduceOp>& everyReduceOp();

// Runs body(rank) on n threads; the first error ("" when none).
std::string onRanks(int n, const std::function<void(int)>& body);

}  // namespace mscclpp::test

#endif  // MSCCLPP_TESTS_UNIT_ALGORITHM_NATIVE_TEST_UTIL_HPP_
