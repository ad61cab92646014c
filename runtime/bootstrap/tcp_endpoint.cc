#include "bootstrap/tcp_endpoint.hpp"

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
  int fromRank = -1;
  FrameHeader header{};
  size_t headerGot = 0;
  bool inPayload = false;
  std::vector<char> payload;
  size_t payloadGot = 0;
};

TcpEndpoint::TcpEndpoint(int rank, int nRanks, const net::Secret& secret, net::Socket listener,
                         size_t maxMessageBytes)
    : rank_(rank), nRanks_(nRanks), secret_(secret), maxMessageBytes_(maxMessageBytes),
      listenAddress_(listener.localAddress()), who_(strFormat("bootstrap rank %d/%d", rank, nRanks)),
      mailbox_(nRanks),
      acceptor_(std::move(listener),
                net::HelloAcceptor::Options{who_, LogBootstrap, kPeerHelloMagic, secret, sizeof(PeerHello),
                                            "not a rank of this job", kHandshakeSeconds, kMaxUnauthenticated},
                [this](net::Socket socket, const char* hello, const std::string& peer) {
                  admit(std::move(socket), hello, peer);
                }),
      progress_(who_, currentLogRank()) {
  for (int r = 0; r < nRanks; ++r) outbound_.push_back(std::make_unique<Outbound>());
  connectedFrom_.assign(static_cast<size_t>(nRanks), false);
  net::EventLoop::Hooks hooks;
  hooks.prepare = [this](net::Watches& watches) { return prepare(watches); };
  hooks.onFailure = [this](const std::exception& e) {
    MSCCLPP_WARN(LogBootstrap, "%s: progress thread failed: %s", who_.c_str(), e.what());
    mailbox_.abort(std::string("the bootstrap progress thread failed: ") + e.what());
  };
  hooks.onExit = [this]() {
    for (auto& in : inbound_) in->socket.close();
    acceptor_.close();
  };
  progress_.start(std::move(hooks));
}

TcpEndpoint::~TcpEndpoint() {
  stopping_.store(true);
  progress_.stop();
  // Outbound sockets close here (not in abort) so that data already sent is still delivered.
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
  progress_.wake();
}

void TcpEndpoint::connectOutbound(int peer, Outbound& out, const Deadline& deadline, const std::string& what) {
  MSCCLPP_ENFORCE(peersKnown_.load(std::memory_order_acquire), ErrorCode::InvalidUsage,
                  "%s: the rendezvous has not completed", what.c_str());
  net::Socket s = net::Socket::connectTo(peers_[peer], deadline, "rank " + std::to_string(peer), false);
  PeerHello hello{};
  hello.header = net::makeHelloHeader(kPeerHelloMagic, secret_);
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

void TcpEndpoint::admit(net::Socket socket, const char* helloBytes, const std::string& peer) {
  PeerHello hello;
  std::memcpy(&hello, helloBytes, sizeof(hello));
  if (hello.nRanks != nRanks_ || hello.fromRank < 0 || hello.fromRank >= nRanks_ || hello.fromRank == rank_) {
    return acceptor_.warnDropped(peer, strFormat("claims rank %d of %d", hello.fromRank, hello.nRanks));
  }
  if (connectedFrom_[hello.fromRank]) {
    MSCCLPP_WARN(LogBootstrap, "%s: dropped a second connection claiming rank %d from %s", who_.c_str(),
                 hello.fromRank, peer.c_str());
    return;
  }
  connectedFrom_[hello.fromRank] = true;
  auto in = std::make_unique<Inbound>();
  in->socket = std::move(socket);
  in->fromRank = hello.fromRank;
  inbound_.push_back(std::move(in));
}

bool TcpEndpoint::service(Inbound& in) {
  try {
    for (int i = 0; i < kFramesPerWakeup; ++i) {
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
    if (!stopping_.load() && !aborted_.load()) {
      std::string why = strFormat("rank %d closed its bootstrap connection%s (it exited, crashed, aborted or "
                                  "destroyed its bootstrap)",
                                  in.fromRank, in.inPayload ? " in the middle of a message" : "");
      MSCCLPP_INFO(LogBootstrap, "%s: %s", who_.c_str(), why.c_str());
      mailbox_.markPeerGone(in.fromRank, why);
    }
    return false;
  }
}

bool TcpEndpoint::prepare(net::Watches& watches) {
  if (aborted_.load()) return false;
  inbound_.erase(std::remove_if(inbound_.begin(), inbound_.end(), [](const auto& in) { return !in->socket.valid(); }),
                 inbound_.end());
  acceptor_.watch(watches);
  for (auto& in : inbound_) {
    Inbound* conn = in.get();
    watches.add(conn->socket.fd(), [this, conn]() {
      if (!service(*conn)) conn->socket.close();
    });
  }
  return true;
}

}  // namespace mscclpp::bootstrap
