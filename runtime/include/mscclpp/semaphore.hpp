// Semaphores, host side: they allocate the counters the device handles (semaphore_device.hpp)
// point to, register them so the peer can write them, and exchange them with the peer.
//
// Construction is pairwise: both ranks of a connection construct the same kind of semaphore on it,
// in the same order (the exchange is matched in order per peer and per connection tag). Each
// constructor sends its registration, then waits for the peer's: construct semaphores to your peers
// in one consistent order (e.g. ascending peer rank) so no cycle of waits forms.
//
// Counter memory: on the CPU backend (communicator device -1) counters live in shared host memory
// (allocSharedHost), which every transport can reach; with a CUDA device they live in device memory
// (CUDA IPC for memory channels; the proxy's transports for port channels).
//
// Ownership: shared; a semaphore keeps its counters, its connection and its peer's imported counter
// alive. Thread-safety: construction on one thread; signal() of a Host2Device/Host2Host semaphore on
// one thread at a time (the proxy thread); the device handles are for the device side.
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

// Port-channel semaphore: the peer's proxy raises our inbound counter (over the connection) after
// the writes it performed for the peer before the signal; our device side waits on it.
class MSCCLPP_API Host2DeviceSemaphore {
 public:
  using DeviceHandle = Host2DeviceSemaphoreDeviceHandle;

  Host2DeviceSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection);
  ~Host2DeviceSemaphore();

  std::shared_ptr<Connection> connection() const { return connection_; }
  // Raises the peer's inbound counter by one after every earlier write on the connection (the
  // proxy calls this for a signal trigger).
  void signal();
  DeviceHandle deviceHandle() const;

 private:
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<detail::SemaphoreCounters> counters_;
};

// A semaphore whose both sides are host code (tests, host-side protocols).
class MSCCLPP_API Host2HostSemaphore {
 public:
  Host2HostSemaphore(Communicator& communicator, std::shared_ptr<Connection> connection);
  ~Host2HostSemaphore();

  std::shared_ptr<Connection> connection() const { return connection_; }
  void signal();
  // Consumes one signal if one arrived (acquire).
  bool poll();
  // Waits for the next signal; Timeout after timeoutSeconds (< 0: the communicator's timeout, see
  // Communicator::timeoutSeconds; device handles of every semaphore carry the same).
  void wait(double timeoutSeconds = -1);

 private:
  std::shared_ptr<Connection> connection_;
  std::shared_ptr<detail::SemaphoreCounters> counters_;
};

// Memory-channel semaphore: the device side of each rank increments the peer's inbound counter
// directly through a mapping (shared memory or CUDA IPC), so the connection must be HostShm or
// CudaIpc.
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
