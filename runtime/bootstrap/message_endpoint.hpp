// What every bootstrap provides under the collectives: keyed, ordered,
// size-bounded messages between the ranks of one world, with deadlines.
// Both endpoints (TCP, in-process) keep their state in the two pieces
// here: the Mailbox of received messages and the PeerFailures record.
// Views and collectives (group_ops.hpp) are built on a MessageEndpoint.
#ifndef MSCCLPP_BOOTSTRAP_MESSAGE_ENDPOINT_HPP_
#define MSCCLPP_BOOTSTRAP_MESSAGE_ENDPOINT_HPP_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/deadline.hpp"

namespace mscclpp::detail {

// Internal message classes: user messages never
// match a collective's, whatever the tag.
enum MessageKind : uint32_t {
  kKindUser = 0,
  kKindAllGather = 1,
  kKindBroadcast = 2,
  kKindBarrier = 3,
  // Served by the endpoint itself, never queued for
  // recv(): liveness (TCP only), and requests that
  // a handler answers on the peer's helper thread.
  kKindHeartbeat = 4,      // "I am alive"; no payload
  kKindGoodbye = 5,        // "I leave on purpose": the close that follows is no failure; tag: how (GoodbyeWhy)
  kKindFailureNotice = 6,  // tag: a world rank that failed; payload: why
  kKindRequest = 7,        // handed to the receiver's handler for the namespace
  kKindReply = 8,          // the handler's answer: queued like a message, matched by (ns, tag)
  kKindLeaveNotice = 9,    // tag: a world rank that left; payload: why. Passed on along the ring
  kKindMax = 9,
};

// How a rank left, in its goodbye's tag.
enum GoodbyeWhy : int32_t {
  kGoodbyeDestroyed = 1,  // its bootstrap was destroyed: the communicator destroyed or finalized
  kGoodbyeExited = 2,     // its process exited with the bootstrap still alive
};

struct MessageKey {
  uint64_t ns;  // namespace of the view (0: the world's own)
  uint32_t kind;
  int32_t tag;
  bool operator<(const MessageKey& o) const {
    if (ns != o.ns) return ns < o.ns;
    if (kind != o.kind) return kind < o.kind;
    return tag < o.tag;
  }
};

// Cancels the calls of one view and its descendants,
// leaving the shared connections alone: so abort()
// on a split or named view stays local to it.
struct CancelToken {
  explicit CancelToken(std::shared_ptr<const CancelToken> parentToken) : parent(std::move(parentToken)) {}
  std::atomic<bool> cancelled{false};
  std::shared_ptr<const CancelToken> parent;
  bool isCancelled() const {
    for (const CancelToken* t = this; t; t = t->parent.get())
      if (t->cancelled.load(std::memory_order_acquire)) return true;
    return false;
  }
};

// Answers a kKindRequest from world rank `from` on the
// endpoint's helper thread: it must be quick and never block
// on peers. The returned bytes travel back as a kKindReply.
using RequestHandler = std::function<std::vector<char>(int from, const std::vector<char>& request)>;

// What one rank knows about failed and departed peers (world ranks), and
// who to tell. A peer failed when its process died (its connections closed
// without a goodbye) or its host stopped answering its heartbeats. A peer
// left when it said goodbye: it destroyed its bootstrap or exited. Each
// is reported once; a listener added later hears the earlier ones at
// once, so nothing is missed before a communicator subscribes.
// Thread-safety: any thread. Listeners run on the
// reporting thread, outside the lock: they must
// return quickly and must not call the bootstrap.
class PeerFailures {
 public:
  // left: the peer left on purpose rather than failed.
  using Listener = std::function<void(int worldRank, const std::string& reason, bool left)>;

  explicit PeerFailures(int nRanks) : reasons_(static_cast<size_t>(nRanks)), left_(static_cast<size_t>(nRanks)) {}

  // Records that worldRank failed, or left. The first
  // time only, it tells every listener and returns true.
  bool report(int worldRank, const std::string& reason, bool left = false);
  // True once the peer failed or left: nothing more comes from it.
  bool failed(int worldRank) const;
  bool left(int worldRank) const;
  std::string reason(int worldRank) const;

  // Returns an id for remove(); the listener hears
  // about earlier failures before this returns.
  uint64_t add(Listener listener);
  // Waits for the listener's calls on other threads, so that its owner
  // may go once this returns. Otherwise a listener that kept its owner
  // alive could destroy it, bootstrap and all, on the reporting thread.
  void remove(uint64_t id);

 private:
  // Calls listener `id` on this thread unless it was
  // removed meanwhile; the call counts in running_.
  void call(uint64_t id, const std::shared_ptr<const Listener>& listener, int worldRank, const std::string& reason,
            bool left);

  mutable std::mutex mutex_;
  std::vector<std::string> reasons_;  // "" while the rank is fine
  std::vector<bool> left_;
  std::map<uint64_t, std::shared_ptr<const Listener>> listeners_;
  std::multiset<std::pair<uint64_t, std::thread::id>> running_;  // listener calls in progress, and their threads
  std::condition_variable callEnded_;
  uint64_t nextId_ = 1;
};

// Received messages waiting for recv(): one queue per (sender, key),
// plus which senders are gone and whether the endpoint was aborted.
// The TCP progress thread or the in-process sending thread fills it.
// Thread-safety: any thread; take() waits until the caller's deadline.
class Mailbox {
 public:
  explicit Mailbox(int nRanks);

  void deliver(int from, const MessageKey& key, std::vector<char> payload);
  // Messages already delivered from `from` can still
  // be taken; waits for more fail with `reason`.
  void markPeerGone(int from, const std::string& reason);
  // Every current and future take() fails with Aborted and `reason`.
  void abort(const std::string& reason);
  bool aborted() const;

  // The next message from `from` with `key`. `what` names the
  // call for error messages ("rank 1: recv from rank 3 tag 7").
  // A message longer than maxBytes is consumed and reported.
  std::vector<char> take(int from, const MessageKey& key, size_t maxBytes, const Deadline& deadline,
                         const std::string& what, const CancelToken* token = nullptr);
  void wakeAll() {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a waiter between its check and its wait sees the change
    cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::pair<int, MessageKey>, std::deque<std::vector<char>>> queues_;
  std::vector<std::string> goneReason_;  // "" while the peer is fine
  std::string abortReason_;
  bool aborted_ = false;
};

// One rank's end of a world. Thread-safe: any thread
// may send or receive at any time; messages with the
// same (peer, key) are delivered in send order.
class MessageEndpoint {
 public:
  virtual ~MessageEndpoint() = default;
  virtual int rank() const = 0;
  virtual int nRanks() const = 0;
  // Ranks here are world ranks of this endpoint. `what` names the call
  // in error messages ("bootstrap rank 1/4: barrier: send to rank 2").
  virtual void send(int peer, const MessageKey& key, const void* data, size_t size, const Deadline& deadline,
                    const std::string& what) = 0;
  // A cancelled token (checked while waiting) makes recv throw Aborted.
  virtual std::vector<char> recv(int peer, const MessageKey& key, size_t maxBytes, const Deadline& deadline,
                                 const std::string& what, const CancelToken* token) = 0;
  // Aborts the whole endpoint: every view, every connection.
  virtual void abort() = 0;
  // Wakes every waiting recv so that it re-checks its token.
  virtual void wakeAll() = 0;
  // The peers this endpoint knows to have failed (world ranks), and who to tell.
  virtual PeerFailures& failures() = 0;
  // Installs the handler of requests sent to namespace
  // ns; an empty handler removes it. Requests to a
  // namespace without a handler get an empty reply.
  virtual void setRequestHandler(uint64_t ns, RequestHandler handler) = 0;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_BOOTSTRAP_MESSAGE_ENDPOINT_HPP_
