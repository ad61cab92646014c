// The GPU's packed reductions lane by lane against the elementwise Reducer,
// on the host (executor/packed_lanes.hpp): fp8 compares, max, min, sums and
// products over every pair of values of both formats, and half and bfloat16
// max and min over every value against zeros, infinities, NaNs and a spread.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "executor/packed_lanes.hpp"
#include "executor/reduce_ops.hpp"

using namespace mscclpp::exec;

namespace {

template <class T>
uint32_t bitsOf(T v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <class T>
T fromBits(uint32_t b) {
  T v;
  std::memcpy(static_cast<void*>(&v), &b, sizeof(T));
  return v;
}

// Every (a, b) fp8 pair: the packed lanes give Reducer's bits.
template <class T, bool kE5M2>
void checkFp8() {
  uint64_t mismatches = 0;
  for (uint32_t a = 0; a < 256; ++a) {
    for (uint32_t b = 0; b < 256; ++b) {
      const T x = fromBits<T>(a), y = fromBits<T>(b);
      const bool less = static_cast<float>(x) < static_cast<float>(y);
      mismatches += packed::fp8Less<kE5M2>(a, b) != less;
      // Lane 2 of four, the others a fixed pattern, so lanes are kept apart.
      const uint32_t wa = 0x3c00a500u | (a << 16), wb = 0xb800c300u | (b << 16);
      const uint32_t max = packed::fp8Max4<kE5M2>(wa, wb), min = packed::fp8Min4<kE5M2>(wa, wb);
      for (int lane = 0; lane < 4; ++lane) {
        const T la = fromBits<T>((wa >> (8 * lane)) & 0xffu), lb = fromBits<T>((wb >> (8 * lane)) & 0xffu);
        mismatches += ((max >> (8 * lane)) & 0xffu) != bitsOf(Reducer<T, OpMax>::apply(la, lb));
        mismatches += ((min >> (8 * lane)) & 0xffu) != bitsOf(Reducer<T, OpMin>::apply(la, lb));
      }
      // Lane 1 of a pair, lane 0 the same values swapped.
      const uint32_t pa = (a << 8) | b, pb = (b << 8) | a;
      const uint32_t sum = packed::fp8Sum2<kE5M2>(pa, pb), prod = packed::fp8Prod2<kE5M2>(pa, pb);
      mismatches += (sum >> 8) != bitsOf(Reducer<T, OpSum>::apply(x, y));
      mismatches += (sum & 0xffu) != bitsOf(Reducer<T, OpSum>::apply(y, x));
      mismatches += (prod >> 8) != bitsOf(Reducer<T, OpProd>::apply(x, y));
      mismatches += (prod & 0xffu) != bitsOf(Reducer<T, OpProd>::apply(y, x));
    }
  }
  REQUIRE(mismatches == 0);
}

// Every 16-bit value a against the chosen b's, in both lanes.
template <class T, class T2>
void checkHalfMinMax() {
  std::vector<uint32_t> bs = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8001};
  for (uint32_t v = 0x0003; v < 0x10000; v += 0x0107) bs.push_back(v);
  uint64_t mismatches = 0;
  for (uint32_t a = 0; a < 0x10000; ++a) {
    for (uint32_t b : bs) {
      const T x = fromBits<T>(a), y = fromBits<T>(b);
      const T2 pa = fromBits<T2>(a | (b << 16)), pb = fromBits<T2>(b | (a << 16));
      const uint32_t max = bitsOf(packed::max2(pa, pb)), min = bitsOf(packed::min2(pa, pb));
      mismatches += (max & 0xffffu) != bitsOf(Reducer<T, OpMax>::apply(x, y));
      mismatches += (max >> 16) != bitsOf(Reducer<T, OpMax>::apply(y, x));
      mismatches += (min & 0xffffu) != bitsOf(Reducer<T, OpMin>::apply(x, y));
      mismatches += (min >> 16) != bitsOf(Reducer<T, OpMin>::apply(y, x));
    }
  }
  REQUIRE(mismatches == 0);
}

}  // namespace

TEST_CASE("packed fp8 e4m3 lanes match the elementwise reducer", "[packed]") { checkFp8<__nv_fp8_e4m3, false>(); }

TEST_CASE("packed fp8 e5m2 lanes match the elementwise reducer", "[packed]") { checkFp8<__nv_fp8_e5m2, true>(); }

TEST_CASE("packed half max and min match the elementwise reducer", "[packed]") { checkHalfMinMax<__half, __half2>(); }

TEST_CASE("packed bfloat16 max and min match the reducer", "[packed]") {
  checkHalfMinMax<__nv_bfloat16, __nv_bfloat162>();
}
