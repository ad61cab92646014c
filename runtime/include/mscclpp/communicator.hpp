// The communicator: ranks over a Bootstrap, with host identity, the device, memory registration and
// connections. Construction is collective. Setup calls return futures, so every rank can post all
// its sends before it waits, and the order in which ranks set up their peers cannot deadlock:
//   auto conn = comm.connect(peer, tag, Transport::Tcp);   comm.sendMemory(mem, peer, tag);
//   auto remote = comm.recvMemory(peer, tag);               conn.get(); remote.get();
// Calls with the same (peer, tag) match in call order on both sides, and get() on a later
// future completes the earlier ones first.
// Thread-safety: queries, registerMemory, asyncError and abort from any thread; concurrent setup
// must use different tags, and split must not overlap itself. Ownership: shared; connections and
// registered memories keep what they need, so they may outlive the communicator.
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
constexpr int kDeviceAuto = -2;  // the current CUDA device, unless none is visible or MSCCLPP_BACKEND=cpu
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
  // The deadline in seconds of waits on live peers; 0, the default, is none. The earlier of
  // MSCCLPP_TIMEOUT_S, read at each call, and the bootstrap's timeout when this communicator was
  // made. Collectives on this communicator wait that long at most (docs/failure-handling.md).
  double timeoutSeconds() const;
  // Where timeoutSeconds() comes from, for messages: "MSCCLPP_TIMEOUT_S", "the communicator's
  // timeout", or "" without a deadline. Static storage.
  const char* timeoutSetting() const;
  // Position among the ranks of this host, in rank order, and how many share the host.
  int localRank() const;
  int nRanksPerNode() const;
  const std::string& hostId() const;
  const std::string& hostIdOf(int rank) const;
  bool isSameHost(int peer) const;
  // The ranks on this host, this one included, in rank order.
  const std::vector<int>& localRanks() const;
  // CUDA device ordinal, or kHostDevice.
  int device() const;
  // IB0..IB7: the HCA port nearest this rank, as NCCL picks a GPU's NIC (PCIe distance to its
  // GPU; for a host rank, an HCA local to its CPUs), among the ports MSCCLPP_HCA_DEVICES selects;
  // local ranks that find several as near spread over them. Transport::Unknown when this host
  // has none or MSCCLPP_IB_DISABLE is set; `why`, when given, says why or how it was chosen.
  Transport nearestIbTransport(std::string* why = nullptr) const;

  // Collective, as ncclCommSplit: ranks of one color form a new communicator, ordered by key
  // then rank; a negative color returns nullptr. It reuses this one's connections and device.
  std::shared_ptr<Communicator> split(int color, int key);

  // Registers [ptr, ptr+size) for the transports. The same buffer and transports give the same
  // registration while one is alive. HostShm needs memory from allocSharedHost, CudaIpc device
  // memory; TCP and IB take host memory, and device memory with a GPU.
  RegisteredMemory registerMemory(void* ptr, size_t size, TransportFlags transports);

  void sendMemory(const RegisteredMemory& memory, int remoteRank, int tag);
  std::shared_future<RegisteredMemory> recvMemory(int remoteRank, int tag);

  // Starts a connection to remoteRank, which calls connect(rank(), tag, transport) too. HostShm
  // and CudaIpc need the peer on this host, IB a device; TCP works anywhere. A mismatch fails
  // get() with an error naming both sides; the two ends of an IB connection may use different
  // HCAs (IB0 here, IB3 there).
  std::shared_future<std::shared_ptr<Connection>> connect(int remoteRank, int tag, Transport transport);

  // Records an error that happened outside a call, on a proxy or transport thread; the first is
  // kept. Cheap and thread-safe, for polling as ncclCommGetAsyncError does.
  void setAsyncError(ErrorCode code, const std::string& message);
  // True, with the first error, when one was recorded.
  bool asyncError(ErrorCode* code, std::string* message) const;

  // Failure of the communicator as a whole (docs/failure-handling.md): a dead or unreachable
  // peer (RemoteError), mismatched calls (InvalidUsage) or a deadlock of live ranks
  // (InternalError). The first failure is kept and is also the async error; every later call
  // should fail with it, as the executor's do. Any thread.
  void fail(ErrorCode code, const std::string& message);
  // One atomic load when the communicator is fine.
  bool failed(ErrorCode* code = nullptr, std::string* message = nullptr) const;
  // Peers that left (destroyed or finalized their communicator, or exited) while this rank still
  // has it. No failure by itself: calls a departed peer completed still complete here, and a rank
  // idle while its peers tear down keeps no error. A call that needs a departed peer fails the
  // communicator with failForDeparture: RemoteError "rank R (host H) left: ...". One atomic load
  // when none left.
  bool departed() const;
  bool hasDeparted(int rank) const;
  std::vector<int> departedRanks() const;  // in the order they left
  void failForDeparture(int rank);
  // For an error a call met talking to peers: throws the communicator's failure, with the error
  // as detail, when it failed. A channel often meets a dead peer a moment before the bootstrap
  // names it, so for errors that can be that symptom it waits up to a second for the name.
  // Returns otherwise, and the caller rethrows its own error.
  void throwIfFailedAfter(const Error& error) const;
  // Stores 1 to *flag, with release, when the communicator fails, or at once if it has, so waits
  // that poll it as their abort flag stop. Lasts as long as the returned handle; *flag must
  // outlive it.
  std::shared_ptr<void> raiseOnFailure(uint32_t* flag);
  // The same for a callback, run once on the thread that failed the communicator, or here if it
  // has failed. It must return quickly.
  std::shared_ptr<void> onFailure(std::function<void()> callback);

  // Returns promptly whatever the peers do: aborts the bootstrap, so blocked calls throw Aborted,
  // and closes the transports. The communicator is unusable after.
  void abort();
  bool aborted() const;

 private:
  friend class CommunicatorAccess;  // the runtime's own layers (runtime/comm/communicator_impl.hpp)
  struct Impl;
  void exchangeHostIds();  // the constructor's allGather of host ids (localRanks, localRank)
  std::shared_ptr<Impl> pimpl_;
};

// A communicator from a unique id in one call, as ncclCommInitRank: joins the job of `id` as
// `rank` of `nRanks` over a TcpBootstrap, then builds the communicator. Collective. timeoutSec 0
// or less is MSCCLPP_TIMEOUT_S. The constructor builds one on any other Bootstrap.
inline std::shared_ptr<Communicator> createCommunicator(const UniqueId& id, int rank, int nRanks,
                                                        int device = kDeviceAuto, double timeoutSec = 0) {
  auto bootstrap = std::make_shared<TcpBootstrap>(rank, nRanks);
  bootstrap->initialize(id, timeoutSec);
  return std::make_shared<Communicator>(std::move(bootstrap), device);
}

}  // namespace mscclpp

#endif  // MSCCLPP_COMMUNICATOR_HPP_
