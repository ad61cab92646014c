#include "core/enforce.hpp"
#include "mscclpp/channel.hpp"

namespace mscclpp {

MemoryChannel::MemoryChannel(std::shared_ptr<MemoryDevice2DeviceSemaphore> semaphore, RegisteredMemory dst, void* src,
                             void* packetBuffer)
    : semaphore_(std::move(semaphore)), dst_(std::move(dst)), src_(src), packetBuffer_(packetBuffer) {
  MSCCLPP_ENFORCE(semaphore_ != nullptr, ErrorCode::InvalidArgument, "MemoryChannel: null semaphore");
  MSCCLPP_ENFORCE(dst_.valid() && dst_.data() != nullptr, ErrorCode::InvalidArgument,
                  "MemoryChannel to rank %d: the destination memory is not mapped in this process (import it on this "
                  "host with SHM or IPC)",
                  dst_.rank());
}

MemoryChannel::DeviceHandle MemoryChannel::deviceHandle() const {
  MSCCLPP_ENFORCE(semaphore_ != nullptr, ErrorCode::InvalidUsage, "MemoryChannel::deviceHandle: empty channel");
  DeviceHandle h{};
  h.semaphore_ = semaphore_->deviceHandle();
  h.dst_ = dst_.data();
  h.src_ = src_;
  h.packetBuffer_ = packetBuffer_;
  return h;
}

BasePortChannel::BasePortChannel(SemaphoreId id, std::shared_ptr<Host2DeviceSemaphore> semaphore, FifoDeviceHandle fifo)
    : id_(id), semaphore_(std::move(semaphore)), fifo_(fifo) {
  MSCCLPP_ENFORCE(semaphore_ != nullptr, ErrorCode::InvalidArgument, "PortChannel: null semaphore");
  MSCCLPP_ENFORCE(id <= kTriggerMaxChannelId, ErrorCode::InvalidArgument,
                  "PortChannel: semaphore id %u does not fit the trigger's 10 bits", id);
}

PortChannelDeviceHandle BasePortChannel::deviceHandle() const {
  MSCCLPP_ENFORCE(semaphore_ != nullptr, ErrorCode::InvalidUsage, "PortChannel::deviceHandle: empty channel");
  PortChannelDeviceHandle h{};
  h.channelId_ = id_;
  h.semaphore_ = semaphore_->deviceHandle();
  h.fifo_ = fifo_;
  return h;
}

PortChannel::PortChannel(SemaphoreId id, std::shared_ptr<Host2DeviceSemaphore> semaphore, FifoDeviceHandle fifo,
                         MemoryId dst, MemoryId src)
    : BasePortChannel(id, std::move(semaphore), fifo), dst_(dst), src_(src) {
  MSCCLPP_ENFORCE(dst <= kTriggerMaxMemoryId && src <= kTriggerMaxMemoryId, ErrorCode::InvalidArgument,
                  "PortChannel: memory ids %u/%u do not fit the trigger's 9 bits", dst, src);
}

PortChannel::DeviceHandle PortChannel::deviceHandle() const {
  DeviceHandle h = BasePortChannel::deviceHandle();
  h.dst_ = dst_;
  h.src_ = src_;
  return h;
}

}  // namespace mscclpp
