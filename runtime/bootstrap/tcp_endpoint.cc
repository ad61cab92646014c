#include "bootstrap/tcp_endpoint.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bootstrap/wire.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"

namespace mscclpp::bootstrap {

namespace {
constexpr size_t kMaxUnauthenticated = 256;
constexpr double kHandshakeSeconds = 10.0;
constexpr int kFramesPerWakeup = 64;  // fairness between busy peers
}  // namespace

struct TcpEndpoint::Inbound {
  net::Socket socket;
  std::string peer;
  int fromRank = -1;  // -1 until the hello is checked
  PeerHello hello{};
  size_t helloGot = 0;
  Deadline handshakeDeadline{kHandshakeSeconds};
  FrameHeader header{};
  size_t headerGot = 0;
  bool inPayload = false;
  std::vector<char> payload;
  size_t payloadGot = 0;
};

TcpEndpoint::TcpEndpoint(int rank, int nRanks, const Secret& secret, net::Socket listener, size_t maxMessageBytes)
    : rank_(rank), nRanks_(nRanks), secret_(secret), maxMessageBytes_(maxMessageBytes), listener_(std::move(listener)),
      who_(strFormat("bootstrap rank %d/%d", rank, nRanks)), mailbox_(nRanks) {
  listenAddress_ = listener_.localAddress();
  for (int r = 0; r < nRanks; ++r) outbound_.push_back(std::make_unique<Outbound>());
  connectedFrom_.assign(static_cast<size_t>(nRanks), false);
  wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wakeFd_ < 0) throw SystemError(who_ + ": eventfd", errno);
  int logRank = currentLogRank();
  progress_ = std::thread([this, logRank]() {
    ScopedLogRank scoped(logRank);
    try {
      progressLoop();
    } catch (const std::exception& e) {
      MSCCLPP_WARN(LogBootstrap, "%s: progress thread failed: %s", who_.c_str(), e.what());
      mailbox_.abort(std::string("the bootstrap progress thread failed: ") + e.what());
    }
  });
}

TcpEndpoint::~TcpEndpoint() {
  stopping_.store(true);
  wake();
  if (progress_.joinable()) progress_.join();
  if (wakeFd_ >= 0) ::close(wakeFd_);
  // Outbound sockets close here (not in abort) so that data already sent is still delivered.
}

void TcpEndpoint::wake() {
  uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof(one));
}

void TcpEndpoint::setPeerAddresses(std::vector<net::SocketAddress> addresses) {
  MSCCLPP_ENFORCE_EQ(addresses.size(), static_cast<size_t>(nRanks_), ErrorCode::InternalError, "%s", who_.c_str());
  peers_ = std::move(addresses);
  peersKnown_.store(true, std::memory_order_release);
}

void TcpEndpoint::abort() {
  if (aborted_.exchange(true)) return;
  mailbox_.abort("the bootstrap was aborted");
  // shutdown (not close) wakes a sender blocked in poll without racing on the fd number.
  for (auto& o : outbound_) {
    int fd = o->fdForAbort.load();
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  }
  wake();
}

void TcpEndpoint::connectOutbound(int peer, Outbound& out, const Deadline& deadline, const std::string& what) {
  MSCCLPP_ENFORCE(peersKnown_.load(std::memory_order_acquire), ErrorCode::InvalidUsage,
                  "%s: the rendezvous has not completed", what.c_str());
  net::Socket s = net::Socket::connectTo(peers_[peer], deadline, "rank " + std::to_string(peer), false);
  PeerHello hello{};
  std::memcpy(hello.magic, kPeerHelloMagic, 8);
  std::memcpy(hello.secret, secret_.data(), 16);
  hello.fromRank = rank_;
  hello.nRanks = nRanks_;
  s.sendAll(&hello, sizeof(hello), deadline, what + ": handshake");
  out.socket = std::move(s);
  out.fdForAbort.store(out.socket.fd());
  if (aborted_.load()) out.socket.shutdown();  // abort() may have missed the fd
}

void TcpEndpoint::send(int peer, const detail::MessageKey& key, const void* data, size_t size,
                       const Deadline& deadline, const std::string& what) {
  MSCCLPP_ENFORCE(!aborted_.load(), ErrorCode::Aborted, "%s: the bootstrap was aborted", what.c_str());
  MSCCLPP_ENFORCE(size <= maxMessageBytes_, ErrorCode::InvalidArgument,
                  "%s: %zu bytes is more than MSCCLPP_BOOTSTRAP_MAX_BYTES=%zu", what.c_str(), size, maxMessageBytes_);
  if (peer == rank_) {
    const char* p = static_cast<const char*>(data);
    mailbox_.deliver(rank_, key, std::vector<char>(p, p + size));
    return;
  }
  Outbound& out = *outbound_[peer];
  std::lock_guard<std::mutex> lock(out.mutex);
  MSCCLPP_ENFORCE(out.brokenReason.empty(), ErrorCode::RemoteError, "%s: %s", what.c_str(), out.brokenReason.c_str());
  try {
    if (!out.socket.valid()) connectOutbound(peer, out, deadline, what);
    FrameHeader h{kFrameMagic, key.kind, key.ns, key.tag, 0, size};
    iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(data), size}};
    out.socket.sendAllv(iov, 2, deadline, what);
  } catch (const Error& e) {
    if (aborted_.load()) MSCCLPP_THROW(ErrorCode::Aborted, "%s: the bootstrap was aborted", what.c_str());
    // A frame cut in the middle leaves the stream unusable: later sends to this peer fail at once.
    out.brokenReason = e.what();
    if (e.code() == ErrorCode::Timeout || std::strncmp(e.what(), what.c_str(), what.size()) == 0) throw;
    throw Error(e.code(), what + ": " + e.what());
  }
}

std::vector<char> TcpEndpoint::recv(int peer, const detail::MessageKey& key, size_t maxBytes,
                                    const Deadline& deadline, const std::string& what,
                                    const detail::CancelToken* token) {
  return mailbox_.take(peer, key, maxBytes, deadline, what, token);
}

bool TcpEndpoint::service(Inbound& in) {
  try {
    for (int i = 0; i < kFramesPerWakeup; ++i) {
      if (in.fromRank < 0) {
        size_t n = in.socket.recvSome(reinterpret_cast<char*>(&in.hello) + in.helloGot, sizeof(in.hello) - in.helloGot,
                                      "peer hello");
        if (n == 0) return true;
        in.helloGot += n;
        if (in.helloGot >= 8 && std::memcmp(in.hello.magic, kPeerHelloMagic, 8) != 0) {
          MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: bad magic (garbage or a foreign protocol)",
                       who_.c_str(), in.peer.c_str());
          return false;
        }
        if (in.helloGot < sizeof(in.hello)) continue;
        if (!secretEquals(in.hello.secret, secret_)) {
          MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: wrong secret (not a rank of this job)",
                       who_.c_str(), in.peer.c_str());
          return false;
        }
        if (in.hello.nRanks != nRanks_ || in.hello.fromRank < 0 || in.hello.fromRank >= nRanks_ ||
            in.hello.fromRank == rank_) {
          MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: claims rank %d of %d", who_.c_str(),
                       in.peer.c_str(), in.hello.fromRank, in.hello.nRanks);
          return false;
        }
        if (connectedFrom_[in.hello.fromRank]) {
          MSCCLPP_WARN(LogBootstrap, "%s: dropped a second connection claiming rank %d from %s", who_.c_str(),
                       in.hello.fromRank, in.peer.c_str());
          return false;
        }
        connectedFrom_[in.hello.fromRank] = true;
        in.fromRank = in.hello.fromRank;
        continue;
      }
      if (!in.inPayload) {
        size_t n = in.socket.recvSome(reinterpret_cast<char*>(&in.header) + in.headerGot,
                                      sizeof(in.header) - in.headerGot, "frame header");
        if (n == 0) return true;
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
        size_t n = in.socket.recvSome(in.payload.data() + in.payloadGot, in.payload.size() - in.payloadGot,
                                      "frame payload");
        if (n == 0) return true;
        in.payloadGot += n;
        if (in.payloadGot < in.payload.size()) continue;
      }
      in.inPayload = false;
      mailbox_.deliver(in.fromRank, detail::MessageKey{in.header.ns, in.header.kind, in.header.tag},
                       std::move(in.payload));
      in.payload = std::vector<char>();
    }
    return true;
  } catch (const Error& e) {
    if (in.fromRank < 0) {
      MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: closed before completing the handshake",
                   who_.c_str(), in.peer.c_str());
    } else if (!stopping_.load() && !aborted_.load()) {
      std::string why = strFormat("rank %d closed its bootstrap connection%s (it exited, crashed, aborted or "
                                  "destroyed its bootstrap)",
                                  in.fromRank, in.inPayload ? " in the middle of a message" : "");
      MSCCLPP_INFO(LogBootstrap, "%s: %s", who_.c_str(), why.c_str());
      mailbox_.markPeerGone(in.fromRank, why);
    }
    return false;
  }
}

void TcpEndpoint::progressLoop() {
  std::vector<std::unique_ptr<Inbound>> conns;
  std::vector<pollfd> fds;
  while (!stopping_.load() && !aborted_.load()) {
    fds.clear();
    fds.push_back({wakeFd_, POLLIN, 0});
    fds.push_back({listener_.fd(), POLLIN, 0});
    for (auto& c : conns) fds.push_back({c->socket.fd(), POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), 200);
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw SystemError(who_ + ": poll", errno);
    }
    if (fds[0].revents) {
      uint64_t v;
      (void)!::read(wakeFd_, &v, sizeof(v));
    }
    if (stopping_.load() || aborted_.load()) break;
    const size_t polled = conns.size();
    if (fds[1].revents) {
      while (true) {
        net::Socket s = listener_.accept();
        if (!s.valid()) break;
        size_t unauthenticated = 0;
        for (auto& c : conns) unauthenticated += c->fromRank < 0 && c->socket.valid();
        if (unauthenticated >= kMaxUnauthenticated) {
          for (auto& c : conns) {
            if (c->fromRank < 0 && c->socket.valid()) {
              MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: too many connections without a handshake",
                           who_.c_str(), c->peer.c_str());
              c->socket.close();
              break;
            }
          }
        }
        auto in = std::make_unique<Inbound>();
        in->peer = s.peerAddress().toString();
        in->socket = std::move(s);
        conns.push_back(std::move(in));
      }
    }
    for (size_t i = 0; i < conns.size(); ++i) {
      Inbound& in = *conns[i];
      if (!in.socket.valid()) continue;
      bool ready = i < polled && fds[2 + i].revents != 0;
      if (ready && !service(in)) in.socket.close();
      if (in.socket.valid() && in.fromRank < 0 && in.handshakeDeadline.expired()) {
        MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: no handshake within %.0f s", who_.c_str(),
                     in.peer.c_str(), kHandshakeSeconds);
        in.socket.close();
      }
    }
    conns.erase(std::remove_if(conns.begin(), conns.end(), [](const auto& c) { return !c->socket.valid(); }),
                conns.end());
  }
  for (auto& c : conns) c->socket.close();
  listener_.close();
}

}  // namespace mscclpp::bootstrap
