// Which chunk sizes stand for every message size a plan accepts.
// Without thread-block groups or pipelines, one size stands for all:
// every byte range scales with the chunk.
// Groups and pipelines need a few more sizes; why those suffice is in
// docs/plan-verifier.md, "Every message size".
#ifndef MSCCLPP_PLAN_VERIFY_SIZE_CASES_HPP_
#define MSCCLPP_PLAN_VERIFY_SIZE_CASES_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::plan::verify {

struct SizeCases {
  std::vector<uint64_t> chunks;  // ascending; the plan accepts each
  bool standForAll = true;
  std::string note;
};

SizeCases chooseSizes(const Plan& plan, uint64_t reuseScratchBytes);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_SIZE_CASES_HPP_
