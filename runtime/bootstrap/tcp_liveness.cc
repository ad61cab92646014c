// TcpEndpoint's liveness protocol: connections to the ring neighbours,
// heartbeats, the watch over outbound sockets, goodbyes, and what a
// failed or departed peer sets off. The rules are in
// docs/failure-handling.md.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "bootstrap/liveness_rule.hpp"
#include "bootstrap/tcp_endpoint.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"

namespace mscclpp::bootstrap {

namespace {

// The ring neighbours of rank in a world of n: one when n == 2, none when n == 1.
std::vector<int> ringNeighbours(int rank, int n) {
  std::vector<int> out;
  if (n < 2) return out;
  out.push_back((rank + 1) % n);
  const int prev = (rank - 1 + n) % n;
  if (prev != out[0]) out.push_back(prev);
  return out;
}

bool isWritableNow(int fd) {
  pollfd p{fd, POLLOUT, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLOUT) != 0;
}

std::string hostOf(const net::SocketAddress& a) {
  std::string s = a.toString();
  const size_t colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(0, colon);
}

}  // namespace

std::string TcpEndpoint::peerName(int peer) const {
  if (!peersKnown_.load(std::memory_order_acquire) || peer < 0 || peer >= nRanks_) return strFormat("rank %d", peer);
  return strFormat("rank %d at %s", peer, peers_[peer].toString().c_str());
}

std::string TcpEndpoint::inboundPeerName(const Inbound& in) const {
  if (peersKnown_.load(std::memory_order_acquire)) return peerName(in.fromRank);
  return strFormat("rank %d at %s (its connection's source)", in.fromRank, in.from.c_str());
}

void TcpEndpoint::startLiveness(const Deadline& deadline) {
  MSCCLPP_ENFORCE(peersKnown_.load(std::memory_order_acquire), ErrorCode::InternalError,
                  "%s: liveness needs the peer addresses", who_.c_str());
  heartbeatIntervalSeconds_ = std::max(0.01, params::heartbeatIntervalSeconds());
  heartbeatTimeoutSeconds_ = params::heartbeatTimeoutSeconds();
  // The neighbours' listeners were up before the rendezvous: a
  // connect fails only when the neighbour is already gone
  // (refused) or its host does not answer within the deadline.
  const double connectSeconds = heartbeatTimeoutSeconds_ > 0 ? heartbeatTimeoutSeconds_ : 60.0;
  const Deadline bounded(deadline.remainingMs() < 0 ? connectSeconds
                                                    : std::min(connectSeconds, deadline.remainingMs() / 1000.0));
  for (int q : ringNeighbours(rank_, nRanks_)) {
    Outbound& out = *outbound_[q];
    std::lock_guard<std::mutex> lock(out.mutex);
    if (out.socket.valid() || !out.brokenReason.empty()) continue;
    try {
      connectOutbound(q, out, bounded, who_ + ": connecting to ring neighbour " + std::to_string(q));
    } catch (const Error& e) {
      if (aborted_.load()) throw;
      out.brokenReason = e.what();
      peerFailed(q, strFormat("%s cannot be reached: %s", peerName(q).c_str(), e.what()), true);
    }
  }
  livenessStartMs_.store(steadyMs(), std::memory_order_release);
  progress_.wake();
  MSCCLPP_TRACE(LogBootstrap, "%s: heartbeats every %.3g s to the ring neighbours, unreachable after %.3g s",
                who_.c_str(), heartbeatIntervalSeconds_, heartbeatTimeoutSeconds_);
}

void TcpEndpoint::watchOutbound(net::Watches& watches) {
  for (int q = 0; q < nRanks_; ++q) {
    if (q == rank_ || watch_[q].outboundClosed) continue;
    const int fd = outbound_[q]->fd.load(std::memory_order_acquire);
    if (fd >= 0) watches.add(fd, [this, q]() { serviceOutbound(q); });
  }
}

void TcpEndpoint::serviceOutbound(int peer) {
  PeerWatch& w = watch_[peer];
  const int fd = outbound_[peer]->fd.load(std::memory_order_acquire);
  char* into = reinterpret_cast<char*>(&w.outboundBytes) + w.outboundGot;
  const ssize_t n = ::recv(fd, into, sizeof(FrameHeader) - w.outboundGot, MSG_DONTWAIT);
  if (n > 0) {
    w.lastHeardMs = steadyMs();
    w.outboundGot += static_cast<size_t>(n);
    if (w.outboundGot < sizeof(FrameHeader)) return;
    w.outboundGot = 0;
    if (w.outboundBytes.magic == kFrameMagic && w.outboundBytes.kind == detail::kKindGoodbye) {
      // Its last messages may still be on the way in on the other
      // connection: recvs from it fail only once that one ends
      // with its goodbye or close, after they were delivered.
      peerLeft(peer, !inboundOpenFrom(peer), -1, goodbyeReason(w.outboundBytes.tag));
    } else {
      MSCCLPP_WARN(LogBootstrap, "%s: %s wrote unexpected bytes on our connection to it (kind %u); ignored",
                   who_.c_str(), peerName(peer).c_str(), w.outboundBytes.kind);
    }
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  w.outboundClosed = true;
  if (stopping_.load() || aborted_.load() || w.left) return;
  // Its last messages may still be on the way in on its
  // own connection to us: they stay receivable until that
  // one closes too, and service() then marks the mailbox.
  peerFailed(peer,
             strFormat("%s closed its bootstrap connection without leaving: it exited, crashed, was killed or aborted",
                       peerName(peer).c_str()),
             true, !inboundOpenFrom(peer));
}

bool TcpEndpoint::inboundOpenFrom(int peer) const {
  for (const auto& in : inbound_)
    if (in->fromRank == peer && in->socket.valid()) return true;
  return false;
}

void TcpEndpoint::sendHeartbeats(int64_t nowMs) {
  if (stopping_.load()) return;
  const int64_t intervalMs = static_cast<int64_t>(heartbeatIntervalSeconds_ * 1000);
  for (int q : ringNeighbours(rank_, nRanks_)) {
    if (watch_[q].left || failures_.failed(q)) continue;
    Outbound& o = *outbound_[q];
    if (nowMs - o.lastSendMs.load(std::memory_order_relaxed) < intervalMs) continue;  // data went out: as good
    // A sender holding the lock is writing to it
    // right now, which is as good as a heartbeat.
    std::unique_lock<std::mutex> lock(o.mutex, std::try_to_lock);
    if (!lock.owns_lock() || !o.socket.valid() || !o.brokenReason.empty()) continue;
    // A full socket buffer means the neighbour is not reading:
    // it will be found out by its other neighbour, or by us on
    // its silence; never block the progress thread on it.
    if (!isWritableNow(o.socket.fd())) continue;
    FrameHeader h{kFrameMagic, detail::kKindHeartbeat, 0, 0, 0, 0};
    try {
      o.socket.sendAll(&h, sizeof(h), Deadline(0.5), who_ + ": heartbeat to rank " + std::to_string(q));
      o.lastSendMs.store(nowMs, std::memory_order_relaxed);
    } catch (const Error& e) {
      o.brokenReason = e.what();  // the watch on this socket sees the close and says why
    }
  }
}

void TcpEndpoint::checkNeighbours(int64_t nowMs) {
  if (heartbeatTimeoutSeconds_ <= 0 || stopping_.load()) return;
  const int64_t start = livenessStartMs_.load(std::memory_order_acquire);
  for (int q : ringNeighbours(rank_, nRanks_)) {
    PeerWatch& w = watch_[q];
    if (w.left || failures_.failed(q)) continue;
    NeighbourFacts facts;
    facts.silentSeconds = (nowMs - std::max(w.lastHeardMs, start)) / 1000.0;
    const int fd = outbound_[q]->fd.load(std::memory_order_acquire);
    if (w.emptySinceMs == 0) w.emptySinceMs = start;
    facts.unacknowledgedSeconds = fd >= 0 ? unacknowledgedSeconds(fd, nowMs, &w.emptySinceMs) : facts.silentSeconds;
    switch (classifyNeighbour(facts, heartbeatTimeoutSeconds_)) {
      case NeighbourState::Alive:
        if (w.stoppedSinceMs != 0) {
          MSCCLPP_WARN(LogBootstrap, "%s: %s speaks again after %.3g s of silence", who_.c_str(), peerName(q).c_str(),
                       (w.lastHeardMs - w.stoppedSinceMs) / 1000.0);
          w.stoppedSinceMs = 0;
        }
        break;
      case NeighbourState::Stopped:
        noteStopped(q, nowMs, facts.silentSeconds);
        break;
      case NeighbourState::Unreachable:
        peerFailed(
            q,
            strFormat("%s sent nothing for %.3g s, and its host acknowledged nothing we sent for %.3g s "
                      "(MSCCLPP_HEARTBEAT_TIMEOUT_S=%.3g): its host is unreachable or down",
                      peerName(q).c_str(), facts.silentSeconds, facts.unacknowledgedSeconds, heartbeatTimeoutSeconds_),
            true);
        break;
    }
  }
}

void TcpEndpoint::noteStopped(int peer, int64_t nowMs, double silentSeconds) {
  PeerWatch& w = watch_[peer];
  if (w.stoppedSinceMs == 0) {
    w.stoppedSinceMs = nowMs - static_cast<int64_t>(silentSeconds * 1000);
    w.nextStoppedWarnMs = nowMs;
  }
  if (nowMs < w.nextStoppedWarnMs) return;
  const double every = params::waitWarnSeconds();
  w.nextStoppedWarnMs = every > 0 ? nowMs + static_cast<int64_t>(every * 1000) : INT64_MAX;
  MSCCLPP_WARN(LogBootstrap,
               "%s: %s has sent nothing for %.3g s, not even a heartbeat, but its host acknowledges what we send: "
               "its process is stopped or starved (SIGSTOP, a debugger, a dump); waiting for it, as for any live "
               "peer (MSCCLPP_TIMEOUT_S bounds such waits)",
               who_.c_str(), peerName(peer).c_str(), silentSeconds);
}

std::string TcpEndpoint::goodbyeReason(int32_t why) {
  if (why == detail::kGoodbyeExited) return "its process exited without destroying its communicator";
  return "it destroyed or finalized its communicator";
}

void TcpEndpoint::peerLeft(int peer, bool drained, int toldBy, const std::string& why) {
  PeerWatch& w = watch_[peer];
  if (!w.left) MSCCLPP_TRACE(LogBootstrap, "%s: %s left", who_.c_str(), peerName(peer).c_str());
  w.left = true;
  if (!why.empty() && w.leftReason.empty()) {
    w.leftReason = toldBy >= 0 ? why : strFormat("%s said goodbye: %s", peerName(peer).c_str(), why.c_str());
    w.leftToldBy = toldBy;
  }
  if (!drained) return;
  const std::string told = w.leftToldBy >= 0 ? strFormat(" (reported by rank %d)", w.leftToldBy) : std::string();
  const std::string reason =
      (w.leftReason.empty() ? strFormat("%s said goodbye", peerName(peer).c_str()) : w.leftReason) + told;
  mailbox_.markPeerGone(peer, reason);
  if (stopping_.load() || aborted_.load() || !failures_.report(peer, reason, /*left=*/true)) return;
  MSCCLPP_INFO(LogBootstrap, "%s: peer left: %s", who_.c_str(), reason.c_str());
  // Ranks that never talked to it hear it along the ring: each rank
  // passes it on once, away from whoever told it. Sends to ranks
  // already gone fail at once; so the ring costs a few messages.
  const std::vector<char> payload(w.leftReason.begin(), w.leftReason.end());
  for (int q : ringNeighbours(rank_, nRanks_)) {
    if (q == peer || q == w.leftToldBy || failures_.failed(q)) continue;
    courier_.post(q, detail::MessageKey{0, detail::kKindLeaveNotice, peer}, payload);
  }
}

void TcpEndpoint::peerFailed(int peer, const std::string& reason, bool tellOthers, bool drained) {
  if (peer == rank_ || peer < 0 || peer >= nRanks_ || stopping_.load() || aborted_.load()) return;
  const bool first = failures_.report(peer, reason);
  if (drained) mailbox_.markPeerGone(peer, failures_.reason(peer));  // the first reason, whoever found it
  if (!first) return;
  MSCCLPP_INFO(LogBootstrap, "%s: peer failed: %s", who_.c_str(), reason.c_str());
  // Wakes a sender blocked on a peer that will never
  // read again; it then fails with the reason.
  const int fd = outbound_[peer]->fd.load(std::memory_order_acquire);
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  if (!tellOthers) return;
  // Every other rank hears it from us. Ranks on the failed
  // rank's host go last: if that host is unreachable, so
  // are they, and their sends wait out their deadline.
  const std::vector<char> payload(reason.begin(), reason.end());
  const std::string failedHost = peersKnown_.load(std::memory_order_acquire) ? hostOf(peers_[peer]) : std::string();
  std::vector<int> last;
  for (int q = 0; q < nRanks_; ++q) {
    if (q == rank_ || q == peer || failures_.failed(q)) continue;
    if (!failedHost.empty() && hostOf(peers_[q]) == failedHost) {
      last.push_back(q);
      continue;
    }
    courier_.post(q, detail::MessageKey{0, detail::kKindFailureNotice, peer}, payload);
  }
  for (int q : last) courier_.post(q, detail::MessageKey{0, detail::kKindFailureNotice, peer}, payload);
}

void TcpEndpoint::sayGoodbyeOnOutbound(int32_t why) {
  for (int q = 0; q < nRanks_; ++q) {
    if (q == rank_) continue;
    Outbound& o = *outbound_[q];
    // A sender blocked on a peer that reads nothing holds the lock
    // without a deadline: that one gets no goodbye, rather than a hang.
    std::unique_lock<std::mutex> lock(o.mutex, std::defer_lock);
    for (int i = 0; i < 20 && !lock.try_lock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!lock.owns_lock() || !o.socket.valid() || !o.brokenReason.empty()) continue;
    FrameHeader h{kFrameMagic, detail::kKindGoodbye, 0, why, 0, 0};
    try {
      o.socket.sendAll(&h, sizeof(h), Deadline(0.2), who_ + ": goodbye");
    } catch (const Error&) {
      // Best effort: a peer that is gone needs no goodbye.
    }
  }
}

void TcpEndpoint::sayGoodbyeOnInbound(int32_t why) {
  for (auto& in : inbound_) {
    if (!in->socket.valid()) continue;
    FrameHeader h{kFrameMagic, detail::kKindGoodbye, 0, why, 0, 0};
    (void)!::send(in->socket.fd(), &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

}  // namespace mscclpp::bootstrap
