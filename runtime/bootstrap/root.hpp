// The rendezvous root: accepts one connection per rank, checks the secret, collects every rank's
// listening address and, once all nRanks arrived, sends the whole table to each of them. When the
// deadline passes first, every rank that did arrive receives an error naming the missing ranks.
// Connections with a wrong secret or garbage bytes are dropped and logged at WARN; they do not
// disturb the rendezvous.
//
// The deadline (MSCCLPP_INIT_TIMEOUT_S, or MSCCLPP_TIMEOUT_S when set) runs from the start and
// restarts, a little shorter, when the first rank arrives (a rank waits the whole timeout from its own
// start, so it hears the verdict before its own deadline passes).
// A rendezvous that cannot complete fails at once for everyone, never leaving a rank to wait for
// the deadline: a rank that arrived and then closed its connection, a connection that presented
// this job's secret and closed mid-hello (both: the rank died), a bogus hello with this job's
// secret (wrong nRanks, rank out of range or twice), and the root's own end before the table went
// out (its loop failed, or it was stopped). Every rank that arrived, or arrives in the next 30 s, is
// told why; connections mid-hello are closed. The process hosting the root (rank 0 with
// MSCCLPP_COMM_ID) is a rank like the others and is told the same way.
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
