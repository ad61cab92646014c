// Semaphores, host side: they allocate the counters the device handles point to, register them
// for the peer to write, and exchange them. Construction is pairwise: both ranks of a connection
// build the same kind on it, in the same order. Each constructor sends, then waits for the peer,
// so build towards your peers in one consistent order, such as ascending rank. Counters live in
// shared host memory on the CPU backend and in device memory on a GPU.
// Ownership: shared; a semaphore keeps its counters, connection and the peer's counter alive.
// Thread-safety: construct on one thread; signal() a host semaphore from one thread at a time.
#ifndef MSCCLPP_SEMAPHORE_HPP_
#define MSCCLPP_SEMAPHORE_HPP_

#include <cstdint>
#include <memory>

#include "mscclpp/communicator.hpp"
#include "mscclpp/connection.hpp"
#include "mscclpp/export.h"
#include "mscclpp/semaphore_device.hpp"

namespace mscclpp {

namespace detail {
struct SemaphoreCounters;
}

// Port-channel semaphore: the peer's proxy raises our inbound counter over the connection after
// the writes it performed before the signal; our device side waits on it.
class MSCCLPP_API Host2DeviceSemaphore {
 public:
  using DeviceHandle = Host2DeviceSemaphoreDeviceHandle;

  Host2DeviceSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection);
  ~Host2DeviceSemaphore();

  std::shared_ptr<Connection> connection() const { return connection_; }
  // Raises the peer's inbound counter by one after every earlier write on the connection; the
  // proxy calls it for a signal trigger.
  void signal();
  DeviceHandle deviceHandle() const;

 private:
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<detail::SemaphoreCounters> counters_;
};

// A semaphore whose two sides are host code: tests, host-side protocols.
class MSCCLPP_API Host2HostSemaphore {
 public:
  Host2HostSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection);
  ~Host2HostSemaphore();

  std::shared_ptr<Connection> connection() const { return connection_; }
  void signal();
  // Consumes one signal if one arrived; acquire.
  bool poll();
  // Waits for the next signal; Timeout after timeoutSeconds, or, when negative, after
  // Communicator::timeoutSeconds(), which every semaphore's device handle carries too.
  void wait(double timeoutSeconds = -1);

 private:
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<detail::SemaphoreCounters> counters_;
};

// Memory-channel semaphore: each rank's device side increments the peer's inbound counter through
// a mapping, so the connection must be HostShm or CudaIpc.
class MSCCLPP_API MemoryDevice2DeviceSemaphore {
 public:
  using DeviceHandle = MemoryDevice2DeviceSemaphoreDeviceHandle;

  MemoryDevice2DeviceSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection);
  ~MemoryDevice2DeviceSemaphore();

  std::shared_ptr<Connection> connection() const { return connection_; }
  DeviceHandle deviceHandle() const;

 private:
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<detail::SemaphoreCounters> counters_;
};
using SmDevice2DeviceSemaphore = MemoryDevice2DeviceSemaphore;

}  // namespace mscclpp

#endif  // MSCCLPP_SEMAPHORE_HPP_
