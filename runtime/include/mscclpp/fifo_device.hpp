// The FIFO between device producers, port channel calls in kernels or CPU-backend block threads,
// and the host proxy that performs their requests. This header is the whole protocol: the 128-bit
// trigger encoding, the producers' push and sync, and the consumer the proxy service drives.
// Producers claim an index on `head` and publish a slot with release; the one consumer acquires
// it, performs the request, clears the slot and releases `tail`, so tail > i means request i is
// complete. Layout, memory placement and ordering in full: docs/cpp-api.md, "The FIFO".
#ifndef MSCCLPP_FIFO_DEVICE_HPP_
#define MSCCLPP_FIFO_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "device.hpp"

namespace mscclpp {

using TriggerType = uint64_t;
constexpr TriggerType TriggerPut = 0x1;
constexpr TriggerType TriggerSignal = 0x2;
constexpr TriggerType TriggerFlush = 0x4;
// MSCCL++ spellings.
constexpr TriggerType TriggerData = TriggerPut;
constexpr TriggerType TriggerFlag = TriggerSignal;
constexpr TriggerType TriggerSync = TriggerFlush;

constexpr unsigned kTriggerMemoryIdBits = 9;
constexpr unsigned kTriggerChannelIdBits = 10;
constexpr uint32_t kTriggerMaxMemoryId = (1u << kTriggerMemoryIdBits) - 1;    // 511
constexpr uint32_t kTriggerMaxChannelId = (1u << kTriggerChannelIdBits) - 1;  // 1023

// A decoded trigger: offsets and size in bytes.
struct TriggerFields {
  TriggerType type;
  uint32_t srcMemoryId;
  uint32_t dstMemoryId;
  uint32_t channelId;
  uint64_t srcOffset;
  uint64_t dstOffset;
  uint64_t size;
};

struct alignas(16) ProxyTrigger {
  uint64_t fst;
  uint64_t snd;

  // Encodes a request. Returns false when a value does not fit: a memory id over 511, a channel
  // id over 1023, no type bit, or an offset or size of 4 GiB or more that is not a multiple of
  // 16 or reaches 64 GiB. Callers split transfers larger than maxChunkBytes().
  MSCCLPP_HOST_DEVICE_INLINE static bool encode(TriggerType type, uint32_t dstMemoryId, uint64_t dstOffset,
                                                uint32_t srcMemoryId, uint64_t srcOffset, uint64_t size,
                                                uint32_t channelId, ProxyTrigger* out) {
    if ((type & 7) == 0 || (type & ~7ull) != 0) return false;
    if (dstMemoryId > kTriggerMaxMemoryId || srcMemoryId > kTriggerMaxMemoryId || channelId > kTriggerMaxChannelId)
      return false;
    uint64_t units16 = 0;
    if ((dstOffset | srcOffset | size) >> 32) {
      if (((dstOffset | srcOffset | size) & 15) != 0) return false;
      dstOffset >>= 4, srcOffset >>= 4, size >>= 4;
      if ((dstOffset | srcOffset | size) >> 32) return false;
      units16 = 1;
    }
    out->fst = size | (srcOffset << 32);
    out->snd = dstOffset | (static_cast<uint64_t>(srcMemoryId) << 32) | (static_cast<uint64_t>(dstMemoryId) << 41) |
               (type << 50) | (static_cast<uint64_t>(channelId) << 53) | (units16 << 63);
    return true;
  }

  MSCCLPP_HOST_DEVICE_INLINE static TriggerType typeOf(uint64_t snd) { return (snd >> 50) & 7; }

  MSCCLPP_HOST_DEVICE_INLINE TriggerFields decode() const {
    unsigned shift = (snd >> 63) ? 4 : 0;
    TriggerFields f;
    f.type = typeOf(snd);
    f.srcMemoryId = static_cast<uint32_t>((snd >> 32) & kTriggerMaxMemoryId);
    f.dstMemoryId = static_cast<uint32_t>((snd >> 41) & kTriggerMaxMemoryId);
    f.channelId = static_cast<uint32_t>((snd >> 53) & kTriggerMaxChannelId);
    f.size = (fst & 0xffffffffull) << shift;
    f.srcOffset = (fst >> 32) << shift;
    f.dstOffset = (snd & 0xffffffffull) << shift;
    return f;
  }

  // The largest size one trigger carries, in 16-byte units: callers use 16-aligned pieces.
  MSCCLPP_HOST_DEVICE_INLINE static uint64_t maxChunkBytes() { return 0xffffffffull << 4; }
};
static_assert(sizeof(ProxyTrigger) == 16, "a trigger is 128 bits");

// Device-side producer handle. Trivially copyable; copies share the ring.
struct FifoDeviceHandle {
  ProxyTrigger* triggers;  // the ring
  uint64_t* head;          // next index to claim; bumped by producers
  uint64_t* tail;          // first index not yet completed; written by the consumer only
  uint32_t size;           // slots in the ring, at least 1
  uint32_t timeoutSource;  // kTimeoutFrom*: what set timeoutNs, for messages
  uint64_t timeoutNs;      // of the convenience push() and sync(); 0 = MSCCLPP_DEFAULT_TIMEOUT_NS
  uint64_t* tailReplica;   // the producers' copy of the tail, or null

  // Claims a slot and publishes trigger t there; *index receives its position for sync(). Waits,
  // bounded, while the ring is full. After Timeout or Aborted nothing was published but the
  // claimed index is lost: the FIFO's owner must be torn down.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus push(const ProxyTrigger& t, uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* index) {
    uint64_t idx = atomicFetchAdd<uint64_t, scopeDevice>(head, 1, memoryOrderRelaxed);
    if (index != nullptr) *index = idx;
    // Acquire on the replica: its raiser acquired the real tail, which the consumer released
    // after clearing the slots below it, so this slot is free too.
    if (tailReplica == nullptr || idx >= atomicLoad<uint64_t, scopeDevice>(tailReplica, memoryOrderAcquire) + size) {
      // Acquire: the consumer cleared the slot before publishing the tail that frees it.
      SpinStatus st = spinUntil(
          [&] {
            const uint64_t seen = atomicLoad<uint64_t>(tail, memoryOrderAcquire);
            // Release: producers that read the raised replica see what this acquire saw.
            if (tailReplica != nullptr) atomicFetchMax<uint64_t, scopeDevice>(tailReplica, seen, memoryOrderRelease);
            return idx < seen + size;
          },
          deadlineNs, abortFlag);
      if (st != SpinStatus::Ok) return st;
    }
    ProxyTrigger* slot = &triggers[idx % size];
    slot->fst = t.fst;
    // Release: fst, and the data the request names, is visible before the slot turns valid.
    atomicStore<uint64_t>(&slot->snd, t.snd, memoryOrderRelease);
    return SpinStatus::Ok;
  }

  MSCCLPP_HOST_DEVICE_INLINE uint64_t push(const ProxyTrigger& t) {
    uint64_t idx = 0;
    SpinStatus st = push(t, deadlineAfter(timeoutNs), nullptr, &idx);
    if (st != SpinStatus::Ok) failSpin(st, "FIFO push (the proxy is not consuming)", timeoutSource);
    return idx;
  }

  // Waits until the consumer completed request `index`; acquire, so the proxy's work is visible.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus sync(uint64_t index, uint64_t deadlineNs, const uint32_t* abortFlag,
                                             uint64_t* observedTail = nullptr) {
    uint64_t seen = 0;
    SpinStatus st = spinUntil([&] { return (seen = atomicLoad<uint64_t>(tail, memoryOrderAcquire)) > index; },
                              deadlineNs, abortFlag);
    if (observedTail != nullptr) *observedTail = seen;
    return st;
  }

  MSCCLPP_HOST_DEVICE_INLINE void sync(uint64_t index) {
    SpinStatus st = sync(index, deadlineAfter(timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "FIFO sync (the proxy did not complete a request)", timeoutSource);
  }
};
static_assert(std::is_trivially_copyable<FifoDeviceHandle>::value, "device handles are copied as bytes");

// Host-side consumer of one ring: exactly one thread, the proxy's, uses it.
struct FifoConsumer {
  ProxyTrigger* triggers = nullptr;
  uint64_t* tail = nullptr;
  uint32_t size = 0;
  uint64_t position = 0;  // the consumer's private copy of tail

  FifoConsumer() = default;
  FifoConsumer(ProxyTrigger* ring, uint64_t* tailCounter, uint32_t slots)
      : triggers(ring),
        tail(tailCounter),
        size(slots),
        position(atomicLoad<uint64_t>(tailCounter, memoryOrderRelaxed)) {}

  // Copies the next request into *out when one is published; false when the ring is empty.
  bool poll(ProxyTrigger* out) const {
    ProxyTrigger* slot = &triggers[position % size];
    // Acquire: pairs with the producer's release store of snd, making fst valid.
    uint64_t snd = atomicLoad<uint64_t>(&slot->snd, memoryOrderAcquire);
    if (ProxyTrigger::typeOf(snd) == 0) return false;
    out->fst = slot->fst;
    out->snd = snd;
    return true;
  }

  // Marks the request returned by the last poll() complete: clears its slot and publishes the
  // new tail. Call it only once the request's work is done: flush and sync rely on it.
  void pop() {
    ProxyTrigger* slot = &triggers[position % size];
    slot->fst = 0;
    atomicStore<uint64_t>(&slot->snd, 0, memoryOrderRelaxed);
    ++position;
    // Release: the cleared slot is visible to a producer that sees this tail.
    atomicStore<uint64_t>(tail, position, memoryOrderRelease);
  }
};

}  // namespace mscclpp

#endif  // MSCCLPP_FIFO_DEVICE_HPP_
