// What every bootstrap implementation provides underneath the collectives: keyed, ordered,
// size-bounded messages between the ranks of one world, with deadlines. Views (split, namespaces)
// and the collectives (group_ops.hpp) are built on this, so TCP and in-process bootstraps share
// them.
#ifndef MSCCLPP_BOOTSTRAP_MESSAGE_ENDPOINT_HPP_
#define MSCCLPP_BOOTSTRAP_MESSAGE_ENDPOINT_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/peer_failures.hpp"
#include "core/deadline.hpp"

namespace mscclpp::detail {

// Internal message classes: user messages never match a collective's, whatever the tag.
enum MessageKind : uint32_t {
  kKindUser = 0,
  kKindAllGather = 1,
  kKindBroadcast = 2,
  kKindBarrier = 3,
  // Served by the endpoint itself, never queued for recv(): the liveness protocol (TCP only) and
  // requests answered by a handler (setRequestHandler) on the peer's helper thread.
  kKindHeartbeat = 4,      // "I am alive"; no payload
  kKindGoodbye = 5,        // "I leave on purpose" (destroy): the closing connection is not a failure
  kKindFailureNotice = 6,  // tag: a world rank that failed; payload: why
  kKindRequest = 7,        // handed to the receiver's handler for the namespace
  kKindReply = 8,          // the handler's answer: queued like a message, matched by (ns, tag)
  kKindMax = 8,
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

// Cancels the calls of one view (and of the views derived from it) without touching the shared
// connections: how abort() on a split or named view stays local to it.
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

// Answers a request (kind kKindRequest) from world rank `from`, on the endpoint's helper thread:
// must be quick and must not block on peers. The returned bytes travel back as a kKindReply.
using RequestHandler = std::function<std::vector<char>(int from, const std::vector<char>& request)>;

// One rank's end of a world. Thread-safe: any thread may send or receive at any time; messages with
// the same (peer, key) are delivered in send order.
class MessageEndpoint {
 public:
  virtual ~MessageEndpoint() = default;
  virtual int rank() const = 0;
  virtual int nRanks() const = 0;
  // Ranks here are world ranks of this endpoint. `what` names the call in error messages
  // ("bootstrap rank 1/4: barrier: send to rank 2").
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
  // Installs (or, with an empty handler, removes) the handler of requests sent to namespace ns.
  // Requests to a namespace without a handler get an empty reply.
  virtual void setRequestHandler(uint64_t ns, RequestHandler handler) = 0;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_BOOTSTRAP_MESSAGE_ENDPOINT_HPP_
