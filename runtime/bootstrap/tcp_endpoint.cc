#include "bootstrap/tcp_endpoint.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "bootstrap/wire.hpp"
#include "core/deadline.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"

namespace mscclpp::bootstrap {

namespace {
constexpr size_t kMaxUnauthenticated = 256;
constexpr double kHandshakeSeconds = 10.0;
constexpr int kFramesPerWakeup = 64;  // fairness between busy peers
// A courier send gives up after this: that peer is dead or unreachable too.
constexpr double kCourierSendSeconds = 2.0;
}  // namespace

namespace {
net::HelloAcceptor::Options peerOptions(const std::string& who, const net::Secret& secret,
                                        const std::optional<net::Digest>& key) {
  net::HelloAcceptor::Options o{who,
                                LogBootstrap,
                                kPeerHelloMagic,
                                secret,
                                sizeof(PeerHello),
                                "not a rank of this job",
                                kHandshakeSeconds,
                                kMaxUnauthenticated};
  o.key = key;
  o.keyName = "MSCCLPP_COMM_SECRET";
  return o;
}
}  // namespace

TcpEndpoint::TcpEndpoint(int rank, int nRanks, const net::Secret& secret, const std::optional<net::Digest>& key,
                         net::Socket listener, size_t maxMessageBytes)
    : rank_(rank),
      nRanks_(nRanks),
      secret_(secret),
      key_(key),
      maxMessageBytes_(maxMessageBytes),
      listenAddress_(listener.localAddress()),
      who_(strFormat("bootstrap rank %d/%d", rank, nRanks)),
      mailbox_(nRanks),
      failures_(nRanks),
      courier_(who_, currentLogRank(),
               [this](int peer, const detail::MessageKey& key, const std::vector<char>& payload) {
                 send(peer, key, payload.data(), payload.size(), Deadline(kCourierSendSeconds), who_ + ": courier");
               }),
      acceptor_(std::move(listener), peerOptions(who_, secret, key),
                [this](net::Socket socket, const char* hello, const std::string& peer) {
                  admit(std::move(socket), hello, peer);
                }),
      progress_(who_, currentLogRank()) {
  for (int r = 0; r < nRanks; ++r) outbound_.push_back(std::make_unique<Outbound>());
  connectedFrom_.assign(static_cast<size_t>(nRanks), false);
  watch_.assign(static_cast<size_t>(nRanks), PeerWatch{});
  net::EventLoop::Hooks hooks;
  hooks.prepare = [this](net::Watches& watches) { return prepare(watches); };
  hooks.onFailure = [this](const std::exception& e) {
    MSCCLPP_WARN(LogBootstrap, "%s: progress thread failed: %s", who_.c_str(), e.what());
    mailbox_.abort(std::string("the bootstrap progress thread failed: ") + e.what());
  };
  hooks.onExit = [this]() {
    // Leaving on purpose, not aborted: a goodbye on every
    // inbound connection too, so that a peer watching its
    // outbound socket to us does not take the close for a crash.
    if (!aborted_.load()) sayGoodbyeOnInbound(detail::kGoodbyeDestroyed);
    for (auto& in : inbound_) in->socket.close();
    acceptor_.close();
  };
  progress_.start(std::move(hooks));
  listForExitGoodbye(this);
}

TcpEndpoint::~TcpEndpoint() {
  closeWithGoodbye();
  // Outbound sockets close here, not in abort, so
  // that data already sent is still delivered.
}

void TcpEndpoint::leave() {
  closeWithGoodbye();
  mailbox_.abort("this rank left: its communicator was finalized");
}

void TcpEndpoint::closeWithGoodbye() {
  if (closed_.exchange(true)) return;
  unlistForExitGoodbye(this);
  stopping_.store(true);
  courier_.stop();
  if (!aborted_.load()) sayGoodbyeOnOutbound(detail::kGoodbyeDestroyed);
  progress_.stop();
}

void TcpEndpoint::sayGoodbyeAtExit() {
  if (aborted_.load() || closed_.load() || stopping_.exchange(true)) return;
  courier_.stop();
  sayGoodbyeOnOutbound(detail::kGoodbyeExited);
  std::unique_lock<std::mutex> lock(exitMutex_);
  exitGoodbyeAsked_ = true;
  progress_.wake();
  exitDone_.wait_for(lock, std::chrono::milliseconds(200), [this] { return exitGoodbyeSent_; });
}

void TcpEndpoint::setPeerAddresses(std::vector<net::SocketAddress> addresses) {
  MSCCLPP_ENFORCE_EQ(addresses.size(), static_cast<size_t>(nRanks_), ErrorCode::InternalError, "%s", who_.c_str());
  peers_ = std::move(addresses);
  peersKnown_.store(true, std::memory_order_release);
}

void TcpEndpoint::abort() {
  if (aborted_.exchange(true)) return;
  mailbox_.abort("the bootstrap was aborted");
  courier_.stop();
  // shutdown, not close: it wakes a sender blocked
  // in poll without racing on the fd number.
  for (auto& o : outbound_) {
    int fd = o->fd.load();
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
  progress_.wake();
}

void TcpEndpoint::setRequestHandler(uint64_t ns, detail::RequestHandler handler) {
  std::lock_guard<std::mutex> lock(handlersMutex_);
  if (handler) {
    handlers_[ns] = std::make_shared<const detail::RequestHandler>(std::move(handler));
  } else {
    handlers_.erase(ns);
  }
}

void TcpEndpoint::connectOutbound(int peer, Outbound& out, const Deadline& deadline, const std::string& what) {
  MSCCLPP_ENFORCE(peersKnown_.load(std::memory_order_acquire), ErrorCode::InvalidUsage,
                  "%s: the rendezvous has not completed", what.c_str());
  net::Socket s = net::Socket::connectTo(peers_[peer], deadline, "rank " + std::to_string(peer), false, &aborted_);
  PeerHello hello{};
  // With a key the secret field carries our nonce, and both sides prove the key.
  hello.header = net::makeHelloHeader(kPeerHelloMagic, key_ ? net::randomSecret() : secret_);
  hello.fromRank = rank_;
  hello.nRanks = nRanks_;
  s.sendAll(&hello, sizeof(hello), deadline, what + ": handshake");
  if (key_) net::answerChallenge(s, *key_, &hello, sizeof(hello), deadline, peerName(peer));
  out.socket = std::move(s);
  out.fd.store(out.socket.fd());
  progress_.wake();                            // the progress thread watches the new socket from its next turn
  if (aborted_.load()) out.socket.shutdown();  // abort() may have missed the fd
}

void TcpEndpoint::send(int peer, const detail::MessageKey& key, const void* data, size_t size, const Deadline& deadline,
                       const std::string& what) {
  MSCCLPP_ENFORCE(!aborted_.load(), ErrorCode::Aborted, "%s: the bootstrap was aborted", what.c_str());
  MSCCLPP_ENFORCE(!closed_.load(), ErrorCode::Aborted, "%s: this rank left (its communicator was finalized)",
                  what.c_str());
  MSCCLPP_ENFORCE(size <= maxMessageBytes_, ErrorCode::InvalidArgument,
                  "%s: %zu bytes is more than MSCCLPP_BOOTSTRAP_MAX_BYTES=%zu", what.c_str(), size, maxMessageBytes_);
  if (peer == rank_) {
    const char* p = static_cast<const char*>(data);
    mailbox_.deliver(rank_, key, std::vector<char>(p, p + size));
    return;
  }
  if (failures_.failed(peer)) {
    MSCCLPP_THROW(ErrorCode::RemoteError, "%s: %s", what.c_str(), failures_.reason(peer).c_str());
  }
  Outbound& out = *outbound_[peer];
  std::lock_guard<std::mutex> lock(out.mutex);
  MSCCLPP_ENFORCE(out.brokenReason.empty(), ErrorCode::RemoteError, "%s: %s", what.c_str(), out.brokenReason.c_str());
  try {
    if (!out.socket.valid()) connectOutbound(peer, out, deadline, what);
    FrameHeader h{kFrameMagic, key.kind, key.ns, key.tag, 0, size};
    iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(data), size}};
    out.socket.sendAllv(iov, 2, deadline, what);
    out.lastSendMs.store(steadyMs(), std::memory_order_relaxed);
  } catch (const Error& e) {
    // A peer declared failed meanwhile: its socket was
    // shut down to wake us. Say so, not "connection lost".
    if (failures_.failed(peer)) {
      out.brokenReason = failures_.reason(peer);
      MSCCLPP_THROW(ErrorCode::RemoteError, "%s: %s", what.c_str(), out.brokenReason.c_str());
    }
    if (aborted_.load()) MSCCLPP_THROW(ErrorCode::Aborted, "%s: the bootstrap was aborted", what.c_str());
    // A frame cut in the middle leaves the stream
    // unusable: later sends to this peer fail at once.
    out.brokenReason = e.what();
    if (e.code() == ErrorCode::Timeout || std::strncmp(e.what(), what.c_str(), what.size()) == 0) throw;
    throw Error(e.code(), what + ": " + e.what());
  }
}

std::vector<char> TcpEndpoint::recv(int peer, const detail::MessageKey& key, size_t maxBytes, const Deadline& deadline,
                                    const std::string& what, const detail::CancelToken* token) {
  return mailbox_.take(peer, key, maxBytes, deadline, what, token);
}

void TcpEndpoint::admit(net::Socket socket, const char* helloBytes, const std::string& peer) {
  PeerHello hello;
  std::memcpy(&hello, helloBytes, sizeof(hello));
  if (hello.nRanks != nRanks_ || hello.fromRank < 0 || hello.fromRank >= nRanks_ || hello.fromRank == rank_) {
    return acceptor_.warnDropped(peer, strFormat("claims rank %d of %d", hello.fromRank, hello.nRanks));
  }
  if (connectedFrom_[hello.fromRank]) {
    MSCCLPP_WARN(LogBootstrap, "%s: dropped a second connection claiming rank %d from %s", who_.c_str(), hello.fromRank,
                 peer.c_str());
    return;
  }
  connectedFrom_[hello.fromRank] = true;
  watch_[hello.fromRank].lastHeardMs = steadyMs();
  auto in = std::make_unique<Inbound>();
  in->socket = std::move(socket);
  in->fromRank = hello.fromRank;
  in->from = peer;
  inbound_.push_back(std::move(in));
}

bool TcpEndpoint::service(Inbound& in) {
  try {
    for (int i = 0; i < kFramesPerWakeup; ++i) {
      if (!in.inPayload) {
        size_t n = in.socket.recvSome(reinterpret_cast<char*>(&in.header) + in.headerGot,
                                      sizeof(in.header) - in.headerGot, "frame header");
        if (n == 0) return true;
        watch_[in.fromRank].lastHeardMs = steadyMs();
        in.headerGot += n;
        if (in.headerGot < sizeof(in.header)) continue;
        in.headerGot = 0;
        const FrameHeader& h = in.header;
        if (h.magic != kFrameMagic || h.kind > detail::kKindMax || h.size > maxMessageBytes_) {
          std::string why = strFormat("rank %d sent a malformed bootstrap frame (magic 0x%08x, kind %u, %llu bytes)",
                                      in.fromRank, h.magic, h.kind, (unsigned long long)h.size);
          MSCCLPP_WARN(LogBootstrap, "%s: %s; closing its connection", who_.c_str(), why.c_str());
          mailbox_.markPeerGone(in.fromRank, why);
          return false;
        }
        in.payload.assign(static_cast<size_t>(h.size), 0);
        in.payloadGot = 0;
        in.inPayload = true;
      }
      if (in.payloadGot < in.payload.size()) {
        size_t n =
            in.socket.recvSome(in.payload.data() + in.payloadGot, in.payload.size() - in.payloadGot, "frame payload");
        if (n == 0) return true;
        watch_[in.fromRank].lastHeardMs = steadyMs();
        in.payloadGot += n;
        if (in.payloadGot < in.payload.size()) continue;
      }
      in.inPayload = false;
      dispatch(in.fromRank, in.header, std::move(in.payload));
      in.payload = std::vector<char>();
    }
    return true;
  } catch (const Error& e) {
    if (watch_[in.fromRank].left) {
      in.socket.close();            // drained: peerLeft must not count it as open
      peerLeft(in.fromRank, true);  // its connection ended after everything it sent
    } else if (failures_.failed(in.fromRank)) {
      peerFailed(in.fromRank, failures_.reason(in.fromRank), false);  // found earlier; now drained
    } else if (!stopping_.load() && !aborted_.load()) {
      peerFailed(in.fromRank,
                 strFormat("%s closed its bootstrap connection%s without leaving: it exited, crashed, was killed or "
                           "aborted",
                           inboundPeerName(in).c_str(), in.inPayload ? " in the middle of a message" : ""),
                 true);
    }
    return false;
  }
}

void TcpEndpoint::dispatch(int from, const FrameHeader& h, std::vector<char> payload) {
  switch (h.kind) {
    case detail::kKindHeartbeat:
      return;  // its arrival was the point
    case detail::kKindGoodbye:
      return peerLeft(from, true, -1, goodbyeReason(h.tag));
    case detail::kKindLeaveNotice: {
      const int left = h.tag;
      if (left == rank_ || left < 0 || left >= nRanks_) return;
      return peerLeft(left, !inboundOpenFrom(left), from, std::string(payload.begin(), payload.end()));
    }
    case detail::kKindFailureNotice: {
      const int failed = h.tag;
      if (failed == rank_) {
        MSCCLPP_INFO(LogBootstrap, "%s: rank %d reports this rank as failed: %.*s", who_.c_str(), from,
                     static_cast<int>(payload.size()), payload.data());
        return;
      }
      if (failed < 0 || failed >= nRanks_) return;
      return peerFailed(failed, std::string(payload.begin(), payload.end()) + strFormat(" (reported by rank %d)", from),
                        false);
    }
    case detail::kKindRequest: {
      std::shared_ptr<const detail::RequestHandler> handler;
      {
        std::lock_guard<std::mutex> lock(handlersMutex_);
        auto it = handlers_.find(h.ns);
        if (it != handlers_.end()) handler = it->second;
      }
      std::vector<char> reply;
      if (handler) {
        try {
          reply = (*handler)(from, payload);
        } catch (const std::exception& e) {
          MSCCLPP_WARN(LogBootstrap, "%s: the handler of a request from rank %d failed: %s", who_.c_str(), from,
                       e.what());
        }
      }
      courier_.post(from, detail::MessageKey{h.ns, detail::kKindReply, h.tag}, std::move(reply));
      return;
    }
    default:
      mailbox_.deliver(from, detail::MessageKey{h.ns, h.kind, h.tag}, std::move(payload));
  }
}

bool TcpEndpoint::prepare(net::Watches& watches) {
  if (aborted_.load()) return false;
  {
    std::lock_guard<std::mutex> lock(exitMutex_);
    if (exitGoodbyeAsked_ && !exitGoodbyeSent_) {
      sayGoodbyeOnInbound(detail::kGoodbyeExited);
      exitGoodbyeSent_ = true;
      exitDone_.notify_all();
    }
  }
  inbound_.erase(std::remove_if(inbound_.begin(), inbound_.end(), [](const auto& in) { return !in->socket.valid(); }),
                 inbound_.end());
  acceptor_.watch(watches);
  for (auto& in : inbound_) {
    Inbound* conn = in.get();
    watches.add(conn->socket.fd(), [this, conn]() {
      if (!service(*conn)) conn->socket.close();
    });
  }
  if (livenessStartMs_.load(std::memory_order_acquire) != 0) {
    watchOutbound(watches);
    const int64_t now = steadyMs();
    if (now >= nextHeartbeatMs_) {
      sendHeartbeats(now);
      nextHeartbeatMs_ = now + static_cast<int64_t>(heartbeatIntervalSeconds_ * 1000);
    }
    checkNeighbours(now);
    watches.limitWait(static_cast<int>(std::max<int64_t>(0, nextHeartbeatMs_ - now)));
  }
  return true;
}

}  // namespace mscclpp::bootstrap
