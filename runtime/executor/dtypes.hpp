// The one datatype x reduce-op table of the executor. Every "for each dtype"
// or "for each op" expands these X-macros, and dispatchDtypeOp() is the one
// runtime-to-template dispatch. Compiled by g++ and by nvcc.
#ifndef MSCCLPP_EXECUTOR_DTYPES_HPP_
#define MSCCLPP_EXECUTOR_DTYPES_HPP_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "mscclpp/datatype.hpp"

// X(Enum, C++ type, short name used by the gpu_types build option)
#define MSCCLPP_FOR_EACH_DTYPE(X)      \
  X(Int8, int8_t, i8)                  \
  X(Uint8, uint8_t, u8)                \
  X(Int32, int32_t, i32)               \
  X(Uint32, uint32_t, u32)             \
  X(Int64, int64_t, i64)               \
  X(Uint64, uint64_t, u64)             \
  X(Float16, __half, f16)              \
  X(Float32, float, f32)               \
  X(Float64, double, f64)              \
  X(BFloat16, __nv_bfloat16, bf16)     \
  X(Float8E4M3, __nv_fp8_e4m3, f8e4m3) \
  X(Float8E5M2, __nv_fp8_e5m2, f8e5m2)

// The reduce ops the interpreter applies natively. Avg and PreMulSum run
// as Sum with a scaling step around the plan (scale_steps.hpp).
#define MSCCLPP_FOR_EACH_NATIVE_REDOP(X) \
  X(Sum)                                 \
  X(Prod)                                \
  X(Max)                                 \
  X(Min)

namespace mscclpp::exec {

template <class T>
struct TypeTag {
  using type = T;
};

struct OpSum {};
struct OpProd {};
struct OpMax {};
struct OpMin {};

template <DataType D>
struct DtypeOf;
#define MSCCLPP_X(E, T, S)      \
  template <>                   \
  struct DtypeOf<DataType::E> { \
    using type = T;             \
  };
MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X

// Index of a native op in tables (Sum 0, Prod 1, Max 2, Min 3 = ReduceOp numbering).
constexpr int kNumNativeOps = 4;
inline bool isNativeOp(ReduceOp op) { return static_cast<int>(op) >= 0 && static_cast<int>(op) < kNumNativeOps; }

// Calls f(TypeTag<T>{}, OpTag{}) for a runtime dtype and native op.
// Returns false, without calling, for values outside the table.
template <class F>
bool dispatchDtypeOp(DataType dtype, ReduceOp op, F&& f) {
  auto withOp = [&](auto typeTag) {
    switch (op) {
      case ReduceOp::Sum:
        f(typeTag, OpSum{});
        return true;
      case ReduceOp::Prod:
        f(typeTag, OpProd{});
        return true;
      case ReduceOp::Max:
        f(typeTag, OpMax{});
        return true;
      case ReduceOp::Min:
        f(typeTag, OpMin{});
        return true;
      default:
        return false;
    }
  };
  switch (dtype) {
#define MSCCLPP_X(E, T, S) \
  case DataType::E:        \
    return withOp(TypeTag<T>{});
    MSCCLPP_FOR_EACH_DTYPE(MSCCLPP_X)
#undef MSCCLPP_X
  }
  return false;
}

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_DTYPES_HPP_
