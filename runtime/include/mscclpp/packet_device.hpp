// LL ("low latency") packets: data and a flag travel in one store, so a reader knows the data is
// there from the flag, with no separate signal or fence. LL16Packet is 16 bytes, two
// self-validating 64-bit halves {data, flag} carrying 8 payload bytes, so no reader needs 16-byte
// atomicity, which the host lacks; LL8Packet is one {data, flag} word carrying 4. A packet is twice
// its payload, and buffers must start zeroed: flag 0 is never valid. Each half is one system-scope
// access: volatile on the GPU, where the data dependency orders what a block does with the payload;
// release and acquire on the host, free on x86, so C++ and ThreadSanitizer see that edge. A
// packet's arrival must never publish OTHER data: unsound on a GPU (docs/cpp-api.md, "LL packets").
#ifndef MSCCLPP_PACKET_DEVICE_HPP_
#define MSCCLPP_PACKET_DEVICE_HPP_

#include <cstdint>
#include <cstring>

#include "device.hpp"

namespace mscclpp {

MSCCLPP_HOST_DEVICE_INLINE uint64_t packHalf(uint32_t data, uint32_t flag) {
  return static_cast<uint64_t>(data) | (static_cast<uint64_t>(flag) << 32);
}

struct alignas(16) LL16Packet {
  uint64_t halves[2];  // each: data in bits 0-31, flag in bits 32-63

  using Payload = uint64_t;
  static constexpr uint32_t kPayloadBytes = 8;

  MSCCLPP_HOST_DEVICE_INLINE void write(uint64_t payload, uint32_t flag) {
    uint32_t lo = static_cast<uint32_t>(payload), hi = static_cast<uint32_t>(payload >> 32);
#if defined(MSCCLPP_DEVICE_COMPILE)
    // One 16-byte volatile store: each 8-byte half lands atomically, which is all readers assume.
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(this), "r"(lo), "r"(flag), "r"(hi), "r"(flag)
                 : "memory");
#else
    atomicStore(&halves[0], packHalf(lo, flag), memoryOrderRelease);
    atomicStore(&halves[1], packHalf(hi, flag), memoryOrderRelease);
#endif
  }

  // True when both halves carry flag. *payload gets the data read either way, meaningful only on
  // true; the optional *observed gets a flag seen. Assigning the payload on every path keeps it
  // in one register through a spin: a value set only on success made ptxas spill it.
  MSCCLPP_HOST_DEVICE_INLINE bool readOnce(uint32_t flag, uint64_t* payload, uint32_t* observed = nullptr) const {
    uint32_t d0, f0, d1, f1;
#if defined(MSCCLPP_DEVICE_COMPILE)
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                 : "l"(this)
                 : "memory");
#else
    uint64_t h0 = atomicLoad(&halves[0], memoryOrderAcquire);
    uint64_t h1 = atomicLoad(&halves[1], memoryOrderAcquire);
    d0 = static_cast<uint32_t>(h0), f0 = static_cast<uint32_t>(h0 >> 32);
    d1 = static_cast<uint32_t>(h1), f1 = static_cast<uint32_t>(h1 >> 32);
#endif
    if (observed != nullptr) *observed = (f0 != flag) ? f0 : f1;
    *payload = static_cast<uint64_t>(d0) | (static_cast<uint64_t>(d1) << 32);
    return f0 == flag && f1 == flag;
  }
};
static_assert(sizeof(LL16Packet) == 16, "LL16Packet is 16 bytes");

struct alignas(8) LL8Packet {
  uint64_t word;  // data in bits 0-31, flag in bits 32-63

  using Payload = uint32_t;
  static constexpr uint32_t kPayloadBytes = 4;

  MSCCLPP_HOST_DEVICE_INLINE void write(uint32_t payload, uint32_t flag) {
#if defined(MSCCLPP_DEVICE_COMPILE)
    atomicStore(&word, packHalf(payload, flag), memoryOrderRelaxed);  // ordered by the data dependency
#else
    atomicStore(&word, packHalf(payload, flag), memoryOrderRelease);
#endif
  }

  // As LL16Packet::readOnce: *payload is assigned whatever the flag says.
  MSCCLPP_HOST_DEVICE_INLINE bool readOnce(uint32_t flag, uint32_t* payload, uint32_t* observed = nullptr) const {
#if defined(MSCCLPP_DEVICE_COMPILE)
    uint64_t w = atomicLoad(&word, memoryOrderRelaxed);  // ordered by the data dependency
#else
    uint64_t w = atomicLoad(&word, memoryOrderAcquire);
#endif
    uint32_t f = static_cast<uint32_t>(w >> 32);
    if (observed != nullptr) *observed = f;
    *payload = static_cast<uint32_t>(w);
    return f == flag;
  }
};
static_assert(sizeof(LL8Packet) == 8, "LL8Packet is 8 bytes");

// Where a packet wait stopped: the packet's index in the buffer and the flag it held.
struct PacketWaitInfo {
  uint64_t packetIndex = 0;
  uint32_t observedFlag = 0;
};

template <class Packet>
MSCCLPP_HOST_DEVICE_INLINE SpinStatus readPacket(const Packet* pkt, uint32_t flag, typename Packet::Payload* payload,
                                                 uint64_t deadlineNs, const uint32_t* abortFlag,
                                                 uint32_t* observed = nullptr) {
  return spinUntil([&] { return pkt->readOnce(flag, payload, observed); }, deadlineNs, abortFlag);
}

namespace detail {

// Loads n bytes, at most sizeof(P), into a zero-padded payload; a full aligned one is one load.
template <class P>
MSCCLPP_HOST_DEVICE_INLINE P loadPayload(const char* src, uint64_t n) {
  P v = 0;
  if (n == sizeof(P) && (reinterpret_cast<uintptr_t>(src) % sizeof(P)) == 0) return *reinterpret_cast<const P*>(src);
  for (uint64_t b = 0; b < n; ++b) v |= static_cast<P>(static_cast<unsigned char>(src[b])) << (8 * b);
  return v;
}

template <class P>
MSCCLPP_HOST_DEVICE_INLINE void storePayload(char* dst, P v, uint64_t n) {
  if (n == sizeof(P) && (reinterpret_cast<uintptr_t>(dst) % sizeof(P)) == 0) {
    *reinterpret_cast<P*>(dst) = v;
    return;
  }
  for (uint64_t b = 0; b < n; ++b) dst[b] = static_cast<char>((v >> (8 * b)) & 0xff);
}

}  // namespace detail

// The packets that carry `bytes` payload bytes; the last may be partial.
template <class Packet>
MSCCLPP_HOST_DEVICE_INLINE uint64_t packetCount(uint64_t bytes) {
  return (bytes + Packet::kPayloadBytes - 1) / Packet::kPayloadBytes;
}

// Writes srcBytes of plain data from src as packets at dstPackets, cooperatively over numThreads
// threads. Any byte count: a partial last packet is padded with zeros.
template <class Packet = LL16Packet>
MSCCLPP_HOST_DEVICE_INLINE void putPackets(void* dstPackets, const void* src, uint64_t srcBytes, uint32_t threadId,
                                           uint32_t numThreads, uint32_t flag) {
  using P = typename Packet::Payload;
  Packet* dst = static_cast<Packet*>(dstPackets);
  const char* s = static_cast<const char*>(src);
  // Whole payloads in the main loop, one load each when src is aligned; the partial last apart.
  const uint64_t nFull = srcBytes / Packet::kPayloadBytes;
  uint64_t i = threadId;
  if (reinterpret_cast<uintptr_t>(s) % sizeof(P) == 0) {
    const P* words = reinterpret_cast<const P*>(s);
    for (; i < nFull; i += numThreads) dst[i].write(words[i], flag);
  } else {
    for (; i < nFull; i += numThreads)
      dst[i].write(detail::loadPayload<P>(s + i * Packet::kPayloadBytes, Packet::kPayloadBytes), flag);
  }
  // The thread whose next index is nFull takes the partial packet: no division.
  const uint64_t tail = srcBytes - nFull * Packet::kPayloadBytes;
  if (tail > 0 && i == nFull) dst[nFull].write(detail::loadPayload<P>(s + nFull * Packet::kPayloadBytes, tail), flag);
}

// With MSCCL++'s offsets: dstOffset bytes into the packet buffer, srcOffset into src.
template <class Packet = LL16Packet>
MSCCLPP_HOST_DEVICE_INLINE void putPackets(void* dst, uint64_t dstOffset, const void* src, uint64_t srcOffset,
                                           uint64_t srcBytes, uint32_t threadId, uint32_t numThreads, uint32_t flag) {
  putPackets<Packet>(static_cast<char*>(dst) + dstOffset, static_cast<const char*>(src) + srcOffset, srcBytes, threadId,
                     numThreads, flag);
}

// Waits for and unpacks dstBytes of payload from srcPackets into dst. This thread takes packets
// firstIndex, firstIndex + numThreads, ...: firstIndex is its thread index, or a later packet of
// its own to resume at. Returns Ok when all arrived, else the first failed spin's status with
// *info naming the packet.
template <class Packet = LL16Packet>
MSCCLPP_HOST_DEVICE_INLINE SpinStatus getPackets(void* dst, const void* srcPackets, uint64_t dstBytes,
                                                 uint64_t firstIndex, uint32_t numThreads, uint32_t flag,
                                                 uint64_t deadlineNs, const uint32_t* abortFlag,
                                                 PacketWaitInfo* info = nullptr) {
  using P = typename Packet::Payload;
  const Packet* src = static_cast<const Packet*>(srcPackets);
  char* d = static_cast<char*>(dst);
  uint64_t n = packetCount<Packet>(dstBytes);
  const uint64_t nFull = dstBytes / Packet::kPayloadBytes;
  const bool aligned = reinterpret_cast<uintptr_t>(d) % sizeof(P) == 0;
  MSCCLPP_NO_UNROLL
  for (uint64_t i = firstIndex; i < n; i += numThreads) {
    P v;
    uint32_t observed = 0;
    SpinStatus st = readPacket(&src[i], flag, &v, deadlineNs, abortFlag, &observed);
    if (st != SpinStatus::Ok) {
      if (info != nullptr) *info = PacketWaitInfo{i, observed};
      return st;
    }
    if (aligned && i < nFull) {
      reinterpret_cast<P*>(d)[i] = v;  // a whole payload in one store
    } else {
      const uint64_t off = i * Packet::kPayloadBytes;
      detail::storePayload<P>(d + off, v, i < nFull ? Packet::kPayloadBytes : dstBytes - off);
    }
  }
  return SpinStatus::Ok;
}

// MSCCL++'s convenience form, src being the packet buffer. Waits up to timeoutNs, 0 meaning
// MSCCLPP_DEFAULT_TIMEOUT_NS, then fails as wait() does.
template <class Packet = LL16Packet>
MSCCLPP_HOST_DEVICE_INLINE void getPackets(const void* src, uint64_t srcOffset, void* dst, uint64_t dstOffset,
                                           uint64_t dstBytes, uint32_t threadId, uint32_t numThreads, uint32_t flag,
                                           uint64_t timeoutNs = 0) {
  SpinStatus st = getPackets<Packet>(static_cast<char*>(dst) + dstOffset, static_cast<const char*>(src) + srcOffset,
                                     dstBytes, threadId, numThreads, flag, deadlineAfter(timeoutNs), nullptr);
  if (st != SpinStatus::Ok) failSpin(st, "getPackets: waiting for packet flags");
}

}  // namespace mscclpp

#endif  // MSCCLPP_PACKET_DEVICE_HPP_
