// The rendezvous root: accepts one connection per rank,
// checks the secret, collects every rank's listening
// address and, once all arrived, sends each rank the whole
// table. Strangers and garbage are dropped with a WARN.
// A rendezvous that cannot complete fails at once for every
// rank, with the reason: ranks missing at the deadline, a
// rank that died, a bogus hello, the root's own end. The
// rules are in docs/failure-handling.md, "The rendezvous".
// Ownership: the root runs on its own EventLoop thread. start() returns
// a handle that stops and joins it, or detaches it to end by itself.
#ifndef MSCCLPP_BOOTSTRAP_ROOT_HPP_
#define MSCCLPP_BOOTSTRAP_ROOT_HPP_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/net/secret.hpp"
#include "core/net/sha256.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::bootstrap {

class RootListener {
 public:
  struct State;
  // Takes a bound, listening socket. With a key (MSCCLPP_COMM_SECRET)
  // ranks prove it instead of sending the secret. deadlineName names
  // where timeoutSeconds comes from in messages: "MSCCLPP_INIT_TIMEOUT_S".
  static std::unique_ptr<RootListener> start(net::Socket listener, const net::Secret& secret,
                                             const std::optional<net::Digest>& key, double timeoutSeconds,
                                             std::string deadlineName);
  ~RootListener();  // stops and joins unless detached
  void detach();
  void stop();
  // Ends the root, detached or not, at its next turn: as stop(),
  // but from any thread and without waiting. For an id no rank
  // will use. A root that already ended is left alone.
  static void release(const std::weak_ptr<State>& root);
  std::weak_ptr<State> state() const { return state_; }

 private:
  RootListener() = default;
  std::shared_ptr<State> state_;
};

// "3, 5-7" for the ranks in [0, n) that are false in `present`.
std::string formatMissingRanks(const std::vector<bool>& present);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_ROOT_HPP_
