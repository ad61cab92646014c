// The state behind Communicator (see mscclpp/communicator.hpp). Shared with the channel layer,
// which allocates semaphore counters through it.
#ifndef MSCCLPP_COMM_COMMUNICATOR_IMPL_HPP_
#define MSCCLPP_COMM_COMMUNICATOR_IMPL_HPP_

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "comm/counter_pool.hpp"
#include "comm/ordered_receiver.hpp"
#include "core/deadline.hpp"
#include "core/visibility.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/registration.hpp"
#include "transport/transport.hpp"

namespace mscclpp {

struct MSCCLPP_INTERNAL Communicator::Impl {
  std::shared_ptr<Bootstrap> userBootstrap;       // what the user gave (split() splits it)
  std::shared_ptr<Bootstrap> bootstrap;           // our own namespace of it: never mixes with user tags
  std::shared_ptr<Bootstrap> semaphoreBootstrap;  // semaphore exchanges (channel layer)
  int rank = 0;
  int size = 0;
  int device = kHostDevice;
  std::string hostId;
  uint64_t hostHash = 0;
  std::vector<std::string> hostIds;
  std::vector<int> localRanks;
  int localRank = 0;
  double timeoutSeconds = 0;

  std::mutex mutex;  // guards everything below
  // Each transport's state in this communicator (the TCP engine, opened HCAs), made on first use.
  std::array<std::shared_ptr<transport::Session>, static_cast<size_t>(Transport::NumTransports)> sessions;
  // By (address, size, transports, CUDA allocation id): a buffer freed and allocated again at the same
  // address is a new registration (its old IPC handle and memory registrations name the old memory).
  std::map<std::tuple<uintptr_t, size_t, uint32_t, uint64_t>, std::weak_ptr<RegisteredMemoryAccess::Impl>>
      registrations;
  std::map<std::pair<int, int>, std::shared_ptr<comm::OrderedReceiver>> receivers;
  uint64_t registrationCount = 0;  // new registrations made (tests: cache hits make none)
  std::shared_ptr<comm::CounterPool> counterPool;
  std::map<const Connection*, int> connectionTags;  // the tag each connection was made with

  std::atomic<bool> aborted{false};
  mutable std::mutex errorMutex;  // guards the async error, the failure and the flags below
  bool hasError = false;
  ErrorCode errorCode = ErrorCode::InternalError;
  std::string errorMessage;
  std::atomic<bool> hasFailed{false};  // set (release) after failureCode/failureMessage
  ErrorCode failureCode = ErrorCode::InternalError;
  std::string failureMessage;
  std::map<uint64_t, std::shared_ptr<const std::function<void()>>> failureCallbacks;
  // Held while fail() runs the callbacks: dropping a registration waits for it, so a callback never
  // runs after its handle is gone (a flag's memory may go with it).
  std::mutex callbackMutex;
  uint64_t nextFailureCallback = 1;
  uint64_t peerFailureListener = 0;        // the bootstrap's listener id
  std::vector<std::string> peerHostIds;    // hostIds for peerFailed() (guarded by errorMutex; empty until exchanged)
  std::atomic<uint64_t> executorCount{0};  // executors made on it (each names its call monitor's view)

  // A peer the bootstrap found dead or unreachable: the communicator fails with RemoteError.
  void peerFailed(int peer, const std::string& reason);
  void fail(ErrorCode code, const std::string& message);

  // The session of transport t (t has a driver), opened on first use.
  std::shared_ptr<transport::Session> session(Transport t);
  std::shared_ptr<comm::OrderedReceiver> receiver(int peer, int tag);
  std::shared_ptr<comm::CounterPool> counters();
  // The tag `connection` was created with on this communicator (semaphores exchange on it).
  int tagOf(const Connection& connection);
  void checkPeer(int peer, const char* op) const;
  void checkAlive(const char* op) const;
  std::string who() const;  // "communicator rank 2/8"
};

// The communicator's timeout as the objects built on it keep it (its connections, the NVLS binding): the earlier of
// MSCCLPP_TIMEOUT_S and its own (Communicator::timeoutSeconds(), read now), with the setting that gave it.
TimeoutSetting timeoutOf(const Communicator& comm);

// The runtime's way into a Communicator, whose public header names no accessor.
class CommunicatorAccess {
 public:
  static Communicator::Impl& impl(const Communicator& c) { return *c.pimpl_; }
};

}  // namespace mscclpp

#endif  // MSCCLPP_COMM_COMMUNICATOR_IMPL_HPP_
