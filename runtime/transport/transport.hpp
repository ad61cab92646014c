// The one interface every transport implements, and the
// only way the comm layer reaches them: a stateless Driver
// per kind, its Session per communicator, the ExportRecord
// of one registration and a PendingConnection. Shaped after
// NCCL's transport table and gloo's transport::Device.
// Errors: an Error in the transport's own words; the
// comm layer prefixes the call, as in "communicator
// rank 0/2: connect to rank 1 over TCP (tag 0): ...".
// Thread-safety: Drivers are immutable. A Session may serve
// several threads of one communicator and locks what it shares.
#ifndef MSCCLPP_TRANSPORT_TRANSPORT_HPP_
#define MSCCLPP_TRANSPORT_TRANSPORT_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "core/serial.hpp"
#include "mscclpp/connection.hpp"
#include "mscclpp/memory.hpp"

namespace mscclpp::transport {

// What one transport exported for one registration: a shared-memory
// segment, a CUDA IPC handle, a TCP key or an rkey. Each transport
// defines its own; RegisteredMemory::Impl holds one per transport.
class ExportRecord {
 public:
  virtual ~ExportRecord() = default;
  // Appends the record's wire form; Driver::readRecord reads it back.
  virtual void serialize(ByteWriter& w) const = 0;
};

// This rank as the transports see it.
struct RankInfo {
  int rank = 0;
  int device = -1;    // CUDA device, or -1 (host)
  int localRank = 0;  // among the ranks of its host
};

// Local memory being registered.
struct LocalMemory {
  void* ptr = nullptr;
  size_t size = 0;
  bool deviceMemory = false;
};

struct Exported {
  std::shared_ptr<const ExportRecord> record;
  std::shared_ptr<void> keepAlive;  // what must live as long as the registration (may be null)
};

// A registration arriving from `ownerRank`, as its importer sees it.
struct ImportContext {
  bool sameHost = false;
  bool sameProcess = false;
  uint64_t size = 0;
  uint64_t originalData = 0;  // the owner's address
  std::string what;           // "importing rank 2's 4096-byte memory": the prefix of errors
};

struct Imported {
  void* data = nullptr;
  std::shared_ptr<void> keepAlive;  // the mapping (may be null when nothing was mapped for it)
};

// The peer's half of a connection.
struct PeerEndpoint {
  int rank = -1;
  int device = -1;
  std::vector<char> payload;  // its PendingConnection::localEndpoint()
};

// A connection in two phases: localEndpoint() goes to the peer over the
// bootstrap, and complete() takes the peer's and returns the Connection.
class PendingConnection {
 public:
  virtual ~PendingConnection() = default;
  // What the peer needs to complete its side; may be empty.
  virtual std::vector<char> localEndpoint() const { return {}; }
  virtual std::shared_ptr<Connection> complete(const PeerEndpoint& peer) = 0;
};

// A driver's state in one communicator on one rank, such
// as the TCP engine or an opened HCA; made on first use.
// It exports local memory and starts connections.
class Session {
 public:
  virtual ~Session() = default;
  // Exports [ptr, +size) over this transport,
  // or throws when it cannot carry that memory.
  virtual Exported exportMemory(const LocalMemory& memory) = 0;
  // Phase 1 of a connection to remoteRank; both ranks call connect in the
  // same order. timeout is the communicator's, from timeoutOf in
  // comm/communicator_impl.hpp. It bounds the connection's own waits: its
  // handshake, then flush() without an argument, TCP sends and IB drains.
  virtual std::unique_ptr<PendingConnection> connect(int remoteRank, const TimeoutSetting& timeout) = 0;
  // Makes blocked and later calls fail promptly (the communicator was aborted).
  virtual void abort() {}
  // The communicator failed (a peer is gone): a connection waiting for a peer
  // to open its side ends at once; established connections go on.
  virtual void communicatorFailed() {}
};

// The code of one transport: stateless, one per kind. It reads its own
// export records off the wire and maps imported memory where it can.
class Driver {
 public:
  virtual ~Driver() = default;
  // Whether this driver carries `t`; IB0..IB7 share one driver.
  virtual bool serves(Transport t) const = 0;
  // Whether both ends of its connections must share
  // a host, as with shared memory and CUDA IPC.
  virtual bool sameHostOnly() const { return false; }
  // This rank's state for `t` in one communicator.
  virtual std::shared_ptr<Session> openSession(Transport t, const RankInfo& self) const = 0;
  // Reads what ExportRecord::serialize wrote. Its
  // errors name the field, as in "shm.offset".
  virtual std::shared_ptr<const ExportRecord> readRecord(Transport t, ByteReader& r) const = 0;
  // Maps the memory in this process when this transport can; false when
  // it cannot, as from another host. Throws when it should map and fails.
  virtual bool importMemory(const ExportRecord&, const ImportContext&, Imported*) const { return false; }
  // A peer process died: whatever it left that no live process
  // uses (a named shared memory segment) may go now, or soon.
  virtual void peerDied() const {}
  // A communicator that saw a peer die ends: the same, waited for.
  virtual void afterPeerDeath() const {}
  // The transport of this driver the rank should use, for drivers with a
  // choice among devices (IB: the HCA port nearest its GPU or CPUs);
  // Unknown, with the reason in *why, when it has none here. Never throws.
  virtual Transport nearest(const RankInfo&, std::string* why) const {
    *why = "this transport has no devices to choose among";
    return Transport::Unknown;
  }
};

// Every driver, in the order registrations list
// their records and importers try to map them.
const std::vector<const Driver*>& drivers();
// The driver carrying `t`, or null for Unknown
// and Nvls, which have no connections or exports.
const Driver* driverFor(Transport t);
// Every transport some driver carries, in driver
// order; IB0..IB7 in order within theirs.
const std::vector<Transport>& transportsInOrder();

}  // namespace mscclpp::transport

#endif  // MSCCLPP_TRANSPORT_TRANSPORT_HPP_
