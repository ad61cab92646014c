// The host side of port channels: the FIFO of 128-bit triggers (fifo_device.hpp holds the
// protocol) and ProxyService, the thread that performs the requests.
//
// Fifo memory: on the CPU backend (device -1) the ring and both counters are host memory; with a
// CUDA device the ring and the tail are pinned host memory mapped into the device (cudaHostAlloc
// mapped) and the head lives in device memory, as seed 003 describes.
//
// ProxyService: one thread per service. Register memories (addMemory -> MemoryId, at most 512) and
// semaphores (addSemaphore / buildAndAddSemaphore -> SemaphoreId, the trigger's channel id, at most
// 1024), build PortChannels from them, start the proxy, push triggers from the device side. For each
// trigger, in FIFO order: put -> connection->write(dst, src); signal -> semaphore->signal() (after
// the put of the same trigger and every earlier one: connections keep order); flush ->
// connection->flush(); then the slot is popped, which advances the tail the device's flush/sync
// waits on. A failing trigger (unknown id, transport error, peer gone) is recorded with its place
// (trigger index, op, channel, peer, memories) and reported once to the error handler; the proxy
// then keeps popping triggers without performing them, so device code waiting on the FIFO does not
// hang (the error, not the data, is the result).
//
// Thread-safety: addMemory/addSemaphore may be called from any thread, also while the proxy runs
// (entries are published with release and never change); start/stop from one thread.
#ifndef MSCCLPP_PROXY_HPP_
#define MSCCLPP_PROXY_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mscclpp/communicator.hpp"
#include "mscclpp/export.h"
#include "mscclpp/fifo_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/semaphore.hpp"

namespace mscclpp {

constexpr int kDefaultFifoSize = 512;

class MSCCLPP_API Fifo {
 public:
  // Its handle's timeout (push()/sync() and the port channels on it) is MSCCLPP_TIMEOUT_S, read now.
  explicit Fifo(int size = kDefaultFifoSize, int device = kHostDevice);
  // The same with the timeout given: timeoutSeconds <= 0 for none, timeoutSetting the setting a timeout names as
  // Communicator::timeoutSetting() gives it ("MSCCLPP_TIMEOUT_S", "the communicator's timeout" or "").
  Fifo(int size, int device, double timeoutSeconds, const char* timeoutSetting);
  ~Fifo();
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;

  int size() const;
  // For producers (device code, CPU-backend block threads), with the FIFO's timeout.
  FifoDeviceHandle deviceHandle() const;
  // For the one consumer thread.
  FifoConsumer& consumer();

 private:
  struct MSCCLPP_INTERNAL Impl;
  std::unique_ptr<Impl> pimpl_;
};

using SemaphoreId = uint32_t;
// A custom request handler: performs one trigger; returns "" on success, else what went wrong.
using ProxyRequestHandler = std::function<std::string(const TriggerFields&)>;
class PortChannel;
class BasePortChannel;

class MSCCLPP_API ProxyService {
 public:
  // A FIFO of MSCCLPP_TIMEOUT_S (Fifo(fifoSize, device)).
  explicit ProxyService(int fifoSize = kDefaultFifoSize, int device = kHostDevice);
  // For the port channels of `communicator`: its device, and its timeout (timeoutSeconds(), read now) bounds the
  // FIFO's waits, so they end with the rest of the communicator's waits and name the same setting.
  explicit ProxyService(const Communicator& communicator, int fifoSize = kDefaultFifoSize);
  // A FIFO with the timeout given (see Fifo).
  ProxyService(int fifoSize, int device, double timeoutSeconds, const char* timeoutSetting);
  ~ProxyService();  // stops the proxy
  ProxyService(const ProxyService&) = delete;
  ProxyService& operator=(const ProxyService&) = delete;

  // Local memories (sources) and imported peer memories (destinations).
  MemoryId addMemory(RegisteredMemory memory);
  SemaphoreId addSemaphore(std::shared_ptr<Host2DeviceSemaphore> semaphore);
  // Builds a Host2DeviceSemaphore on the connection (pairwise with the peer) and adds it.
  SemaphoreId buildAndAddSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection);
  std::shared_ptr<Host2DeviceSemaphore> semaphore(SemaphoreId id) const;
  RegisteredMemory memory(MemoryId id) const;

  PortChannel portChannel(SemaphoreId id, MemoryId dst, MemoryId src);
  BasePortChannel basePortChannel(SemaphoreId id);
  FifoDeviceHandle fifoDeviceHandle() const;

  void startProxy();
  // Stops after the trigger in progress; triggers still queued stay unperformed. Idempotent.
  void stopProxy();
  bool running() const;

  // Called once, on the proxy thread, with the first failure (e.g. Communicator::setAsyncError).
  void setErrorHandler(std::function<void(const Error&)> handler);
  // Replaces the built-in dispatch (memory/semaphore tables) with `handler` for every trigger, for
  // owners with their own tables (the executor). Failures are reported like built-in ones.
  void setRequestHandler(ProxyRequestHandler handler);
  // *flag is set to 1 (release, system scope) at the first failure, so device-side waits that pass
  // it as their abort flag stop at once instead of at their deadline. It must outlive the proxy
  // thread (host memory on the CPU backend, mapped host memory on a GPU). Set before startProxy.
  void setFailureFlag(uint32_t* flag);
  bool failed() const;
  // "" when nothing failed.
  std::string errorMessage() const;
  // Triggers popped so far (performed or, after a failure, skipped).
  uint64_t triggersHandled() const;

 private:
  struct MSCCLPP_INTERNAL Impl;
  std::unique_ptr<Impl> pimpl_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_PROXY_HPP_
