#include "bootstrap/liveness_rule.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
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
  int queued = 0;  // bytes sent and not acknowledged, or not sent yet
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || ::ioctl(fd, SIOCOUTQ, &queued) != 0 || queued <= 0) {
    *emptySinceMs = nowMs;
    return 0;
  }
  // Waiting on its host: segments in flight, or probes unanswered twice
  // (bytes that could not even be sent, our own link or route gone). Bytes
  // held back by a full receive window, a stopped process reading nothing,
  // are not: its kernel answers each window probe.
  if (info.tcpi_unacked == 0 && info.tcpi_probes < 2) return 0;
  // The last ACK may be old news on a link that was idle before this
  // send; the time the queue was last empty bounds it.
  const int64_t sinceAckMs = std::min<int64_t>(nowMs - *emptySinceMs, info.tcpi_last_ack_recv);
  return std::max<int64_t>(0, sinceAckMs) / 1000.0;
}

}  // namespace mscclpp::bootstrap
