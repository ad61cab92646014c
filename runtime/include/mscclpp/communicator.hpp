// The communicator: a group of ranks over a Bootstrap, with host identity (who shares this host),
// the device, memory registration and connections.
//
// Construction is collective (every rank of the bootstrap constructs one): the ranks exchange
// their host identities (host name + /proc/sys/kernel/random/boot_id, or MSCCLPP_HOSTID), which
// gives localRank / nRanksPerNode / isSameHost.
//
// Setup pattern (as MSCCL++; futures let every rank post all its sends before waiting, so the
// order in which ranks set up their peers cannot deadlock):
//   auto conn = comm.connect(peer, tag, Transport::Tcp);      // sends our endpoint now
//   comm.sendMemory(mem, peer, tag);
//   auto remote = comm.recvMemory(peer, tag);
//   conn.get(); remote.get();                                // receives, in posting order
// connect/sendMemory/recvMemory with the same (peer, tag) are matched in call order on both
// sides; get() on a later future first completes the earlier ones of that (peer, tag).
//
// Thread-safety: rank/size/identity queries, registerMemory, asyncError and abort may be called
// from any thread. Setup calls (connect, send/recvMemory, split) use the bootstrap: concurrent setup
// from several threads must use different tags (split must not run concurrently with itself).
// Ownership: shared; connections and registered memories keep what they need alive, so they may
// outlive the communicator object.
#ifndef MSCCLPP_COMMUNICATOR_HPP_
#define MSCCLPP_COMMUNICATOR_HPP_

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mscclpp/bootstrap.hpp"
#include "mscclpp/connection.hpp"
#include "mscclpp/errors.hpp"
#include "mscclpp/export.h"
#include "mscclpp/memory.hpp"

namespace mscclpp {

// Device selection for a communicator.
constexpr int kDeviceAuto = -2;  // the current CUDA device when one is visible and MSCCLPP_BACKEND != cpu
constexpr int kHostDevice = -1;  // no GPU: host memory, the CPU backend

class MSCCLPP_API Communicator {
 public:
  explicit Communicator(std::shared_ptr<Bootstrap> bootstrap, int device = kDeviceAuto);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  std::shared_ptr<Bootstrap> bootstrap() const;
  int rank() const;
  int size() const;
  // The deadline in seconds of waits on live peers, 0 for none (the default: a late peer is waited for): the
  // earlier of MSCCLPP_TIMEOUT_S, read at each call, and the timeout its bootstrap had when this communicator was
  // made (TcpBootstrap::initialize(id, timeoutSec), Bootstrap::setTimeout, Python CommGroup(timeout=...)). The
  // executor's collectives on this communicator wait that long at most (docs/failure-handling.md).
  double timeoutSeconds() const;
  // The setting timeoutSeconds() comes from, for messages: "MSCCLPP_TIMEOUT_S", "the communicator's timeout", or
  // "" when there is no deadline (a string with static storage).
  const char* timeoutSetting() const;
  // Position among the ranks of this host (in rank order) and how many share the host.
  int localRank() const;
  int nRanksPerNode() const;
  const std::string& hostId() const;
  const std::string& hostIdOf(int rank) const;
  bool isSameHost(int peer) const;
  // The ranks on this host (this one included), in rank order.
  const std::vector<int>& localRanks() const;
  // CUDA device ordinal, or kHostDevice (-1).
  int device() const;

  // Collective over all ranks (ncclCommSplit): same color -> one new communicator, ranks ordered by
  // key then by rank here; color < 0 returns nullptr. The new bootstrap reuses this one's
  // connections (tag namespaces, no new sockets). Same device.
  std::shared_ptr<Communicator> split(int color, int key);

  // Registers [ptr, ptr+size) for the given transports. Repeated registration of the same buffer
  // with the same transports returns the same registration while one is alive (no new IB memory
  // region, shm lookup, TCP key or IPC handle). HostShm needs memory from allocSharedHost; CudaIpc
  // needs CUDA device memory; TCP and IB accept host memory (and device memory with a GPU).
  RegisteredMemory registerMemory(void* ptr, size_t size, TransportFlags transports);

  void sendMemory(const RegisteredMemory& memory, int remoteRank, int tag);
  std::shared_future<RegisteredMemory> recvMemory(int remoteRank, int tag);

  // Starts a connection to remoteRank over transport; remoteRank calls connect(rank(), tag, same
  // transport) too. HostShm and CudaIpc need the peer on this host; TCP works anywhere; IB needs a
  // device. A mismatch (other transport, other host) fails get() with an error naming both sides.
  std::shared_future<std::shared_ptr<Connection>> connect(int remoteRank, int tag, Transport transport);

  // Records an error that happened outside a call (proxy thread, transport threads): the first one
  // is kept. Cheap and thread-safe, for ncclCommGetAsyncError-style polling.
  void setAsyncError(ErrorCode code, const std::string& message);
  // True (and the first error) when one was recorded.
  bool asyncError(ErrorCode* code, std::string* message) const;

  // Failure of the communicator as a whole (docs/failure-handling.md): a peer
  // died or its host became unreachable (RemoteError naming the rank and its host; the bootstrap
  // finds it), or the ranks' calls cannot complete (mismatched calls: InvalidUsage; a deadlock with
  // every rank alive: InternalError). The first failure is kept; it is also the async error. Every
  // later call on the communicator should fail with it (the executor's do). Any thread.
  void fail(ErrorCode code, const std::string& message);
  // One atomic load when the communicator is fine.
  bool failed(ErrorCode* code = nullptr, std::string* message = nullptr) const;
  // For an error a call met talking to its peers: throws the communicator's failure (with the error as detail)
  // when it failed. A dead peer is often met first by the channel that touched it (a connection reset, its
  // memory's /proc entry gone) a moment before the bootstrap names it (milliseconds for a closed connection), so
  // for errors that can be such a symptom (system, remote, timeout, aborted) it waits up to a second for that.
  // Returns otherwise: the caller rethrows its own error.
  void throwIfFailedAfter(const Error& error) const;
  // Raises *flag (a release store of 1) when the communicator fails, or at once if it has: waits
  // that poll the flag as their abort flag (executor contexts, device code) stop. The registration
  // lasts as long as the returned handle; *flag must outlive it.
  std::shared_ptr<void> raiseOnFailure(uint32_t* flag);
  // The same for a callback (e.g. aborting a bootstrap view whose exchanges must stop): called once,
  // on the thread that failed the communicator (or here, if it has failed); it must return quickly.
  std::shared_ptr<void> onFailure(std::function<void()> callback);

  // Returns promptly whatever the peers do: aborts the bootstrap (blocked calls throw Aborted),
  // closes the transports' sockets and stops their threads. The communicator is unusable after.
  void abort();
  bool aborted() const;

  // Internal (runtime/comm/communicator_impl.hpp): the runtime's own layers reach the state here.
  struct MSCCLPP_INTERNAL Impl;
  Impl& impl() const { return *pimpl_; }

 private:
  void exchangeHostIds();  // the constructor's allGather of host ids (localRanks, localRank)
  std::shared_ptr<Impl> pimpl_;
};

// The one-call form of "communicator from a unique id" (ncclCommInitRank's shape): joins the job
// described by `id` as `rank` of `nRanks` over a TcpBootstrap (see bootstrap.hpp: the id comes
// from TcpBootstrap::createUniqueId() on one rank and is passed to all), then builds the
// communicator on it. Collective: every rank calls it. timeoutSec <= 0: MSCCLPP_TIMEOUT_S.
// Equivalent to: auto b = std::make_shared<TcpBootstrap>(rank, nRanks); b->initialize(id, timeoutSec);
// std::make_shared<Communicator>(b, device). Use the Communicator constructor directly to build one
// from an existing bootstrap (InProcessBootstrap, a split, your own Bootstrap implementation).
inline std::shared_ptr<Communicator> createCommunicator(const UniqueId& id, int rank, int nRanks,
                                                        int device = kDeviceAuto, double timeoutSec = 0) {
  auto bootstrap = std::make_shared<TcpBootstrap>(rank, nRanks);
  bootstrap->initialize(id, timeoutSec);
  return std::make_shared<Communicator>(std::move(bootstrap), device);
}

}  // namespace mscclpp

#endif  // MSCCLPP_COMMUNICATOR_HPP_
