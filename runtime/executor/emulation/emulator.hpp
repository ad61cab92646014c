// Runs a plan on the CPU backend for every rank, as threads or forked
// processes, for K back-to-back iterations on one context per rank. Inputs
// are random and never zero, outputs poisoned, and every rank's output is
// checked against the collective's reference. A failure reports the first
// error and the wait-for picture of every rank.
// Thread-safety: emulatePlan may run concurrently with itself. Process mode
// forks: call it where no other thread holds a lock the children need.
#ifndef MSCCLPP_EXECUTOR_EMULATION_EMULATOR_HPP_
#define MSCCLPP_EXECUTOR_EMULATION_EMULATOR_HPP_

#include <cstdint>
#include <string>

#include "mscclpp/datatype.hpp"
#include "mscclpp/errors.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

struct EmulationOptions {
  int nRanks = 0;          // must equal the plan's rank count (0: take the plan's)
  uint64_t sizeBytes = 0;  // message size as plans state it: allgather output bytes, else input bytes
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  double scalar = 2.0;  // premulsum's scalar
  int iterations = 1;
  bool processes = false;
  PacketType packet = PacketType::LL16;
  double timeoutSeconds = 0;  // <= 0: MSCCLPP_TIMEOUT_S
  uint64_t seed = 1;
};

struct EmulationResult {
  bool passed = false;   // no error and no mismatch
  bool checked = false;  // the collective has a reference (false for test/custom plans)
  bool failed = false;   // a rank raised an error (timeout, abort, bad plan for these sizes)
  ErrorCode errorCode = ErrorCode::InternalError;
  uint64_t mismatches = 0;
  uint64_t inputBytes = 0;
  uint64_t outputBytes = 0;
  double wallSeconds = 0;    // whole emulation, contexts and checks included
  double launchSeconds = 0;  // the slowest rank's total time inside launches
  std::string report;        // mismatch lines, or the error and the wait-for picture
};

// Throws InvalidArgument or NotSupported before running when the options
// do not fit the plan. Run-time failures are in the result.
EmulationResult emulatePlan(const plan::PlanPtr& plan, const EmulationOptions& options);

// The input and output bytes of a call of `messageBytes` to the plan.
// For test and custom plans the output follows the plan's chunk counts.
void emulationCallBytes(const plan::Plan& plan, uint64_t messageBytes, uint64_t* inputBytes, uint64_t* outputBytes);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_EMULATION_EMULATOR_HPP_
