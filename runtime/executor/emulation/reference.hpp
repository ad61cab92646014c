// Inputs and the reference result of each standard collective, for the
// emulator and the tests. Inputs are random, never zero, and chosen so that
// reductions are exact in every float type: multiples of 0.5 up to 2 for sums
// and min/max, +-1 and +-2 for products, +-1 for fp8. The result does not
// depend on the reduction order, so a mismatch is a real error.
#ifndef MSCCLPP_EXECUTOR_EMULATION_REFERENCE_HPP_
#define MSCCLPP_EXECUTOR_EMULATION_REFERENCE_HPP_

#include <cstdint>
#include <string>

#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// Deterministic in (seed, rank, index).
void fillInput(DataType dtype, ReduceOp op, uint64_t seed, int rank, void* dst, uint64_t bytes);

// One element of dtype holding `value` (for the premulsum scalar).
void encodeScalar(DataType dtype, double value, void* out);

struct CheckRequest {
  plan::Collective collective = plan::Collective::AllReduce;
  int root = 0;
  int nRanks = 1;
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  const void* scalar = nullptr;         // premulsum: one element of dtype
  const char* const* inputs = nullptr;  // pristine inputs of every rank
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  int maxLines = 8;  // mismatch lines kept
  // The reduction of every rank's whole input, required for allreduce,
  // reducescatter and reduce.
  const char* reduced = nullptr;
  // Variable-size collectives: the call's count matrix (n x n, row = sender).
  // Output bytes past the rank's last segment must keep kPoisonByte.
  const uint64_t* counts = nullptr;
};

// A count matrix for a variable-size collective, deterministic in (seed,
// call): uneven, with zeros, empty rows and segments of maxCount elements,
// shaped by the collective's rule (plan/variable_sizes.hpp).
void randomCounts(plan::Collective collective, int nRanks, uint64_t maxCount, uint64_t seed, uint64_t call,
                  uint64_t* counts);

// Folds every rank's input in rank order with the request's op into out.
// premulsum scales each input; avg divides the result.
void computeReduction(const CheckRequest& req, char* out);

struct CheckResult {
  bool checked = false;  // false: the collective has no reference (test, custom)
  uint64_t mismatches = 0;
  std::string text;  // "rank 3 offset 4096 (element 1024): expected 3.5, actual 1.25" lines
};

// Checks `output` of `rank` against the reference computed from every rank's input.
CheckResult checkOutput(const CheckRequest& req, int rank, const char* output);

// The poison written into outputs before a run (so unwritten bytes are caught).
constexpr unsigned char kPoisonByte = 0xA5;

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EMULATION_REFERENCE_HPP_
