// Elementwise reduce functors for every datatype and native op, and the avg
// and premulsum scaling steps. The CPU backend, the GPU kernel and the
// emulator's reference all use these exact functions. Integers wrap, as in
// NCCL; fp16, bf16 and fp8 compute in float and round back after each step.
#ifndef MSCCLPP_EXECUTOR_REDUCE_OPS_HPP_
#define MSCCLPP_EXECUTOR_REDUCE_OPS_HPP_

#include <cstdint>
#include <type_traits>

#include "dtypes.hpp"
#include "mscclpp/device.hpp"

namespace mscclpp::exec {

// How a type is computed: Compute is the arithmetic type, toCompute/fromCompute convert.
template <class T, class Enable = void>
struct Arith {
  using Compute = T;
  MSCCLPP_HOST_DEVICE_INLINE static Compute toCompute(T v) { return v; }
  MSCCLPP_HOST_DEVICE_INLINE static T fromCompute(Compute v) { return v; }
};

template <>
struct Arith<__half> {
  using Compute = float;
  MSCCLPP_HOST_DEVICE_INLINE static float toCompute(__half v) { return __half2float(v); }
  MSCCLPP_HOST_DEVICE_INLINE static __half fromCompute(float v) { return __float2half_rn(v); }
};
template <>
struct Arith<__nv_bfloat16> {
  using Compute = float;
  MSCCLPP_HOST_DEVICE_INLINE static float toCompute(__nv_bfloat16 v) { return __bfloat162float(v); }
  MSCCLPP_HOST_DEVICE_INLINE static __nv_bfloat16 fromCompute(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Arith<__nv_fp8_e4m3> {
  using Compute = float;
  MSCCLPP_HOST_DEVICE_INLINE static float toCompute(__nv_fp8_e4m3 v) { return static_cast<float>(v); }
  MSCCLPP_HOST_DEVICE_INLINE static __nv_fp8_e4m3 fromCompute(float v) { return __nv_fp8_e4m3(v); }
};
template <>
struct Arith<__nv_fp8_e5m2> {
  using Compute = float;
  MSCCLPP_HOST_DEVICE_INLINE static float toCompute(__nv_fp8_e5m2 v) { return static_cast<float>(v); }
  MSCCLPP_HOST_DEVICE_INLINE static __nv_fp8_e5m2 fromCompute(float v) { return __nv_fp8_e5m2(v); }
};

template <class T, class Op>
struct Reducer;

template <class T>
struct Reducer<T, OpSum> {
  MSCCLPP_HOST_DEVICE_INLINE static T apply(T a, T b) {
    if constexpr (std::is_integral<T>::value) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      using A = Arith<T>;
      return A::fromCompute(A::toCompute(a) + A::toCompute(b));
    }
  }
};

template <class T>
struct Reducer<T, OpProd> {
  MSCCLPP_HOST_DEVICE_INLINE static T apply(T a, T b) {
    if constexpr (std::is_integral<T>::value) {
      // uint32_t keeps 8-bit products out of int promotion; wider types multiply in their own width.
      using U = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      using A = Arith<T>;
      return A::fromCompute(A::toCompute(a) * A::toCompute(b));
    }
  }
};

template <class T>
struct Reducer<T, OpMax> {
  MSCCLPP_HOST_DEVICE_INLINE static T apply(T a, T b) {
    using A = Arith<T>;
    return A::toCompute(a) < A::toCompute(b) ? b : a;
  }
};

template <class T>
struct Reducer<T, OpMin> {
  MSCCLPP_HOST_DEVICE_INLINE static T apply(T a, T b) {
    using A = Arith<T>;
    return A::toCompute(b) < A::toCompute(a) ? b : a;
  }
};

// ---- avg / premulsum -------------------------------------------------------------------------
// premulsum: x * scalar, one element of the call's dtype as
// ncclRedOpCreatePreMulSum takes it. Integers wrap like Prod.
template <class T>
MSCCLPP_HOST_DEVICE_INLINE T preMultiply(T x, T scalar) {
  return Reducer<T, OpProd>::apply(x, scalar);
}

// avg's post-step: x / n. Floats multiply by 1/n in the compute type;
// integers use truncating division like NCCL.
template <class T>
MSCCLPP_HOST_DEVICE_INLINE T divideBy(T x, uint32_t n) {
  if constexpr (std::is_integral<T>::value) {
    if constexpr (std::is_signed<T>::value)
      return static_cast<T>(static_cast<int64_t>(x) / static_cast<int64_t>(n));
    else
      return static_cast<T>(static_cast<uint64_t>(x) / n);
  } else {
    using A = Arith<T>;
    using C = typename A::Compute;
    return A::fromCompute(A::toCompute(x) * (static_cast<C>(1) / static_cast<C>(n)));
  }
}

// Cooperative scaling passes over count elements (in place allowed: dst == src).
template <class T>
MSCCLPP_HOST_DEVICE_INLINE void preMultiplyElements(T* dst, const T* src, uint64_t count, T scalar, uint32_t threadId,
                                                    uint32_t numThreads) {
  for (uint64_t i = threadId; i < count; i += numThreads) dst[i] = preMultiply(src[i], scalar);
}

template <class T>
MSCCLPP_HOST_DEVICE_INLINE void divideElements(T* data, uint64_t count, uint32_t n, uint32_t threadId,
                                               uint32_t numThreads) {
  for (uint64_t i = threadId; i < count; i += numThreads) data[i] = divideBy(data[i], n);
}

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_REDUCE_OPS_HPP_
