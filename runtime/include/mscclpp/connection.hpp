// One end of a connection between two ranks over one transport: one-sided writes into the peer's
// registered memory, updates of a 64-bit counter there (the signal of semaphores), and flush.
// Created by Communicator::connect (both ranks call it).
//
// Semantics shared by every transport:
// - write() and updateAndSync() are performed in the order they are called on this connection: an
//   update issued after a write becomes visible to the peer after the written bytes (release
//   ordering), which is what a signal after a put relies on.
// - They may return before the peer's memory changed (asynchronous transports: TCP, CUDA IPC, IB);
//   flush() returns once every earlier operation on this connection completed at the peer, or
//   throws. Errors of asynchronous operations (the peer rejected a write, the peer went away)
//   surface at the next call or at flush.
// - Every error names the ranks, the transport and the operation; every wait has a deadline
//   (flush's timeout, or MSCCLPP_TIMEOUT_S).
//
// Thread-safety: one thread at a time per connection (the proxy thread, or the caller); the
// transport's own helper threads are internal. Ownership: shared (std::shared_ptr); a connection
// keeps what it needs (sockets, streams, the communicator's engines) alive.
#ifndef MSCCLPP_CONNECTION_HPP_
#define MSCCLPP_CONNECTION_HPP_

#include <cstdint>
#include <string>

#include "mscclpp/export.h"
#include "mscclpp/memory.hpp"

namespace mscclpp {

class MSCCLPP_API Connection {
 public:
  virtual ~Connection() = default;

  // Copies size bytes from src (local) at srcOffset to dst (the peer's, imported) at dstOffset.
  virtual void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
                     uint64_t size) = 0;
  // Sets *src = newValue and stores newValue into the peer's 64-bit word at dst + dstOffset, after
  // every earlier write of this connection (release). src must stay valid until flush().
  virtual void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) = 0;
  // Waits until every earlier operation completed at the peer. timeoutUsec < 0: MSCCLPP_TIMEOUT_S.
  virtual void flush(int64_t timeoutUsec = -1) = 0;

  virtual Transport transport() const = 0;
  virtual Transport remoteTransport() const = 0;

  int localRank() const { return localRank_; }
  int remoteRank() const { return remoteRank_; }
  // "rank 0 -> rank 1 over TCP": the prefix of this connection's error messages.
  std::string describe() const;
  // "TCP -> TCP" (MSCCL++'s getTransportName).
  std::string getTransportName() const;

 protected:
  Connection(int localRank, int remoteRank) : localRank_(localRank), remoteRank_(remoteRank) {}
  // Checks offsets and sizes against both registrations; throws InvalidArgument naming them.
  void checkWrite(const RegisteredMemory& dst, uint64_t dstOffset, const RegisteredMemory& src, uint64_t srcOffset,
                  uint64_t size) const;
  void checkUpdate(const RegisteredMemory& dst, uint64_t dstOffset) const;

 private:
  int localRank_;
  int remoteRank_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_CONNECTION_HPP_
