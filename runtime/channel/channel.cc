// The host side of channels: each constructor checks its
// arguments, and deviceHandle() fills the trivially copyable
// handle that device code uses. A SwitchChannel maps every
// member's buffer here, through shared memory on the CPU backend
// or CUDA IPC on a GPU, plus NVLS multicast where supported.
#include <algorithm>
#include <set>

#include "channel/nvls_binding.hpp"
#include "comm/communicator_impl.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/visibility.hpp"
#include "mscclpp/channel.hpp"
#include "mscclpp_config.h"
#include "transport/device_memory.hpp"

#if MSCCLPP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mscclpp {

// ---- MemoryChannel and port channels ------------------------------------------------------------

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

// ---- SwitchChannel -------------------------------------------------------------------------------

struct MSCCLPP_INTERNAL SwitchChannel::State {
  std::vector<RegisteredMemory> members;   // ours and the imports: keeps the mappings alive
  std::vector<void*> memberPtrs;           // host array, for the CPU backend
  std::shared_ptr<void> deviceMemberPtrs;  // device copy of memberPtrs, on a GPU
  std::shared_ptr<detail::NvlsBinding> multicast;
  void* buffer = nullptr;
  size_t bytes = 0;
  uint32_t myIndex = 0;
};

SwitchChannel SwitchChannel::create(Communicator& communicator, const std::vector<int>& ranks, void* buffer,
                                    size_t bytes, int tag) {
  auto& m = CommunicatorAccess::impl(communicator);
  const std::string who = strFormat("SwitchChannel rank %d/%d (tag %d)", m.rank, m.size, tag);
  MSCCLPP_ENFORCE(buffer != nullptr && bytes > 0, ErrorCode::InvalidArgument, "%s: null buffer or zero size",
                  who.c_str());
  std::set<int> seen;
  int myIndex = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    m.checkPeer(ranks[i], "SwitchChannel::create");
    MSCCLPP_ENFORCE(seen.insert(ranks[i]).second, ErrorCode::InvalidArgument, "%s: rank %d is listed twice",
                    who.c_str(), ranks[i]);
    if (ranks[i] == m.rank) myIndex = static_cast<int>(i);
  }
  MSCCLPP_ENFORCE(myIndex >= 0, ErrorCode::InvalidArgument, "%s: this rank is not in the group", who.c_str());
  for (int r : ranks) {
    MSCCLPP_ENFORCE(communicator.isSameHost(r), ErrorCode::InvalidArgument,
                    "%s: rank %d is on host '%s': a switch channel binds buffers of one host ('%s')", who.c_str(), r,
                    m.hostIds[r].c_str(), m.hostId.c_str());
  }
  const bool gpu = m.device >= 0;
  auto state = std::make_shared<State>();
  state->buffer = buffer;
  state->bytes = bytes;
  state->myIndex = static_cast<uint32_t>(myIndex);
  RegisteredMemory mine = communicator.registerMemory(buffer, bytes, gpu ? Transport::CudaIpc : Transport::HostShm);
  auto exchange = m.bootstrap->withNamespace("mscclpp.switch");
  std::vector<char> bytesOut = mine.serialize();
  for (int r : ranks)
    if (r != m.rank) exchange->send(bytesOut, r, tag);
  for (int r : ranks) {
    if (r == m.rank) {
      state->members.push_back(mine);
      continue;
    }
    RegisteredMemory theirs = RegisteredMemory::deserialize(exchange->recv(r, tag, 64 << 10));
    MSCCLPP_ENFORCE(theirs.size() == bytes, ErrorCode::InvalidArgument,
                    "%s: rank %d bound %zu bytes, this rank %zu: every member binds the same size", who.c_str(), r,
                    theirs.size(), bytes);
    state->members.push_back(theirs);
  }
  for (const auto& mem : state->members) state->memberPtrs.push_back(mem.data());
  if (gpu) {
#if MSCCLPP_HAVE_CUDA
    void* d = nullptr;
    size_t arrayBytes = state->memberPtrs.size() * sizeof(void*);
    cudaError_t e = cudaMalloc(&d, arrayBytes);
    MSCCLPP_ENFORCE(e == cudaSuccess, ErrorCode::CudaError, "%s: member pointer array: %s", who.c_str(),
                    cudaGetErrorString(e));
    state->deviceMemberPtrs = std::shared_ptr<void>(d, [](void* q) { cudaFree(q); });
    // Landed before this returns: kernels on any stream may read it.
    transport::copyHostToDevice(d, state->memberPtrs.data(), arrayBytes, (who + ": member pointer array").c_str());
#endif
    state->multicast = detail::NvlsBinding::tryCreate(communicator, ranks, myIndex, bytes, tag, buffer);
  }
  MSCCLPP_INFO(LogInit, "%s: %zu members, %zu bytes, %s", who.c_str(), ranks.size(), bytes,
               state->multicast ? "NVLS multicast" : "member buffers (no multicast)");
  SwitchChannel channel;
  channel.state_ = std::move(state);
  return channel;
}

SwitchChannel::DeviceHandle SwitchChannel::deviceHandle() const {
  MSCCLPP_ENFORCE(state_ != nullptr, ErrorCode::InvalidUsage, "SwitchChannel::deviceHandle: empty channel");
  DeviceHandle h{};
  h.devicePtr = state_->buffer;
  h.mcPtr = state_->multicast ? state_->multicast->multicastPointer() : nullptr;
  h.bufferSize = state_->bytes;
  h.memberPtrs =
      state_->deviceMemberPtrs ? static_cast<void* const*>(state_->deviceMemberPtrs.get()) : state_->memberPtrs.data();
  h.nMembers = static_cast<uint32_t>(state_->memberPtrs.size());
  h.myIndex = state_->myIndex;
  return h;
}

bool SwitchChannel::hasMulticast() const { return state_ && state_->multicast != nullptr; }

}  // namespace mscclpp
