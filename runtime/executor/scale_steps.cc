#include "executor/scale_steps.hpp"

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "executor/reduce_ops.hpp"

namespace mscclpp::exec {

void preMultiplyHost(DataType dtype, void* dst, const void* src, uint64_t bytes, const void* scalar) {
  MSCCLPP_ENFORCE(scalar != nullptr, ErrorCode::InvalidArgument, "premulsum needs a scalar (got a null pointer)");
  bool ok = dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto typeTag, auto) {
    using T = typename decltype(typeTag)::type;
    preMultiplyElements<T>(static_cast<T*>(dst), static_cast<const T*>(src), bytes / sizeof(T),
                           *static_cast<const T*>(scalar), 0, 1);
  });
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "premulsum: unknown datatype %d", static_cast<int>(dtype));
}

void divideHost(DataType dtype, void* data, uint64_t bytes, uint32_t n) {
  bool ok = dispatchDtypeOp(dtype, ReduceOp::Sum, [&](auto typeTag, auto) {
    using T = typename decltype(typeTag)::type;
    divideElements<T>(static_cast<T*>(data), bytes / sizeof(T), n, 0, 1);
  });
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "avg: unknown datatype %d", static_cast<int>(dtype));
}

ReduceOp nativeOpOf(ReduceOp op) { return (op == ReduceOp::Avg || op == ReduceOp::PreMulSum) ? ReduceOp::Sum : op; }

Refusal planOpRefusal(const plan::PlanHeader& header, ReduceOp callOp) {
  const uint32_t sumBit = 1u << static_cast<unsigned>(plan::PlanReduceOp::Sum);
  const uint32_t ops = header.reduceOps & ~(1u << static_cast<unsigned>(plan::PlanReduceOp::None));
  if ((ops & ~sumBit) == 0) return std::nullopt;
  if (__builtin_popcount(ops) != 1) {
    return strFormat("plan %s mixes several reduce ops (mask 0x%x); it cannot serve a %s call", header.name.c_str(),
                     ops, reduceOpName(callOp));
  }
  const plan::PlanReduceOp planOp = static_cast<plan::PlanReduceOp>(__builtin_ctz(ops));
  ReduceOp served = ReduceOp::Sum;
  const char* name = "sum";
  switch (planOp) {
    case plan::PlanReduceOp::Prod:
      served = ReduceOp::Prod, name = "prod";
      break;
    case plan::PlanReduceOp::Min:
      served = ReduceOp::Min, name = "min";
      break;
    case plan::PlanReduceOp::Max:
      served = ReduceOp::Max, name = "max";
      break;
    default:
      break;
  }
  if (callOp == served) return std::nullopt;
  return strFormat("plan %s reduces with %s; the call asks for %s", header.name.c_str(), name, reduceOpName(callOp));
}

void checkPlanServesOp(const plan::PlanHeader& header, ReduceOp callOp) {
  if (Refusal r = planOpRefusal(header, callOp)) throw Error(ErrorCode::NotSupported, *r);
}

uint64_t reducedOutputBytes(plan::Collective collective, int rank, int root, uint64_t outputBytes) {
  switch (collective) {
    case plan::Collective::AllReduce:
    case plan::Collective::ReduceScatter:
    case plan::Collective::ReduceScatterV:
      return outputBytes;
    case plan::Collective::Reduce:
      return rank == root ? outputBytes : 0;
    default:
      return 0;
  }
}

}  // namespace mscclpp::exec
