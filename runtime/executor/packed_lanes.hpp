// Lane operations of the GPU's packed reductions (vector_reduce.hpp): max
// and min of half and bfloat16 pairs, of four fp8 lanes, and fp8 pair sums
// and products. Each gives, lane by lane, exactly what the elementwise
// Reducer gives (reduce_ops.hpp); they are host and device code, so a host
// test checks that over every fp8 pair. Thread-safety: pure functions.
#ifndef MSCCLPP_EXECUTOR_PACKED_LANES_HPP_
#define MSCCLPP_EXECUTOR_PACKED_LANES_HPP_

#include <cstdint>
#include <cstring>

#include "dtypes.hpp"
#include "mscclpp/device.hpp"

namespace mscclpp::exec::packed {

// The lanes of ifSet where mask's bits are set, of ifClear elsewhere.
template <class W>
MSCCLPP_HOST_DEVICE_INLINE W pickLanes(uint32_t mask, W ifSet, W ifClear) {
  static_assert(sizeof(W) == sizeof(uint32_t), "a 32-bit word of lanes");
  uint32_t s, c;
  std::memcpy(&s, &ifSet, sizeof(s));
  std::memcpy(&c, &ifClear, sizeof(c));
  const uint32_t r = (s & mask) | (c & ~mask);
  W out;
  std::memcpy(static_cast<void*>(&out), &r, sizeof(out));
  return out;
}

// Max and min of half2 or bfloat162: Reducer's (a < b ? b : a) and
// (b < a ? b : a) lane by lane. The compare is exact in either width and
// false with a NaN, as in float.
template <class H2>
MSCCLPP_HOST_DEVICE_INLINE H2 max2(H2 a, H2 b) {
  return pickLanes(__hlt2_mask(a, b), b, a);
}
template <class H2>
MSCCLPP_HOST_DEVICE_INLINE H2 min2(H2 a, H2 b) {
  return pickLanes(__hlt2_mask(b, a), b, a);
}

// a < b for two fp8 values as floats compare: false with a NaN (e4m3:
// magnitude 0x7f; e5m2: above 0x7c, the infinity) and for two zeros; else
// sign-magnitude order, negatives mirrored below the positives.
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE bool fp8Less(uint32_t a, uint32_t b) {
  const uint32_t ma = a & 0x7fu, mb = b & 0x7fu;
  const bool nan = kE5M2 ? (ma > 0x7cu || mb > 0x7cu) : (ma == 0x7fu || mb == 0x7fu);
  if (nan || (ma | mb) == 0) return false;
  const uint32_t ka = (a & 0x80u) ? 0x7fu - ma : 0x80u | ma;
  const uint32_t kb = (b & 0x80u) ? 0x7fu - mb : 0x80u | mb;
  return ka < kb;
}

// The byte mask of four fp8 lanes where a's lane is less than b's.
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE uint32_t fp8Less4(uint32_t a, uint32_t b) {
  uint32_t mask = 0;
#if defined(MSCCLPP_DEVICE_COMPILE)
#pragma unroll
#endif
  for (int i = 0; i < 4; ++i) {
    if (fp8Less<kE5M2>((a >> (8 * i)) & 0xffu, (b >> (8 * i)) & 0xffu)) mask |= 0xffu << (8 * i);
  }
  return mask;
}
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE uint32_t fp8Max4(uint32_t a, uint32_t b) {
  return pickLanes(fp8Less4<kE5M2>(a, b), b, a);
}
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE uint32_t fp8Min4(uint32_t a, uint32_t b) {
  return pickLanes(fp8Less4<kE5M2>(b, a), b, a);
}

// Sum and product of two fp8 pairs (the low 16 bits): widened exactly to
// half2 and float2, computed in float, rounded back with the saturating
// conversion Reducer's fp8 constructor uses.
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE float2 fp8PairToFloat2(uint32_t p) {
  constexpr __nv_fp8_interpretation_t K = kE5M2 ? __NV_E5M2 : __NV_E4M3;
  return __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(p), K)));
}
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE uint32_t fp8PairFromFloat2(float2 f) {
  return __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, kE5M2 ? __NV_E5M2 : __NV_E4M3);
}
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE uint32_t fp8Sum2(uint32_t a, uint32_t b) {
  const float2 x = fp8PairToFloat2<kE5M2>(a), y = fp8PairToFloat2<kE5M2>(b);
  return fp8PairFromFloat2<kE5M2>(make_float2(x.x + y.x, x.y + y.y));
}
template <bool kE5M2>
MSCCLPP_HOST_DEVICE_INLINE uint32_t fp8Prod2(uint32_t a, uint32_t b) {
  const float2 x = fp8PairToFloat2<kE5M2>(a), y = fp8PairToFloat2<kE5M2>(b);
  return fp8PairFromFloat2<kE5M2>(make_float2(x.x * y.x, x.y * y.y));
}

}  // namespace mscclpp::exec::packed

#endif  // MSCCLPP_EXECUTOR_PACKED_LANES_HPP_
