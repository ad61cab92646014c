// The state behind Communicator, and the ordered receiver
// its setup calls use. The layers above reach it too: the
// channel layer allocates semaphore counters through it.
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
#include "core/deadline.hpp"
#include "core/visibility.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"
#include "transport/registration.hpp"
#include "transport/transport.hpp"

namespace mscclpp {

namespace comm {

// Receives one (peer, tag) stream in posting order for deferred
// consumers. post() takes a ticket when recvMemory or connect is
// called; take(ticket) receives every message up to it, keeping earlier
// ones for their tickets, so futures may be waited on in any order.
// Thread-safety: any thread; receiving is serialised per stream.
class OrderedReceiver {
 public:
  OrderedReceiver(std::shared_ptr<Bootstrap> bootstrap, int peer, int tag, size_t maxBytes)
      : bootstrap_(std::move(bootstrap)), peer_(peer), tag_(tag), maxBytes_(maxBytes) {}

  uint64_t post() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_++;
  }

  std::vector<char> take(uint64_t ticket) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (received_ <= ticket) {
      ready_[received_] = bootstrap_->recv(peer_, tag_, maxBytes_);
      ++received_;
    }
    std::vector<char> out = std::move(ready_[ticket]);
    ready_.erase(ticket);
    return out;
  }

 private:
  std::shared_ptr<Bootstrap> bootstrap_;
  int peer_;
  int tag_;
  size_t maxBytes_;
  std::mutex mutex_;
  uint64_t posted_ = 0;
  uint64_t received_ = 0;
  std::map<uint64_t, std::vector<char>> ready_;
};

}  // namespace comm

struct MSCCLPP_INTERNAL Communicator::Impl {
  std::shared_ptr<Bootstrap> userBootstrap;       // what the user gave; split() splits it
  std::shared_ptr<Bootstrap> bootstrap;           // our own namespace of it: never mixes with user tags
  std::shared_ptr<Bootstrap> semaphoreBootstrap;  // the channel layer's semaphore exchanges
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
  // Each transport's state in this communicator, such as
  // the TCP engine or an opened HCA; made on first use.
  std::array<std::shared_ptr<transport::Session>, static_cast<size_t>(Transport::NumTransports)> sessions;
  // By (address, size, transports, CUDA allocation id). A buffer freed
  // and allocated again at the same address is a new registration: its
  // old IPC handle and memory regions name the old memory.
  std::map<std::tuple<uintptr_t, size_t, uint32_t, uint64_t>, std::weak_ptr<RegisteredMemoryAccess::Impl>>
      registrations;
  std::map<std::pair<int, int>, std::shared_ptr<comm::OrderedReceiver>> receivers;
  uint64_t registrationCount = 0;  // new registrations made; tests check cache hits make none
  std::shared_ptr<comm::CounterPool> counterPool;
  std::map<const Connection*, int> connectionTags;  // the tag each connection was made with

  std::atomic<bool> aborted{false};
  mutable std::mutex errorMutex;  // guards the async error, the failure and the flags below
  bool hasError = false;
  ErrorCode errorCode = ErrorCode::InternalError;
  std::string errorMessage;
  std::atomic<bool> hasFailed{false};  // set with release after failureCode and failureMessage
  ErrorCode failureCode = ErrorCode::InternalError;
  std::string failureMessage;
  std::map<int, std::string> departures;  // peers that left: "rank 3 (host h) left: ..."
  std::vector<int> departureOrder;        // the same ranks, in the order they left
  std::atomic<bool> anyDeparture{false};  // set with release after an entry of departures
  std::atomic<bool> peerDied{false};      // a peer failed: what it left is swept at the end
  std::map<uint64_t, std::shared_ptr<const std::function<void()>>> failureCallbacks;
  // Held while fail() runs the callbacks: dropping a
  // registration waits for it, so a callback never runs after
  // its handle is gone; a flag's memory may go with the handle.
  std::mutex callbackMutex;
  uint64_t nextFailureCallback = 1;
  uint64_t peerFailureListener = 0;        // the bootstrap's listener id
  std::vector<std::string> peerHostIds;    // hostIds for peerFailed(), under errorMutex; empty until exchanged
  std::atomic<uint64_t> executorCount{0};  // executors made on it; each names its call monitor's view

  // A peer the bootstrap found dead or unreachable: the
  // communicator fails with RemoteError. One that left is
  // recorded in departures: it fails nothing by itself.
  void peerFailed(int peer, const std::string& reason, bool left);
  void fail(ErrorCode code, const std::string& message);

  // The session of transport t, which has a driver; opened on first use.
  std::shared_ptr<transport::Session> session(Transport t);
  std::shared_ptr<comm::OrderedReceiver> receiver(int peer, int tag);
  std::shared_ptr<comm::CounterPool> counters();
  // The tag `connection` was created with on this
  // communicator; semaphores exchange on it.
  int tagOf(const Connection& connection);
  void checkPeer(int peer, const char* op) const;
  void checkAlive(const char* op) const;
  std::string who() const;  // "communicator rank 2/8"
};

// The communicator's timeout as the objects built on it keep
// it, such as its connections and the NVLS binding: the earlier
// of MSCCLPP_TIMEOUT_S and Communicator::timeoutSeconds(), read
// now, with the setting that gave it.
TimeoutSetting timeoutOf(const Communicator& comm);

// The runtime's way into a Communicator, whose public header names no accessor.
class CommunicatorAccess {
 public:
  static Communicator::Impl& impl(const Communicator& c) { return *c.pimpl_; }
};

}  // namespace mscclpp

#endif  // MSCCLPP_COMM_COMMUNICATOR_IMPL_HPP_
