// The steps that make avg and premulsum exact with the plan's native sum:
// premulsum scales the input before the plan runs, avg divides the output by
// the number of ranks after it (docs/executor.md, "Datatypes and reduce ops").
// Both are elementwise passes on the plan's stream, host loops on the CPU.
#ifndef MSCCLPP_EXECUTOR_SCALE_STEPS_HPP_
#define MSCCLPP_EXECUTOR_SCALE_STEPS_HPP_

#include <cstdint>

#include "executor/refusal.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// dst[i] = src[i] * scalar over `bytes`; dst may equal src. scalar points
// to one host element of dtype.
void preMultiplyHost(DataType dtype, void* dst, const void* src, uint64_t bytes, const void* scalar);

// data[i] = data[i] / n.
void divideHost(DataType dtype, void* data, uint64_t bytes, uint32_t n);

// The op the plan runs for a call op (avg and premulsum run as sum).
ReduceOp nativeOpOf(ReduceOp op);

// Whether a plan may run a call with reduce op `callOp`. A plan of sums
// serves every op: the interpreter substitutes the call's op. A plan with
// one other op serves only that op; one mixing ops is refused. The refusal
// names plan and ops; checkPlanServesOp throws it as Error(NotSupported).
Refusal planOpRefusal(const plan::PlanHeader& header, ReduceOp callOp);
void checkPlanServesOp(const plan::PlanHeader& header, ReduceOp callOp);

// The output bytes of `rank` holding a reduction, which avg divides:
// all for allreduce and reducescatter, the root's for reduce, else none.
uint64_t reducedOutputBytes(plan::Collective collective, int rank, int root, uint64_t outputBytes);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_SCALE_STEPS_HPP_
