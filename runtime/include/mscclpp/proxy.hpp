// The host side of port channels: the FIFO of 128-bit triggers (fifo_device.hpp) and
// ProxyService, one thread that performs the requests. Register memories (at most 512) and
// semaphores (at most 1024), build PortChannels from them and start the proxy. For each trigger,
// in FIFO order, it writes, signals after those writes, or flushes over the connection, then pops
// the slot, which advances the tail the device's flush waits on. A failing trigger is reported
// once, naming its place; later triggers are popped unperformed, so device code never hangs.
// Fifo memory is host memory on the CPU backend; on a GPU the ring and tail are mapped pinned host
// memory and the head device memory. Thread-safety: addMemory and addSemaphore from any thread,
// also while the proxy runs, since entries are published with release; start and stop from one.
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
  // Its handle's timeout, for push(), sync() and the port channels on it, is MSCCLPP_TIMEOUT_S now.
  explicit Fifo(int size = kDefaultFifoSize, int device = kHostDevice);
  // The same with the timeout given: 0 or less for none. timeoutSetting is what a timeout names,
  // as Communicator::timeoutSetting() gives it.
  Fifo(int size, int device, double timeoutSeconds, const char* timeoutSetting);
  ~Fifo();
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;

  int size() const;
  // For producers, device code or CPU-backend block threads, with the FIFO's timeout.
  FifoDeviceHandle deviceHandle() const;
  // For the one consumer thread.
  FifoConsumer& consumer();

 private:
  struct Impl;
  std::unique_ptr<Impl> pimpl_;
};

using SemaphoreId = uint32_t;
// A custom request handler: performs one trigger; returns "" on success, else what went wrong.
using ProxyRequestHandler = std::function<std::string(const TriggerFields&)>;
class PortChannel;
class BasePortChannel;

class MSCCLPP_API ProxyService {
 public:
  // A FIFO with MSCCLPP_TIMEOUT_S as its timeout.
  explicit ProxyService(int fifoSize = kDefaultFifoSize, int device = kHostDevice);
  // For the port channels of `communicator`: its device, and its timeout, read now, bounds the
  // FIFO's waits, so they end with the communicator's other waits and name the same setting.
  explicit ProxyService(const Communicator& communicator, int fifoSize = kDefaultFifoSize);
  // A FIFO with the timeout given, as Fifo's.
  ProxyService(int fifoSize, int device, double timeoutSeconds, const char* timeoutSetting);
  ~ProxyService();  // stops the proxy
  ProxyService(const ProxyService&) = delete;
  ProxyService& operator=(const ProxyService&) = delete;

  // Local memories, the sources, and imported peer memories, the destinations.
  MemoryId addMemory(RegisteredMemory memory);
  SemaphoreId addSemaphore(std::shared_ptr<Host2DeviceSemaphore> semaphore);
  // Builds a Host2DeviceSemaphore on the connection, pairwise with the peer, and adds it.
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

  // Called once, on the proxy thread, with the first failure: wire Communicator::setAsyncError.
  void setErrorHandler(std::function<void(const Error&)> handler);
  // Replaces the built-in memory and semaphore tables with `handler` for every trigger, for
  // owners with tables of their own such as the executor. Failures are reported alike.
  void setRequestHandler(ProxyRequestHandler handler);
  // Stores 1 to *flag, release at system scope, at the first failure, so device waits that pass
  // it as their abort flag stop at once instead of at their deadline. Host memory, mapped on a
  // GPU, that outlives the proxy thread. Set before startProxy.
  void setFailureFlag(uint32_t* flag);
  bool failed() const;
  // "" when nothing failed.
  std::string errorMessage() const;
  // Triggers popped so far, performed or, after a failure, skipped.
  uint64_t triggersHandled() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> pimpl_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_PROXY_HPP_
