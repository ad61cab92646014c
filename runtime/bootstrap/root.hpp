// The rendezvous root: accepts one connection per rank, checks the secret, collects every rank's
// listening address and, once all nRanks arrived, sends the whole table to each of them. When the
// deadline passes first, every rank that did arrive receives an error naming the missing ranks.
// Connections with a wrong secret or garbage bytes are dropped and logged at WARN; they do not
// disturb the rendezvous.
//
// The deadline is MSCCLPP_TIMEOUT_S from the start, restarted when the first rank arrives.
// Ownership: the root runs on its own EventLoop thread, which shares its state; RootListener::start
// returns a handle that can stop and join it, or detach() it (createUniqueId does: the thread ends
// by itself).
#ifndef MSCCLPP_BOOTSTRAP_ROOT_HPP_
#define MSCCLPP_BOOTSTRAP_ROOT_HPP_

#include <memory>
#include <string>
#include <vector>

#include "core/net/socket.hpp"
#include "core/net/secret.hpp"

namespace mscclpp::bootstrap {

class RootListener {
 public:
  struct State;
  // Takes a bound, listening socket.
  static std::unique_ptr<RootListener> start(net::Socket listener, const net::Secret& secret,
                                             double timeoutSeconds);
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
