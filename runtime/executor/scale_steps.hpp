// The steps around a plan that make avg and premulsum exact with the plan's native sum (see
// docs/executor.md): premulsum multiplies the input by the call's scalar before the plan runs (in
// place when the call is in place, else into context-owned staging memory), avg divides the
// output by the number of ranks after it (integers: truncating division, like NCCL). Both are
// elementwise passes on the same stream as the plan (host loops on the CPU backend).
#ifndef MSCCLPP_EXECUTOR_SCALE_STEPS_HPP_
#define MSCCLPP_EXECUTOR_SCALE_STEPS_HPP_

#include <cstdint>

#include "executor/refusal.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

// dst[i] = src[i] * scalar for bytes / dtype-size elements (dst may equal src). scalar points to
// one element of dtype (host memory).
void preMultiplyHost(DataType dtype, void* dst, const void* src, uint64_t bytes, const void* scalar);

// data[i] = data[i] / n.
void divideHost(DataType dtype, void* data, uint64_t bytes, uint32_t n);

// The op the plan runs for a call op (avg and premulsum run as sum).
ReduceOp nativeOpOf(ReduceOp op);

// Whether a plan may run a call with reduce op `callOp`. A plan whose reduce ops are all "sum" (the
// DSL default) serves every op: the interpreter substitutes the call's op (avg and premulsum run as
// sum with the steps above). A plan written with one other op (max, say) serves only that op; a
// plan mixing several ops is refused. The refusal names plan and ops; checkPlanServesOp throws it as
// Error(NotSupported).
Refusal planOpRefusal(const plan::PlanHeader& header, ReduceOp callOp);
void checkPlanServesOp(const plan::PlanHeader& header, ReduceOp callOp);

// The output bytes of `rank` that hold a reduction result (avg divides exactly those): allreduce
// and reducescatter: all; reduce: the root's; other collectives: none.
uint64_t reducedOutputBytes(plan::Collective collective, int rank, int root, uint64_t outputBytes);

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_SCALE_STEPS_HPP_
