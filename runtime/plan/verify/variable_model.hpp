// Variable-size plans, proven for every binding of their counts
// (docs/plan-verifier.md, "Variable sizes"). Each segment is one unit of the
// model: with every count nonzero, segments of one buffer are disjoint and
// in peer order, so two references overlap exactly when they name the same
// segment or slot, whatever the counts. The model plan replaces every
// segment by its unit and is verified as the fixed-size collective; zero
// counts only remove accesses. Lengths are symbols: an op must move equal
// lengths for every binding, which lengthFindings checks.
#ifndef MSCCLPP_PLAN_VERIFY_VARIABLE_MODEL_HPP_
#define MSCCLPP_PLAN_VERIFY_VARIABLE_MODEL_HPP_

#include <vector>

#include "plan/plan.hpp"
#include "plan/verify/verify.hpp"

namespace mscclpp::plan::verify {

// The fixed-size plan whose chunks are the variable plan's segments and slots.
Plan unitModel(const Plan& plan);

// One finding per op whose references' lengths differ for some binding,
// with a binding that shows it.
std::vector<Finding> lengthFindings(const Plan& plan);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_VARIABLE_MODEL_HPP_
