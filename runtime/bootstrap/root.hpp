// The rendezvous root: accepts one connection per rank, checks the secret, collects every rank's
// listening address and, once all nRanks arrived, sends the whole table to each of them. When the
// deadline passes first, every rank that did arrive receives an error naming the missing ranks.
// Connections with a wrong secret or garbage bytes are dropped and logged at WARN; they do not
// disturb the rendezvous.
//
// The deadline (MSCCLPP_INIT_TIMEOUT_S, or MSCCLPP_TIMEOUT_S when set) runs from the start and
// restarts when the first rank arrives. A rank that arrived and then closed its connection (it
// died) fails the rendezvous at once: every rank that arrived, or arrives in the next 30 s, is told.
// Ownership: the root runs on its own EventLoop thread, which shares its state; RootListener::start
// returns a handle that can stop and join it, or detach() it (createUniqueId does: the thread ends
// by itself).
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
  // Takes a bound, listening socket.
  // deadlineName: where timeoutSeconds comes from, for the messages ("MSCCLPP_INIT_TIMEOUT_S").
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
