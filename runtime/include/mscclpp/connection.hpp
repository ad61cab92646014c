// One end of a connection between two ranks over one transport, made by Communicator::connect on
// both ranks: one-sided writes into the peer's registered memory, updates of a 64-bit word there
// (a semaphore's signal), and flush. Operations happen in call order, so an update after a write
// reaches the peer after the written bytes; that is what a signal after a put relies on. They may
// return early; flush() returns once every earlier one completed at the peer, and an asynchronous
// error surfaces at the next call or at flush. Errors name the ranks, transport and operation.
// Thread-safety: one thread at a time per connection. Ownership: shared; a connection keeps its
// sockets, streams and engines alive.
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

  // Copies size bytes from our src at srcOffset to the peer's imported dst at dstOffset.
  virtual void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
                     uint64_t size) = 0;
  // Sets *src = newValue and stores newValue into the peer's 64-bit word at dst + dstOffset,
  // after every earlier write of this connection: release. src must stay valid until flush().
  // Over IB, as in MSCCL++, an RDMA atomic adds newValue - *src to the word instead: the same
  // while this connection is its only writer (the word held the old *src).
  virtual void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) = 0;
  // Waits until every earlier operation completed at the peer; a negative timeout is
  // MSCCLPP_TIMEOUT_S.
  virtual void flush(int64_t timeoutUsec = -1) = 0;

  virtual Transport transport() const = 0;
  virtual Transport remoteTransport() const = 0;

  int localRank() const { return localRank_; }
  int remoteRank() const { return remoteRank_; }
  // "rank 0 -> rank 1 over TCP": the prefix of this connection's error messages.
  std::string describe() const;
  // "TCP -> TCP", MSCCL++'s getTransportName.
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
