#include "bootstrap/liveness_rule.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>

namespace mscclpp::bootstrap {

NeighbourState classifyNeighbour(const NeighbourFacts& facts, double timeoutSeconds) {
  if (timeoutSeconds <= 0 || facts.silentSeconds <= timeoutSeconds) return NeighbourState::Alive;
  if (facts.unacknowledgedSeconds > timeoutSeconds) return NeighbourState::Unreachable;
  return NeighbourState::Stopped;
}

double unacknowledgedSeconds(int fd, int64_t nowMs, int64_t* emptySinceMs) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  // Segments in flight, not yet acknowledged. Bytes held back by a full
  // receive window (a stopped process reads nothing) are not in flight:
  // its kernel answers the window probes, so its host is there.
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || info.tcpi_unacked == 0) {
    *emptySinceMs = nowMs;
    return 0;
  }
  // The last ACK may be old news on a link that was idle before this
  // send; the time nothing was in flight bounds it.
  const int64_t sinceAckMs = std::min<int64_t>(nowMs - *emptySinceMs, info.tcpi_last_ack_recv);
  return std::max<int64_t>(0, sinceAckMs) / 1000.0;
}

}  // namespace mscclpp::bootstrap
