// The device handle of a port channel, MSCCL++'s ProxyChannel: one thread pushes requests into the
// proxy's FIFO, and the host proxy performs the copy and the signal in FIFO order. Filled by host
// code, then immutable and trivially copyable. Memory ids name buffers registered with the proxy;
// offsets are bytes. Transfers of 4 GiB or more are split, and offsets or sizes past 4 GiB must
// then be multiples of 16, else the status variants return Invalid. put() only enqueues: the
// proxy reads the source later, so do not overwrite it before a flush() says the copy completed.
// A signal pushed after a put is performed after that put completed; the peer's wait() acquires it.
#ifndef MSCCLPP_PORT_CHANNEL_DEVICE_HPP_
#define MSCCLPP_PORT_CHANNEL_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "fifo_device.hpp"
#include "semaphore_device.hpp"

namespace mscclpp {

using MemoryId = uint32_t;

struct PortChannelDeviceHandle {
  uint32_t channelId_;  // the proxy's id for this channel's semaphore, 10 bits of the trigger
  MemoryId dst_;        // default remote memory id: the peer's buffer, registered with the proxy
  MemoryId src_;        // default local memory id
  uint32_t reserved_;
  Host2DeviceSemaphoreDeviceHandle semaphore_;  // incremented by the peer's proxy on its signal
  FifoDeviceHandle fifo_;                       // our proxy's request ring

  // Pushes one request, split as needed; *lastIndex gets the FIFO index of the final piece.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus push(TriggerType type, MemoryId dst, uint64_t dstOffset, MemoryId src,
                                             uint64_t srcOffset, uint64_t size, uint64_t deadlineNs,
                                             const uint32_t* abortFlag, uint64_t* lastIndex = nullptr) {
    constexpr uint64_t kPiece = 0xfffffff0ull;  // under 4 GiB and a multiple of 16
    for (;;) {
      uint64_t piece = size > kPiece ? kPiece : size;
      bool last = piece == size;
      ProxyTrigger trig{0, 0};
      if (!ProxyTrigger::encode(last ? type : TriggerPut, dst, dstOffset, src, srcOffset, piece, channelId_, &trig))
        return SpinStatus::Invalid;
      SpinStatus st = fifo_.push(trig, deadlineNs, abortFlag, lastIndex);
      if (st != SpinStatus::Ok || last) return st;
      dstOffset += piece, srcOffset += piece, size -= piece;
    }
  }

  // ---- status variants, which the op interpreter uses ----
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus put(MemoryId dst, uint64_t dstOffset, MemoryId src, uint64_t srcOffset,
                                            uint64_t size, uint64_t deadlineNs, const uint32_t* abortFlag) {
    return push(TriggerPut, dst, dstOffset, src, srcOffset, size, deadlineNs, abortFlag);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus signal(uint64_t deadlineNs, const uint32_t* abortFlag) {
    return push(TriggerSignal, 0, 0, 0, 0, 0, deadlineNs, abortFlag);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus putWithSignal(MemoryId dst, uint64_t dstOffset, MemoryId src,
                                                      uint64_t srcOffset, uint64_t size, uint64_t deadlineNs,
                                                      const uint32_t* abortFlag) {
    return push(TriggerPut | TriggerSignal, dst, dstOffset, src, srcOffset, size, deadlineNs, abortFlag);
  }
  // Pushes the request and waits until the proxy completed it and everything pushed before it.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus putWithSignalAndFlush(MemoryId dst, uint64_t dstOffset, MemoryId src,
                                                              uint64_t srcOffset, uint64_t size, uint64_t deadlineNs,
                                                              const uint32_t* abortFlag) {
    uint64_t idx = 0;
    SpinStatus st = push(TriggerPut | TriggerSignal | TriggerFlush, dst, dstOffset, src, srcOffset, size, deadlineNs,
                         abortFlag, &idx);
    return st != SpinStatus::Ok ? st : fifo_.sync(idx, deadlineNs, abortFlag);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus flush(uint64_t deadlineNs, const uint32_t* abortFlag, uint64_t* index = nullptr,
                                              uint64_t* observedTail = nullptr) {
    uint64_t idx = 0;
    SpinStatus st = push(TriggerFlush, 0, 0, 0, 0, 0, deadlineNs, abortFlag, &idx);
    if (index != nullptr) *index = idx;
    return st != SpinStatus::Ok ? st : fifo_.sync(idx, deadlineNs, abortFlag, observedTail);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(uint64_t deadlineNs, const uint32_t* abortFlag) {
    return semaphore_.wait(deadlineNs, abortFlag);
  }

  // ---- MSCCL++'s convenience variants: they trap on the GPU or throw on the host on failure ----
  MSCCLPP_HOST_DEVICE_INLINE void put(MemoryId dst, uint64_t dstOffset, MemoryId src, uint64_t srcOffset,
                                      uint64_t size) {
    check(put(dst, dstOffset, src, srcOffset, size, deadlineAfter(fifo_.timeoutNs), nullptr), "PortChannel::put");
  }
  MSCCLPP_HOST_DEVICE_INLINE void put(uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    put(dst_, dstOffset, src_, srcOffset, size);
  }
  MSCCLPP_HOST_DEVICE_INLINE void put(uint64_t offset, uint64_t size) { put(dst_, offset, src_, offset, size); }
  MSCCLPP_HOST_DEVICE_INLINE void signal() {
    check(signal(deadlineAfter(fifo_.timeoutNs), nullptr), "PortChannel::signal");
  }
  MSCCLPP_HOST_DEVICE_INLINE void putWithSignal(uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    check(putWithSignal(dst_, dstOffset, src_, srcOffset, size, deadlineAfter(fifo_.timeoutNs), nullptr),
          "PortChannel::putWithSignal");
  }
  MSCCLPP_HOST_DEVICE_INLINE void putWithSignal(uint64_t offset, uint64_t size) { putWithSignal(offset, offset, size); }
  MSCCLPP_HOST_DEVICE_INLINE void putWithSignalAndFlush(uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    check(putWithSignalAndFlush(dst_, dstOffset, src_, srcOffset, size, deadlineAfter(fifo_.timeoutNs), nullptr),
          "PortChannel::putWithSignalAndFlush");
  }
  MSCCLPP_HOST_DEVICE_INLINE void putWithSignalAndFlush(uint64_t offset, uint64_t size) {
    putWithSignalAndFlush(offset, offset, size);
  }
  MSCCLPP_HOST_DEVICE_INLINE void flush() {
    check(flush(deadlineAfter(fifo_.timeoutNs), nullptr), "PortChannel::flush");
  }
  MSCCLPP_HOST_DEVICE_INLINE void wait() { semaphore_.wait(); }
  MSCCLPP_HOST_DEVICE_INLINE bool poll() { return semaphore_.poll(); }

 private:
  // The FIFO's deadline bounded the wait: a timeout names the setting that gave it.
  MSCCLPP_HOST_DEVICE_INLINE void check(SpinStatus st, const char* what) const {
    if (st != SpinStatus::Ok) failSpin(st, what, fifo_.timeoutSource);
  }
};
static_assert(std::is_trivially_copyable<PortChannelDeviceHandle>::value, "device handles are copied as bytes");

using ProxyChannelDeviceHandle = PortChannelDeviceHandle;

}  // namespace mscclpp

#endif  // MSCCLPP_PORT_CHANNEL_DEVICE_HPP_
