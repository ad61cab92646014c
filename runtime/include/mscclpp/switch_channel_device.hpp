// The device handle of a switch channel (NVLS): one buffer bound into a multicast group of ranks.
// On sm_90+ GPUs with NVSwitch multicast, a load-reduce through the multicast address reduces the
// element of every member in the switch, and a store through it writes every member. The handle
// also carries the members' buffers as plain pointers, over which the CPU backend, and GPU code
// for a type or op the switch cannot reduce, emulates reduce and broadcast elementwise.
// Filled by host code, then immutable and trivially copyable; the filler owns memberPtrs' array
// and keeps it alive as long as the handle. Both paths are relaxed at system scope: plans order
// switch ops with semaphores around them.
#ifndef MSCCLPP_SWITCH_CHANNEL_DEVICE_HPP_
#define MSCCLPP_SWITCH_CHANNEL_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "copy_device.hpp"
#include "device.hpp"

namespace mscclpp {

// Element types the switch reduces natively with multimem.ld_reduce.
enum class MultimemElem : uint32_t { F32, F16, BF16, S32, U32 };
enum class MultimemOp : uint32_t { Sum, Min, Max };

// Whether multimem.ld_reduce supports (elem, op): sum for all five, min and max not for f32.
MSCCLPP_HOST_DEVICE_INLINE bool multimemSupports(MultimemElem elem, MultimemOp op) {
  return op == MultimemOp::Sum || elem != MultimemElem::F32;
}

struct SwitchChannelDeviceHandle {
  void* devicePtr;          // our member buffer: the bound buffer's base
  void* mcPtr;              // the multicast address of the binding; null without NVLS
  uint64_t bufferSize;      // bytes bound
  void* const* memberPtrs;  // every member's buffer base in group order; null for multicast only
  uint32_t nMembers;        // group size
  uint32_t myIndex;         // our position in the group

  // ---- emulated elementwise path, host and device ----
  // Reduces the T at byte offset across all members with fn(T, T), member 0 first.
  template <class T, class Fn>
  MSCCLPP_HOST_DEVICE_INLINE T reduceMembers(uint64_t byteOffset, Fn fn) const {
    T acc = *reinterpret_cast<const T*>(static_cast<const char*>(memberPtrs[0]) + byteOffset);
    for (uint32_t m = 1; m < nMembers; ++m)
      acc = fn(acc, *reinterpret_cast<const T*>(static_cast<const char*>(memberPtrs[m]) + byteOffset));
    return acc;
  }
  // Stores v at byte offset in every member.
  template <class T>
  MSCCLPP_HOST_DEVICE_INLINE void storeMembers(uint64_t byteOffset, const T& v) const {
    for (uint32_t m = 0; m < nMembers; ++m) *reinterpret_cast<T*>(static_cast<char*>(memberPtrs[m]) + byteOffset) = v;
  }
  // Copies bytes from src into every member at byteOffset, cooperatively.
  MSCCLPP_HOST_DEVICE_INLINE void broadcastBytes(uint64_t byteOffset, const void* src, uint64_t bytes,
                                                 uint32_t threadId, uint32_t numThreads) const {
#if defined(MSCCLPP_DEVICE_COMPILE) && __CUDA_ARCH__ >= 900
    if (mcPtr != nullptr && ((byteOffset | reinterpret_cast<uintptr_t>(src) | bytes) & 15) == 0) {
      const Vec16* s = static_cast<const Vec16*>(src);
      char* mc = static_cast<char*>(mcPtr) + byteOffset;
      for (uint64_t i = threadId; i < bytes / 16; i += numThreads) multimemStore16(mc + i * 16, s[i]);
      return;
    }
#endif
    for (uint32_t m = 0; m < nMembers; ++m)
      copy(static_cast<char*>(memberPtrs[m]) + byteOffset, src, bytes, threadId, numThreads);
  }

  // MSCCL++'s element access: sum-reduce or broadcast element `index` of T.
  template <class T>
  MSCCLPP_HOST_DEVICE_INLINE T reduce(uint64_t index) const {
    return reduceMembers<T>(index * sizeof(T), [](T a, T b) { return static_cast<T>(a + b); });
  }
  template <class T>
  MSCCLPP_HOST_DEVICE_INLINE void broadcast(uint64_t index, const T& v) const {
    storeMembers<T>(index * sizeof(T), v);
  }

#if defined(MSCCLPP_DEVICE_COMPILE) && __CUDA_ARCH__ >= 900
  // ---- multimem path on sm_90+: 16 bytes per access, relaxed at system scope ----
  template <MultimemElem E, MultimemOp O>
  MSCCLPP_DEVICE_INLINE static Vec16 multimemLoadReduce16(const void* mc) {
    uint32_t r0, r1, r2, r3;
#define MSCCLPP_MM_LDRED(op, ty)                                                          \
  asm volatile("multimem.ld_reduce.relaxed.sys.global." op "." ty " {%0,%1,%2,%3}, [%4];" \
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)                                   \
               : "l"(mc)                                                                  \
               : "memory")
#define MSCCLPP_MM_LDRED1(op, ty, reg, addr) \
  asm volatile("multimem.ld_reduce.relaxed.sys.global." op "." ty " %0, [%1];" : "=r"(reg) : "l"(addr) : "memory")
    if constexpr (E == MultimemElem::F32) {
      MSCCLPP_MM_LDRED("add", "v4.f32");
    } else if constexpr (E == MultimemElem::F16) {
      if constexpr (O == MultimemOp::Sum)
        MSCCLPP_MM_LDRED("add", "v4.f16x2");
      else if constexpr (O == MultimemOp::Min)
        MSCCLPP_MM_LDRED("min", "v4.f16x2");
      else
        MSCCLPP_MM_LDRED("max", "v4.f16x2");
    } else if constexpr (E == MultimemElem::BF16) {
      if constexpr (O == MultimemOp::Sum)
        MSCCLPP_MM_LDRED("add", "v4.bf16x2");
      else if constexpr (O == MultimemOp::Min)
        MSCCLPP_MM_LDRED("min", "v4.bf16x2");
      else
        MSCCLPP_MM_LDRED("max", "v4.bf16x2");
    } else {
      // Integer reductions have no vector form: four 32-bit accesses.
      const char* p = static_cast<const char*>(mc);
#define MSCCLPP_MM_LDRED4(op, ty)          \
  {                                        \
    MSCCLPP_MM_LDRED1(op, ty, r0, p);      \
    MSCCLPP_MM_LDRED1(op, ty, r1, p + 4);  \
    MSCCLPP_MM_LDRED1(op, ty, r2, p + 8);  \
    MSCCLPP_MM_LDRED1(op, ty, r3, p + 12); \
  }
      if constexpr (E == MultimemElem::S32) {
        if constexpr (O == MultimemOp::Sum)
          MSCCLPP_MM_LDRED4("add", "s32")
        else if constexpr (O == MultimemOp::Min)
          MSCCLPP_MM_LDRED4("min", "s32")
        else
          MSCCLPP_MM_LDRED4("max", "s32")
      } else {
        if constexpr (O == MultimemOp::Sum)
          MSCCLPP_MM_LDRED4("add", "u32")
        else if constexpr (O == MultimemOp::Min)
          MSCCLPP_MM_LDRED4("min", "u32")
        else
          MSCCLPP_MM_LDRED4("max", "u32")
      }
#undef MSCCLPP_MM_LDRED4
    }
#undef MSCCLPP_MM_LDRED
#undef MSCCLPP_MM_LDRED1
    Vec16 v;
    v.lo = static_cast<uint64_t>(r0) | (static_cast<uint64_t>(r1) << 32);
    v.hi = static_cast<uint64_t>(r2) | (static_cast<uint64_t>(r3) << 32);
    return v;
  }

  // A store of raw bits to every member: f32 lanes carry any bit pattern unchanged.
  MSCCLPP_DEVICE_INLINE static void multimemStore16(void* mc, const Vec16& v) {
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc), "r"((uint32_t)v.lo),
                 "r"((uint32_t)(v.lo >> 32)), "r"((uint32_t)v.hi), "r"((uint32_t)(v.hi >> 32))
                 : "memory");
  }
#endif
};
static_assert(std::is_trivially_copyable<SwitchChannelDeviceHandle>::value, "device handles are copied as bytes");

}  // namespace mscclpp

#endif  // MSCCLPP_SWITCH_CHANNEL_DEVICE_HPP_
