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
#include <string>
#include <vector>

#include "core/net/secret.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::bootstrap {

class RootListener {
 public:
  struct State;
  // Takes a bound, listening socket. deadlineName names where
  // timeoutSeconds comes from in messages: "MSCCLPP_INIT_TIMEOUT_S".
  static std::unique_ptr<RootListener> start(net::Socket listener, const net::Secret& secret, double timeoutSeconds,
                                             std::string deadlineName);
  ~RootListener();  // stops and joins unless detached
  void detach();
  void stop();

 private:
  RootListener() = default;
  std::shared_ptr<State> state_;
};

// "3, 5-7" for the ranks in [0, n) that are false in `present`.
std::string formatMissingRanks(const std::vector<bool>& present);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_ROOT_HPP_
