// How a rank judges a silent ring neighbour, from two signals: what its
// process sends (heartbeats, data) and what its host's kernel acknowledges
// of ours (TCP ACKs). A stopped process (SIGSTOP, a debugger, a dump)
// sends nothing but its kernel still acknowledges; an unreachable host
// does neither. docs/failure-handling.md, "Paused peers", has the rule.
#ifndef MSCCLPP_BOOTSTRAP_LIVENESS_RULE_HPP_
#define MSCCLPP_BOOTSTRAP_LIVENESS_RULE_HPP_

#include <cstdint>

namespace mscclpp::bootstrap {

enum class NeighbourState {
  Alive,        // heard from within the timeout
  Stopped,      // silent, but its host acknowledges: a live process, waited for
  Unreachable,  // silent, and its host acknowledged nothing: failed
};

struct NeighbourFacts {
  double silentSeconds = 0;          // since anything arrived from it
  double unacknowledgedSeconds = 0;  // since its host last acknowledged all we sent
};

// timeoutSeconds <= 0: never anything but Alive.
NeighbourState classifyNeighbour(const NeighbourFacts& facts, double timeoutSeconds);

// How long bytes we queued on `fd` have waited for the peer's kernel to
// acknowledge them: 0 when the queue is empty or held back by a full
// window the peer keeps answering, else the time since the last ACK.
// *emptySinceMs (steady ms) remembers when the queue was last empty,
// which bounds that time when ACKs are old news.
double unacknowledgedSeconds(int fd, int64_t nowMs, int64_t* emptySinceMs);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_LIVENESS_RULE_HPP_
