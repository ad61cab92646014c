// Bootstrap: how ranks find each other and exchange small control messages (addresses, memory
// handles, endpoint descriptions) before and beside the data path.
//
// `Bootstrap` is the interface (MSCCL++'s name and roles). `TcpBootstrap` is the production
// implementation: a TCP rendezvous from a 128-byte UniqueId, then direct rank-to-rank sockets.
// `InProcessBootstrap` serves ranks that are threads of one process (tests, the CPU backend)
// without sockets.
//
// Semantics shared by every implementation:
// - Messages are tagged. send(peer, tag) / recv(peer, tag) match by (sender, tag) and keep the
//   order of sends with the same (sender, tag). Messages with different tags never mix, so several
//   users of one bootstrap (the communicator, the executor, a split) can talk at the same time by
//   using different tags or, better, different namespaces (withNamespace, split).
// - allGather, broadcast, barrier and split are collective: every rank of the bootstrap calls them
//   in the same order. They use internal tags, so they never consume user messages.
// - Every blocking call is bounded by a deadline (MSCCLPP_TIMEOUT_S unless setTimeout was called)
//   and throws mscclpp::Error naming the operation and the peer: Timeout when the deadline passed,
//   RemoteError when the peer went away (connection closed) before sending what was awaited,
//   Aborted after abort(). Every receive is bounded in size.
//
// Thread-safety: all methods may be called concurrently from several threads (e.g. two threads
// receiving with different tags). Collectives on one bootstrap object must not run concurrently
// with each other (they share internal tags); use withNamespace() to get an independent view.
// Ownership: bootstraps are shared (std::shared_ptr); views created by split/withNamespace keep
// the underlying connections alive.
#ifndef MSCCLPP_BOOTSTRAP_HPP_
#define MSCCLPP_BOOTSTRAP_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mscclpp/export.h"

namespace mscclpp {

#define MSCCLPP_UNIQUE_ID_BYTES 128

// 128 opaque bytes: magic, version, the root's address and a 128-bit random secret (see
// docs/runtime.md for the layout). Pass it by value to every rank (like ncclUniqueId).
using UniqueId = std::array<uint8_t, MSCCLPP_UNIQUE_ID_BYTES>;

class MSCCLPP_API Bootstrap : public std::enable_shared_from_this<Bootstrap> {
 public:
  virtual ~Bootstrap() = default;

  virtual int getRank() const = 0;
  virtual int getNranks() const = 0;

  // Sends `size` bytes to `peer` with `tag`. Returns when the bytes are handed to the transport
  // (the peer may not have received them yet). A message may be sent to oneself.
  virtual void send(const void* data, size_t size, int peer, int tag) = 0;
  // Receives the next message from `peer` with `tag`; fails (InvalidArgument, naming peer, tag and
  // both sizes) when it is longer than maxBytes.
  virtual std::vector<char> recv(int peer, int tag, size_t maxBytes) = 0;
  // Receives exactly `size` bytes; a message of any other length is an error naming both sizes.
  void recv(void* data, size_t size, int peer, int tag);
  void send(const std::vector<char>& data, int peer, int tag) { send(data.data(), data.size(), peer, tag); }

  // allData holds getNranks() slots of `size` bytes; this rank's slot (rank * size) is sent and the
  // others are filled.
  virtual void allGather(void* allData, size_t size) = 0;
  // The root's `size` bytes at data are copied into data on every rank.
  virtual void broadcast(void* data, size_t size, int root) = 0;
  virtual void barrier() = 0;

  // Collective over all ranks of this bootstrap (like ncclCommSplit): ranks with the same color form
  // a new bootstrap, ordered by key then by rank here. A negative color returns nullptr (the rank
  // still takes part in the exchange). The new bootstrap reuses this one's connections with its own
  // tag namespace: no new sockets. Requires this bootstrap to be owned by a std::shared_ptr.
  virtual std::shared_ptr<Bootstrap> split(int color, int key) = 0;
  // A view with the same ranks whose messages (user tags and collectives) never mix with this
  // one's or with views of other names. Local (no communication); every rank must use the same name.
  virtual std::shared_ptr<Bootstrap> withNamespace(const std::string& name) = 0;

  // Wakes every blocked call (they throw Aborted) without waiting for peers. On a bootstrap made by
  // TcpBootstrap/InProcessBootstrap it also closes the connections and stops helper threads, which
  // ends every view derived from it; on a view (split, withNamespace) it ends that view and the
  // views derived from it, leaving the shared connections to the others. Idempotent.
  virtual void abort() = 0;

  // The deadline, in seconds, applied to each blocking call (<= 0: no deadline). Default:
  // MSCCLPP_TIMEOUT_S read when the bootstrap was created.
  virtual double timeoutSeconds() const = 0;
  virtual void setTimeout(double seconds) = 0;
};

// TCP rendezvous. Typical use (like ncclGetUniqueId / ncclCommInitRank):
//   rank 0:      UniqueId id = TcpBootstrap::createUniqueId();   // starts the root listener
//   everyone:    auto b = std::make_shared<TcpBootstrap>(rank, nRanks); b->initialize(id);
// createUniqueId() binds the root listener on the interface chosen by MSCCLPP_SOCKET_IFNAME (or
// the address of MSCCLPP_COMM_ID, in which case rank 0's initialize() runs the root instead) and
// starts a thread that lives until all ranks have arrived or the deadline passed. Connections
// that do not present the id's secret are dropped and logged at WARN without disturbing the job.
class MSCCLPP_API TcpBootstrap : public Bootstrap {
 public:
  static UniqueId createUniqueId();

  TcpBootstrap(int rank, int nRanks);
  ~TcpBootstrap() override;
  TcpBootstrap(const TcpBootstrap&) = delete;
  TcpBootstrap& operator=(const TcpBootstrap&) = delete;

  // Joins the job described by the id. Fails within the deadline (timeoutSec, or MSCCLPP_TIMEOUT_S
  // when <= 0) with an error naming the missing ranks when some never arrive.
  void initialize(const UniqueId& uniqueId, double timeoutSec = 0);
  // Joins the job whose root listens at "host:port" ("[v6addr]:port" for IPv6); rank 0 runs the
  // root there. The secret is derived from the address, so use this only on trusted networks.
  void initialize(const std::string& hostPort, double timeoutSec = 0);
  // The id this bootstrap was initialized with.
  UniqueId getUniqueId() const;

  int getRank() const override;
  int getNranks() const override;
  void send(const void* data, size_t size, int peer, int tag) override;
  std::vector<char> recv(int peer, int tag, size_t maxBytes) override;
  using Bootstrap::recv;
  using Bootstrap::send;
  void allGather(void* allData, size_t size) override;
  void broadcast(void* data, size_t size, int root) override;
  void barrier() override;
  std::shared_ptr<Bootstrap> split(int color, int key) override;
  std::shared_ptr<Bootstrap> withNamespace(const std::string& name) override;
  void abort() override;
  double timeoutSeconds() const override;
  void setTimeout(double seconds) override;

  // "host:port" of this rank's listener ("" before initialize): diagnostics and tests.
  std::string listenAddress() const;

 private:
  struct MSCCLPP_INTERNAL Impl;
  std::unique_ptr<Impl> pimpl_;
};

// Ranks as threads of one process, exchanging through in-memory mailboxes. Create one group and
// one bootstrap per rank: `auto g = InProcessBootstrap::createGroup(n); bootstrap(r) =
// std::make_shared<InProcessBootstrap>(g, r)`. Same semantics and deadlines as TcpBootstrap.
class MSCCLPP_API InProcessBootstrap : public Bootstrap {
 public:
  struct Group;
  static std::shared_ptr<Group> createGroup(int nRanks);

  InProcessBootstrap(std::shared_ptr<Group> group, int rank);
  ~InProcessBootstrap() override;

  int getRank() const override;
  int getNranks() const override;
  void send(const void* data, size_t size, int peer, int tag) override;
  std::vector<char> recv(int peer, int tag, size_t maxBytes) override;
  using Bootstrap::recv;
  using Bootstrap::send;
  void allGather(void* allData, size_t size) override;
  void broadcast(void* data, size_t size, int root) override;
  void barrier() override;
  std::shared_ptr<Bootstrap> split(int color, int key) override;
  std::shared_ptr<Bootstrap> withNamespace(const std::string& name) override;
  // Marks this rank as gone: peers waiting on it fail with RemoteError (a crash stand-in for tests).
  void abort() override;
  double timeoutSeconds() const override;
  void setTimeout(double seconds) override;

 private:
  struct MSCCLPP_INTERNAL Impl;
  std::unique_ptr<Impl> pimpl_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_BOOTSTRAP_HPP_
