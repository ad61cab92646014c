// The device handle of a memory channel, MSCCL++'s SmChannel: this side's threads read and write
// the peer's memory directly, through a GPU peer mapping or shared memory on the CPU backend.
// Filled by host code, then immutable and trivially copyable. Offsets are bytes; copy methods are
// cooperative: call them from numThreads threads with distinct threadId in [0, numThreads).
// put, get, read and write are plain accesses. To publish data written into the peer's memory,
// finish the copy in every thread with a block barrier, then signal(): its release pairs with the
// peer's acquire in wait(). Packets need no signal.
#ifndef MSCCLPP_MEMORY_CHANNEL_DEVICE_HPP_
#define MSCCLPP_MEMORY_CHANNEL_DEVICE_HPP_

#include <cstdint>
#include <type_traits>

#include "copy_device.hpp"
#include "packet_device.hpp"
#include "semaphore_device.hpp"

namespace mscclpp {

struct MemoryChannelDeviceHandle {
  MemoryDevice2DeviceSemaphoreDeviceHandle semaphore_;
  // The peer's registered buffer, mapped into our address space.
  void* dst_;
  // Our registered buffer: the origin of put, the destination of get.
  void* src_;
  // Our packet buffer, where the peer's putPackets land and our getPackets read; null when the
  // channel uses no packets.
  void* packetBuffer_;

  // ---- data ----
  template <class T>
  MSCCLPP_HOST_DEVICE_INLINE T read(uint64_t index) const {
    return static_cast<const T*>(dst_)[index];
  }
  template <class T>
  MSCCLPP_HOST_DEVICE_INLINE void write(uint64_t index, const T& v) const {
    static_cast<T*>(dst_)[index] = v;
  }

  // Local src_ + srcOffset -> remote dst_ + dstOffset.
  MSCCLPP_HOST_DEVICE_INLINE void put(uint64_t dstOffset, uint64_t srcOffset, uint64_t bytes, uint32_t threadId,
                                      uint32_t numThreads) const {
    copy(static_cast<char*>(dst_) + dstOffset, static_cast<const char*>(src_) + srcOffset, bytes, threadId, numThreads);
  }
  MSCCLPP_HOST_DEVICE_INLINE void put(uint64_t offset, uint64_t bytes, uint32_t threadId, uint32_t numThreads) const {
    put(offset, offset, bytes, threadId, numThreads);
  }

  // Remote dst_ + remoteOffset -> local src_ + localOffset.
  MSCCLPP_HOST_DEVICE_INLINE void get(uint64_t remoteOffset, uint64_t localOffset, uint64_t bytes, uint32_t threadId,
                                      uint32_t numThreads) const {
    copy(static_cast<char*>(src_) + localOffset, static_cast<const char*>(dst_) + remoteOffset, bytes, threadId,
         numThreads);
  }
  MSCCLPP_HOST_DEVICE_INLINE void get(uint64_t offset, uint64_t bytes, uint32_t threadId, uint32_t numThreads) const {
    get(offset, offset, bytes, threadId, numThreads);
  }

  // ---- packets ----
  // srcBytes of data at src_ + srcOffset -> packets at the peer's dst_ + dstOffset, an offset
  // into its packet area. Twice the data bytes are written.
  template <class Packet = LL16Packet>
  MSCCLPP_HOST_DEVICE_INLINE void putPackets(uint64_t dstOffset, uint64_t srcOffset, uint64_t srcBytes,
                                             uint32_t threadId, uint32_t numThreads, uint32_t flag) const {
    mscclpp::putPackets<Packet>(dst_, dstOffset, src_, srcOffset, srcBytes, threadId, numThreads, flag);
  }

  // Packets at our packetBuffer_ + packetOffset -> dstBytes of data at src_ + dstOffset.
  template <class Packet = LL16Packet>
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus getPackets(uint64_t packetOffset, uint64_t dstOffset, uint64_t dstBytes,
                                                   uint32_t threadId, uint32_t numThreads, uint32_t flag,
                                                   uint64_t deadlineNs, const uint32_t* abortFlag) const {
    return mscclpp::getPackets<Packet>(static_cast<char*>(src_) + dstOffset,
                                       static_cast<const char*>(packetBuffer_) + packetOffset, dstBytes, threadId,
                                       numThreads, flag, deadlineNs, abortFlag);
  }
  template <class Packet = LL16Packet>
  MSCCLPP_HOST_DEVICE_INLINE void getPackets(uint64_t packetOffset, uint64_t dstOffset, uint64_t dstBytes,
                                             uint32_t threadId, uint32_t numThreads, uint32_t flag) const {
    SpinStatus st = getPackets<Packet>(packetOffset, dstOffset, dstBytes, threadId, numThreads, flag,
                                       deadlineAfter(semaphore_.timeoutNs), nullptr);
    if (st != SpinStatus::Ok) failSpin(st, "MemoryChannel::getPackets: waiting for packet flags");
  }

  // ---- synchronisation, by one thread ----
  MSCCLPP_HOST_DEVICE_INLINE void signal() { semaphore_.signal(); }
  MSCCLPP_HOST_DEVICE_INLINE void relaxedSignal() { semaphore_.relaxedSignal(); }
  MSCCLPP_HOST_DEVICE_INLINE void wait() { semaphore_.wait(); }
  MSCCLPP_HOST_DEVICE_INLINE void relaxedWait() { semaphore_.relaxedWait(); }
  // The status variant: Ok, Timeout or Aborted, without throwing or trapping.
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus wait(uint64_t deadlineNs, const uint32_t* abortFlag) {
    return semaphore_.wait(deadlineNs, abortFlag);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus waitFor(uint64_t timeoutNs) {
    return semaphore_.wait(deadlineAfter(timeoutNs), nullptr);
  }
  MSCCLPP_HOST_DEVICE_INLINE SpinStatus relaxedWait(uint64_t deadlineNs, const uint32_t* abortFlag) {
    return semaphore_.relaxedWait(deadlineNs, abortFlag);
  }
  MSCCLPP_HOST_DEVICE_INLINE bool poll() { return semaphore_.poll(); }
};
static_assert(std::is_trivially_copyable<MemoryChannelDeviceHandle>::value, "device handles are copied as bytes");

using SmChannelDeviceHandle = MemoryChannelDeviceHandle;

}  // namespace mscclpp

#endif  // MSCCLPP_MEMORY_CHANNEL_DEVICE_HPP_
