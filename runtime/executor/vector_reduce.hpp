// Reductions of whole machine words: 16-byte vectors and 8-byte LL16
// payloads of elements of T. On the GPU, 16- and 8-bit floats and 8-bit
// integers go two or four lanes per instruction, bit-identical to the
// elementwise Reducer: float's 24 bits make the double rounding of two 11-
// or 8-bit values exact, fp8 widens exactly, and compares are exact.
// Everything else goes element by element. Thread-safety: pure functions.
#ifndef MSCCLPP_EXECUTOR_VECTOR_REDUCE_HPP_
#define MSCCLPP_EXECUTOR_VECTOR_REDUCE_HPP_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mscclpp/copy_device.hpp"
#include "packed_lanes.hpp"
#include "reduce_ops.hpp"

namespace mscclpp::exec {

// a[i] = f(a[i], b[i]) for the lanes L of a word W (memcpy in and out: registers on the GPU).
template <class L, class W, class F>
MSCCLPP_HOST_DEVICE_INLINE W mapLanes(W a, const W& b, F f) {
  constexpr int kN = sizeof(W) / sizeof(L);
#if defined(MSCCLPP_DEVICE_COMPILE)
#pragma unroll
#endif
  for (int i = 0; i < kN; ++i) {
    L x, y;
    std::memcpy(&x, reinterpret_cast<const char*>(&a) + i * sizeof(L), sizeof(L));
    std::memcpy(&y, reinterpret_cast<const char*>(&b) + i * sizeof(L), sizeof(L));
    x = f(x, y);
    std::memcpy(reinterpret_cast<char*>(&a) + i * sizeof(L), &x, sizeof(L));
  }
  return a;
}

// Packed math on the GPU: two or four elements per instruction (kOk), else element by element.
template <class T, class Op>
struct PackedMath {
  static constexpr bool kOk = false;
};
#if defined(MSCCLPP_DEVICE_COMPILE) && __CUDA_ARCH__ >= 800
template <>
struct PackedMath<__half, OpSum> {
  static constexpr bool kOk = true;
  using Pair = __half2;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __hadd2(a, b); }
};
template <>
struct PackedMath<__half, OpProd> {
  static constexpr bool kOk = true;
  using Pair = __half2;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __hmul2(a, b); }
};
template <>
struct PackedMath<__nv_bfloat16, OpSum> {
  static constexpr bool kOk = true;
  using Pair = __nv_bfloat162;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __hadd2(a, b); }
};
template <>
struct PackedMath<__nv_bfloat16, OpProd> {
  static constexpr bool kOk = true;
  using Pair = __nv_bfloat162;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __hmul2(a, b); }
};

// Max and min: a lane picked by an exact compare (packed_lanes.hpp).
template <>
struct PackedMath<__half, OpMax> {
  static constexpr bool kOk = true;
  using Pair = __half2;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return packed::max2(a, b); }
};
template <>
struct PackedMath<__half, OpMin> {
  static constexpr bool kOk = true;
  using Pair = __half2;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return packed::min2(a, b); }
};
template <>
struct PackedMath<__nv_bfloat16, OpMax> {
  static constexpr bool kOk = true;
  using Pair = __nv_bfloat162;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return packed::max2(a, b); }
};
template <>
struct PackedMath<__nv_bfloat16, OpMin> {
  static constexpr bool kOk = true;
  using Pair = __nv_bfloat162;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return packed::min2(a, b); }
};
#endif
#if defined(MSCCLPP_DEVICE_COMPILE)
// fp8 max and min four lanes per word by integer compares; sums and products
// two lanes per conversion where the GPU converts fp8 itself (sm_89 on).
template <bool kE5M2, class Op>
struct PackedFp8 {
  static constexpr bool kOk = std::is_same<Op, OpMax>::value || std::is_same<Op, OpMin>::value
#if __CUDA_ARCH__ >= 890
                              || std::is_same<Op, OpSum>::value || std::is_same<Op, OpProd>::value
#endif
      ;
  using Pair = uint32_t;
  MSCCLPP_DEVICE_INLINE static uint32_t apply(uint32_t a, uint32_t b) {
    if constexpr (std::is_same<Op, OpMax>::value) {
      return packed::fp8Max4<kE5M2>(a, b);
    } else if constexpr (std::is_same<Op, OpMin>::value) {
      return packed::fp8Min4<kE5M2>(a, b);
    } else if constexpr (std::is_same<Op, OpSum>::value) {
      return packed::fp8Sum2<kE5M2>(a & 0xffffu, b & 0xffffu) | (packed::fp8Sum2<kE5M2>(a >> 16, b >> 16) << 16);
    } else {
      return packed::fp8Prod2<kE5M2>(a & 0xffffu, b & 0xffffu) | (packed::fp8Prod2<kE5M2>(a >> 16, b >> 16) << 16);
    }
  }
};
template <class Op>
struct PackedMath<__nv_fp8_e4m3, Op> : PackedFp8<false, Op> {};
template <class Op>
struct PackedMath<__nv_fp8_e5m2, Op> : PackedFp8<true, Op> {};

// Byte maxima and minima, four lanes per 32-bit word (SIMD video instructions).
template <>
struct PackedMath<int8_t, OpMax> {
  static constexpr bool kOk = true;
  using Pair = unsigned;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __vmaxs4(a, b); }
};
template <>
struct PackedMath<int8_t, OpMin> {
  static constexpr bool kOk = true;
  using Pair = unsigned;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __vmins4(a, b); }
};
template <>
struct PackedMath<uint8_t, OpMax> {
  static constexpr bool kOk = true;
  using Pair = unsigned;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __vmaxu4(a, b); }
};
template <>
struct PackedMath<uint8_t, OpMin> {
  static constexpr bool kOk = true;
  using Pair = unsigned;
  MSCCLPP_DEVICE_INLINE static Pair apply(Pair a, Pair b) { return __vminu4(a, b); }
};
#endif

// a (op) b over a whole word W (Vec16 or uint64_t) of T elements.
template <class T, class Op, class W>
MSCCLPP_HOST_DEVICE_INLINE W reduceWord(W a, const W& b) {
  if constexpr (PackedMath<T, Op>::kOk) {
#if defined(MSCCLPP_DEVICE_COMPILE)
    using M = PackedMath<T, Op>;
    return mapLanes<typename M::Pair>(a, b, [](typename M::Pair x, typename M::Pair y) { return M::apply(x, y); });
#endif
  }
  return mapLanes<T>(a, b, [](T x, T y) { return Reducer<T, Op>::apply(x, y); });
}

// 16-byte accesses of global memory. Every buffer a plan moves is global
// memory, local, a peer's or mapped host memory, so the compiler can emit
// ld.global.v4 and st.global.v4 instead of generic accesses.
MSCCLPP_HOST_DEVICE_INLINE Vec16 loadVec16(const void* p) {
#if defined(MSCCLPP_DEVICE_COMPILE)
  __builtin_assume(__isGlobal(p));
  const uint4 v = *static_cast<const uint4*>(p);
  Vec16 r;
  std::memcpy(&r, &v, sizeof(r));
  return r;
#else
  return *static_cast<const Vec16*>(p);
#endif
}

MSCCLPP_HOST_DEVICE_INLINE void storeVec16(void* p, const Vec16& v) {
#if defined(MSCCLPP_DEVICE_COMPILE)
  __builtin_assume(__isGlobal(p));
  uint4 w;
  std::memcpy(&w, &v, sizeof(w));
  *static_cast<uint4*>(p) = w;
#else
  *static_cast<Vec16*>(p) = v;
#endif
}

// copy() for global memory: 16-byte vectors when both sides share a
// 16-byte phase, head and tail bytewise; else the general copy.
MSCCLPP_HOST_DEVICE_INLINE void copyGlobal(void* dst, const void* src, uint64_t bytes, uint32_t threadId,
                                           uint32_t numThreads) {
#if defined(MSCCLPP_DEVICE_COMPILE)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  if (((reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s)) & 15) == 0 && bytes >= 16) {
    uint64_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
    for (uint64_t i = threadId; i < head; i += numThreads) d[i] = s[i];
    const uint64_t nVec = (bytes - head) / 16;
    char* dv = d + head;
    const char* sv = s + head;
    const uint64_t stride = numThreads;
    uint64_t i = threadId;
    // Four 16-byte loads in flight per thread: all four issue before the first store.
    const uint64_t step = 16 * stride;  // bytes between a thread's four vectors
    for (; i + 3 * stride < nVec; i += 4 * stride) {
      const char* p = sv + i * 16;
      const Vec16 a = loadVec16(p), b = loadVec16(p += step), c = loadVec16(p += step), e = loadVec16(p += step);
      char* q = dv + i * 16;
      storeVec16(q, a);
      storeVec16(q += step, b);
      storeVec16(q += step, c);
      storeVec16(q += step, e);
    }
    for (; i < nVec; i += stride) storeVec16(dv + i * 16, loadVec16(sv + i * 16));
    for (uint64_t i = head + nVec * 16 + threadId; i < bytes; i += numThreads) d[i] = s[i];
    return;
  }
#endif
  copy(dst, src, bytes, threadId, numThreads);
}

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_VECTOR_REDUCE_HPP_
