// Bootstrap: how ranks find each other and exchange small control messages beside the data path.
// `Bootstrap` is MSCCL++'s interface; `TcpBootstrap` joins ranks through a TCP rendezvous from a
// UniqueId, and `InProcessBootstrap` serves ranks that are threads of one process.
// Messages are tagged and never mix across tags or views; collectives run in the same order on
// every rank; a wait on a live peer has no deadline unless one is set. docs/runtime.md has the
// rules in full. Thread-safety: any method from any thread, but collectives on one object must
// not overlap: take a view with withNamespace(). Ownership: shared; views keep the connections.
#ifndef MSCCLPP_BOOTSTRAP_HPP_
#define MSCCLPP_BOOTSTRAP_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mscclpp/export.h"

namespace mscclpp {

#define MSCCLPP_UNIQUE_ID_BYTES 128

// 128 opaque bytes: magic, version, the root's address and a random secret (docs/runtime.md).
// Pass it by value to every rank, as an ncclUniqueId.
using UniqueId = std::array<uint8_t, MSCCLPP_UNIQUE_ID_BYTES>;

class MSCCLPP_API Bootstrap : public std::enable_shared_from_this<Bootstrap> {
 public:
  virtual ~Bootstrap() = default;

  virtual int getRank() const = 0;
  virtual int getNranks() const = 0;

  // Sends `size` bytes to `peer` with `tag`. Returns once the transport has the bytes, perhaps
  // before the peer received them. A rank may send to itself.
  virtual void send(const void* data, size_t size, int peer, int tag) = 0;
  // Receives the next message from `peer` with `tag`. A message longer than maxBytes fails with
  // InvalidArgument naming peer, tag and both sizes.
  virtual std::vector<char> recv(int peer, int tag, size_t maxBytes) = 0;
  // Receives exactly `size` bytes; a message of any other length is an error naming both sizes.
  void recv(void* data, size_t size, int peer, int tag);
  void send(const std::vector<char>& data, int peer, int tag) { send(data.data(), data.size(), peer, tag); }

  // allData holds getNranks() slots of `size` bytes: this rank's slot is sent, the others filled.
  virtual void allGather(void* allData, size_t size) = 0;
  // The root's `size` bytes at data are copied into data on every rank.
  virtual void broadcast(void* data, size_t size, int root) = 0;
  virtual void barrier() = 0;

  // Collective, as ncclCommSplit: ranks with the same color form a new bootstrap, ordered by key
  // then by rank. A negative color returns nullptr, though the rank still takes part. The new
  // bootstrap reuses this one's connections under its own tags: no new sockets. This bootstrap
  // must be owned by a std::shared_ptr.
  virtual std::shared_ptr<Bootstrap> split(int color, int key) = 0;
  // A view with the same ranks whose messages never mix with this one's or other views'. No
  // communication; every rank must use the same name.
  virtual std::shared_ptr<Bootstrap> withNamespace(const std::string& name) = 0;

  // Wakes every blocked call, which throws Aborted, without waiting for peers. On the bootstrap
  // itself it also closes the connections and stops helper threads, ending every view of it; on
  // a view it ends that view and its own views only. Idempotent.
  virtual void abort() = 0;

  // The deadline in seconds of each blocking call; 0 or less is none. The default is
  // MSCCLPP_TIMEOUT_S when the bootstrap was made, itself 0: a live peer is waited for.
  virtual double timeoutSeconds() const = 0;
  virtual void setTimeout(double seconds) = 0;

  // Failed and departed peers: a rank whose connections closed without a goodbye, or whose
  // host stopped acknowledging its heartbeats for MSCCLPP_HEARTBEAT_TIMEOUT_S, failed; a rank that
  // said goodbye (destroyed its bootstrap, or exited with it alive) left. listener(rank, reason,
  // left) runs once per such rank, earlier ones included, on whichever thread learned of it: it
  // must return quickly and not call the bootstrap. Returns an id for removal. A bootstrap that
  // cannot tell returns 0.
  using PeerFailureListener = std::function<void(int rank, const std::string& reason, bool left)>;
  virtual uint64_t addPeerFailureListener(PeerFailureListener listener);
  virtual void removePeerFailureListener(uint64_t id);

  // Requests answered without the peer's application thread: the call monitor asks a stuck peer
  // what it is doing. serve(handler) answers requests to this view with handler(peer, request)
  // on a helper thread; it must not block, and an empty handler stops serving. ask() sends one
  // request and returns the answer, empty when the peer serves none, and fails as recv does.
  // The defaults throw Error(NotSupported).
  using RequestHandler = std::function<std::vector<char>(int peer, const std::vector<char>& request)>;
  virtual void serve(RequestHandler handler);
  virtual std::vector<char> ask(int peer, const std::vector<char>& request, double timeoutSeconds);
  // ask() of several peers at once: every request goes out before any answer is awaited. An
  // answer a peer cannot give is empty, with the reason in (*errors)[i]; it throws nothing else.
  virtual std::vector<std::vector<char>> askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                                 double timeoutSeconds, std::vector<std::string>* errors);
};

// TCP rendezvous, used as ncclGetUniqueId and ncclCommInitRank are:
//   rank 0:      UniqueId id = TcpBootstrap::createUniqueId();   // starts the root listener
//   everyone:    auto b = std::make_shared<TcpBootstrap>(rank, nRanks); b->initialize(id);
// The root listens on the interface MSCCLPP_SOCKET_IFNAME picks until every rank arrived; with
// MSCCLPP_COMM_ID, rank 0's initialize() runs it there instead. A connection without the id's
// secret is dropped with a WARN and does not disturb the job.
class MSCCLPP_API TcpBootstrap : public Bootstrap {
 public:
  static UniqueId createUniqueId();
  // Ends the root createUniqueId started in this process for id, if it still runs, at once
  // rather than at its timeout: for an id no rank will use, such as a one-rank communicator's.
  // Ranks that still connect to it fail. Any thread; does nothing for other ids.
  static void stopRoot(const UniqueId& id);

  TcpBootstrap(int rank, int nRanks);
  ~TcpBootstrap() override;
  TcpBootstrap(const TcpBootstrap&) = delete;
  TcpBootstrap& operator=(const TcpBootstrap&) = delete;

  // Joins the job the id describes. Ranks that never arrive fail it at the deadline, timeoutSec
  // or else MSCCLPP_TIMEOUT_S, with an error naming them.
  void initialize(const UniqueId& uniqueId, double timeoutSec = 0);
  // Joins the job whose root listens at "host:port" or "[v6addr]:port"; rank 0 runs the root.
  // The secret is derived from the address: for trusted networks only.
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
  uint64_t addPeerFailureListener(PeerFailureListener listener) override;
  void removePeerFailureListener(uint64_t id) override;
  void serve(RequestHandler handler) override;
  std::vector<char> ask(int peer, const std::vector<char>& request, double timeoutSeconds) override;
  std::vector<std::vector<char>> askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                         double timeoutSeconds, std::vector<std::string>* errors) override;

  // "host:port" of this rank's listener, "" before initialize.
  std::string listenAddress() const;
  // Leaves the job as destroying this bootstrap does: a goodbye to every peer, whose
  // communicators then fail their pending and later calls saying this rank left; then the
  // connections close. The object stays, and later calls fail. ncclCommFinalize uses it.
  void leave();

 private:
  struct Impl;
  std::unique_ptr<Impl> pimpl_;
};

// Ranks as threads of one process, exchanging through in-memory mailboxes, with TcpBootstrap's
// semantics and deadlines. One group, one bootstrap per rank:
//   auto g = InProcessBootstrap::createGroup(n);  auto b = std::make_shared<InProcessBootstrap>(g, r);
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
  // Marks this rank as failed for its peers, a crash for tests: their waits on it fail with
  // RemoteError and their listeners are told. Destroying it is a goodbye, not a failure.
  void abort() override;
  double timeoutSeconds() const override;
  void setTimeout(double seconds) override;
  uint64_t addPeerFailureListener(PeerFailureListener listener) override;
  void removePeerFailureListener(uint64_t id) override;
  void serve(RequestHandler handler) override;
  std::vector<char> ask(int peer, const std::vector<char>& request, double timeoutSeconds) override;
  std::vector<std::vector<char>> askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                         double timeoutSeconds, std::vector<std::string>* errors) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> pimpl_;
};

}  // namespace mscclpp

#endif  // MSCCLPP_BOOTSTRAP_HPP_
