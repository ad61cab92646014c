// Channels, host side: they own or share what a channel needs and make the trivially copyable
// device handles of the *_channel_device.hpp headers.
// Ownership: a channel keeps its semaphore and memories alive; a device handle is a view, valid
// while the channel or a copy of it lives. Thread-safety: immutable once built.
#ifndef MSCCLPP_CHANNEL_HPP_
#define MSCCLPP_CHANNEL_HPP_

#include <memory>
#include <vector>

#include "mscclpp/communicator.hpp"
#include "mscclpp/export.h"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/proxy.hpp"
#include "mscclpp/semaphore.hpp"
#include "mscclpp/switch_channel_device.hpp"

namespace mscclpp {

// Direct access to one peer's memory: MSCCL++'s SmChannel.
class MSCCLPP_API MemoryChannel {
 public:
  using DeviceHandle = MemoryChannelDeviceHandle;

  MemoryChannel() = default;
  // dst: the peer's memory, imported and mapped here; src: our buffer; packetBuffer: where the
  // peer's putPackets land in our memory, or nullptr.
  MemoryChannel(std::shared_ptr<MemoryDevice2DeviceSemaphore> semaphore, RegisteredMemory dst, void* src,
                void* packetBuffer = nullptr);

  DeviceHandle deviceHandle() const;
  const RegisteredMemory& dst() const { return dst_; }

 private:
  std::shared_ptr<MemoryDevice2DeviceSemaphore> semaphore_;
  RegisteredMemory dst_;
  void* src_ = nullptr;
  void* packetBuffer_ = nullptr;
};
using SmChannel = MemoryChannel;

// A port channel without default memories: every put names its memory ids.
class MSCCLPP_API BasePortChannel {
 public:
  using DeviceHandle = PortChannelDeviceHandle;

  BasePortChannel() = default;
  BasePortChannel(SemaphoreId id, std::shared_ptr<Host2DeviceSemaphore> semaphore, FifoDeviceHandle fifo);
  PortChannelDeviceHandle deviceHandle() const;

 protected:
  SemaphoreId id_ = 0;
  std::shared_ptr<Host2DeviceSemaphore> semaphore_;
  FifoDeviceHandle fifo_{};
};

// Requests to the proxy, with default destination and source memories: MSCCL++'s ProxyChannel.
class MSCCLPP_API PortChannel : public BasePortChannel {
 public:
  using DeviceHandle = PortChannelDeviceHandle;

  PortChannel() = default;
  PortChannel(SemaphoreId id, std::shared_ptr<Host2DeviceSemaphore> semaphore, FifoDeviceHandle fifo, MemoryId dst,
              MemoryId src);
  DeviceHandle deviceHandle() const;

 private:
  MemoryId dst_ = 0;
  MemoryId src_ = 0;
};
using ProxyChannel = PortChannel;

// One buffer per member of a group, bound together: NVLS on sm_90 GPUs, the members' buffers
// elsewhere. create() is collective over `ranks`: every member passes the same list, size and tag.
class MSCCLPP_API SwitchChannel {
 public:
  using DeviceHandle = SwitchChannelDeviceHandle;

  SwitchChannel() = default;
  // buffer: ours, bytes long; from allocSharedHost on the CPU backend, device memory on a GPU.
  static SwitchChannel create(Communicator& communicator, const std::vector<int>& ranks, void* buffer, size_t bytes,
                              int tag);

  DeviceHandle deviceHandle() const;
  // Whether the handle carries an NVLS multicast address, or only the members' buffers.
  bool hasMulticast() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// MSCCL++'s spelling of a channel's or semaphore's device handle type:
// `DeviceHandle<ProxyChannel>` is PortChannelDeviceHandle, `DeviceHandle<SmChannel>` is
// MemoryChannelDeviceHandle.
template <class T>
using DeviceHandle = typename T::DeviceHandle;

// t.deviceHandle(), for generic host code that fills arrays of handles.
template <class T>
DeviceHandle<T> deviceHandle(const T& t) {
  return t.deviceHandle();
}

}  // namespace mscclpp

#endif  // MSCCLPP_CHANNEL_HPP_
