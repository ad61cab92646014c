// Which chunk sizes stand for every message size a plan accepts (docs/plan-verifier.md, "Every
// message size"):
//   * Every reference is [index x chunk, (index + size) x chunk): with no thread-block groups and no
//     pipelines, all byte ranges scale with the chunk, so which ranges overlap, and everything the
//     verifier concludes, is the same at every chunk size: one size stands for all.
//   * Thread-block-group slices cut a reference in units of the buffer alignment, the first
//     (units mod g) slices one unit longer. Their boundaries are linear in u = chunk / alignment plus
//     a term bounded by g and periodic in u with period g; beyond u0 = 2 gmax^3 the linear parts fix
//     every comparison, so the sizes u <= u0 + lcm(g) cover every arrangement of boundaries.
//   * Pipelines run ceil(num_chunks x chunk / unit) iterations of the same body; each iteration's
//     ranges move by one unit. Iteration i interacts with i + 1 through program order and counters,
//     and with farther iterations only where scratch wraps (reuse_resources). Sizes giving 1, 2 and 3
//     iterations (whole and partial last units), and a size where scratch wraps with iterations past
//     the wrap, cover these patterns. Pipelined references of one buffer that overlap at different
//     chunk offsets break this argument: such plans are checked at these sizes but not proven.
#ifndef MSCCLPP_PLAN_VERIFY_SIZE_CASES_HPP_
#define MSCCLPP_PLAN_VERIFY_SIZE_CASES_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace mscclpp::plan::verify {

struct SizeCases {
  std::vector<uint64_t> chunks;  // ascending, each a chunk the plan accepts
  bool standForAll = true;
  std::string note;
};

SizeCases chooseSizes(const Plan& plan, uint64_t reuseScratchBytes);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_SIZE_CASES_HPP_
