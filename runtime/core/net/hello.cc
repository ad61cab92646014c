#include "core/net/hello.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::net {

HelloHeader makeHelloHeader(const char* magic, const Secret& secret) {
  HelloHeader h{};
  std::memcpy(h.magic, magic, sizeof(h.magic));
  std::memcpy(h.secret, secret.data(), sizeof(h.secret));
  return h;
}

namespace {
constexpr char kListenerLabel[] = "mscclpp listener";
constexpr char kJoinerLabel[] = "mscclpp joiner";
}  // namespace

Digest listenerProof(const Digest& key, const char* magic, const uint8_t* joinerNonce, const uint8_t* listenerNonce) {
  return hmacSha256(key.data(), key.size(),
                    {{kListenerLabel, sizeof(kListenerLabel)}, {magic, 8}, {joinerNonce, 16}, {listenerNonce, 16}});
}

Digest joinerProof(const Digest& key, const char* magic, const uint8_t* joinerNonce, const uint8_t* listenerNonce,
                   const void* body, size_t bodySize) {
  return hmacSha256(
      key.data(), key.size(),
      {{kJoinerLabel, sizeof(kJoinerLabel)}, {magic, 8}, {joinerNonce, 16}, {listenerNonce, 16}, {body, bodySize}});
}

void answerChallenge(Socket& s, const Digest& key, const void* hello, size_t helloBytes, const Deadline& deadline,
                     const std::string& listener) {
  const auto* header = static_cast<const HelloHeader*>(hello);
  HelloChallenge c{};
  try {
    s.recvAll(&c, sizeof(c), deadline, "the handshake with " + listener);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Timeout || e.code() == ErrorCode::Aborted) throw;
    MSCCLPP_THROW(ErrorCode::RemoteError,
                  "%s closed the connection instead of sending its challenge: it does not use MSCCLPP_COMM_SECRET, "
                  "or ours differs from its own (%s)",
                  listener.c_str(), e.what());
  }
  MSCCLPP_ENFORCE(std::memcmp(c.magic, kChallengeMagic, 8) == 0, ErrorCode::RemoteError,
                  "%s answered the hello with something else than a challenge: it does not use MSCCLPP_COMM_SECRET",
                  listener.c_str());
  if (!digestEquals(c.proof, listenerProof(key, header->magic, header->secret, c.nonce))) {
    MSCCLPP_THROW(ErrorCode::RemoteError,
                  "%s could not prove MSCCLPP_COMM_SECRET: its secret differs from ours, or it is not of this job",
                  listener.c_str());
  }
  const Digest proof =
      joinerProof(key, header->magic, header->secret, c.nonce, static_cast<const char*>(hello) + sizeof(HelloHeader),
                  helloBytes - sizeof(HelloHeader));
  s.sendAll(proof.data(), proof.size(), deadline, "the handshake with " + listener);
}

HelloAcceptor::HelloAcceptor(Socket listener, Options options, OnHello onHello)
    : listener_(std::move(listener)), options_(std::move(options)), onHello_(std::move(onHello)) {
  address_ = listener_.localAddress();
}

void HelloAcceptor::warnDropped(const std::string& peer, const std::string& why) const {
  MSCCLPP_WARN(options_.subsys, "%s: dropped connection from %s: %s", options_.who.c_str(), peer.c_str(), why.c_str());
}

void HelloAcceptor::drop(Pending& p, const std::string& why) {
  warnDropped(p.peer, why);
  p.socket.close();
}

void HelloAcceptor::watch(Watches& watches) {
  for (auto& p : pending_) {
    if (p->socket.valid() && p->deadline.expired()) {
      drop(*p, strFormat("no handshake within %.3g s", options_.handshakeSeconds));
    }
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const auto& p) { return !p->socket.valid(); }),
                 pending_.end());
  if (!listener_.valid()) return;
  watches.add(listener_.fd(), [this]() { acceptAll(); });
  for (auto& p : pending_) {
    Pending* entry = p.get();
    watches.add(entry->socket.fd(), [this, entry]() { service(*entry); });
  }
}

void HelloAcceptor::acceptAll() {
  while (true) {
    Socket s;
    try {
      s = listener_.accept();
    } catch (const Error& e) {
      MSCCLPP_WARN(options_.subsys, "%s: %s", options_.who.c_str(), e.what());
      return;
    }
    if (!s.valid()) return;
    size_t waiting = 0;
    for (auto& p : pending_) waiting += p->socket.valid();
    if (waiting >= options_.maxPending) {
      for (auto& p : pending_) {
        if (p->socket.valid()) {
          drop(*p, "too many connections without a handshake");
          break;
        }
      }
    }
    auto p = std::make_unique<Pending>();
    p->peer = s.peerAddress().toString();
    p->socket = std::move(s);
    p->hello.assign(options_.helloBytes, 0);
    p->deadline = Deadline(options_.handshakeSeconds);
    pending_.push_back(std::move(p));
  }
}

void HelloAcceptor::service(Pending& p) {
  if (!p.socket.valid()) return;
  if (options_.key) return serviceKeyed(p);
  try {
    p.got += p.socket.recvSome(p.hello.data() + p.got, p.hello.size() - p.got, "hello");
  } catch (const Error&) {
    if (options_.onAbandoned && p.got >= sizeof(HelloHeader)) {
      p.socket.close();  // its secret was checked on arrival: one of ours died mid-hello
      return options_.onAbandoned(p.peer, p.hello.data(), p.got);
    }
    return drop(p, "closed before completing the handshake");
  }
  if (p.got >= sizeof(HelloHeader::magic) && std::memcmp(p.hello.data(), options_.magic, 8) != 0) {
    return drop(p, "bad magic (garbage or a foreign protocol)");
  }
  // The secret is checked as soon as it is complete.
  // A partial hello of ours is then told from a stranger's if it closes.
  if (p.got < sizeof(HelloHeader)) return;
  const auto* header = reinterpret_cast<const HelloHeader*>(p.hello.data());
  if (!secretEquals(header->secret, options_.secret)) {
    return drop(p, std::string("wrong secret (") + options_.stranger + ")");
  }
  if (p.got < p.hello.size()) return;
  Socket socket = std::move(p.socket);  // p is erased at the next watch()
  onHello_(std::move(socket), p.hello.data(), p.peer);
}

void HelloAcceptor::serviceKeyed(Pending& p) {
  try {
    if (!p.challenged) {
      p.got += p.socket.recvSome(p.hello.data() + p.got, p.hello.size() - p.got, "hello");
    } else {
      p.proofGot += p.socket.recvSome(p.proof + p.proofGot, sizeof(p.proof) - p.proofGot, "proof");
    }
  } catch (const Error&) {
    return drop(p, p.challenged ? "closed before proving the job's secret (" + std::string(options_.keyName) + ")"
                                : std::string("closed before completing the handshake"));
  }
  if (p.got >= sizeof(HelloHeader::magic) && std::memcmp(p.hello.data(), options_.magic, 8) != 0) {
    return drop(p, "bad magic (garbage or a foreign protocol)");
  }
  if (p.got < p.hello.size()) return;
  const auto* header = reinterpret_cast<const HelloHeader*>(p.hello.data());
  if (!p.challenged) {
    // The listener proves the key first, on a fresh nonce of its own, then waits for the joiner's proof.
    const Secret nonce = randomSecret();
    std::memcpy(p.nonce, nonce.data(), sizeof(p.nonce));
    HelloChallenge c{};
    std::memcpy(c.magic, kChallengeMagic, 8);
    std::memcpy(c.nonce, p.nonce, sizeof(c.nonce));
    const Digest proof = listenerProof(*options_.key, options_.magic, header->secret, p.nonce);
    std::memcpy(c.proof, proof.data(), proof.size());
    // A fresh connection's send buffer takes 56 bytes at once.
    if (::send(p.socket.fd(), &c, sizeof(c), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(c))) {
      return drop(p, "could not send it the challenge");
    }
    p.challenged = true;
    return;
  }
  if (p.proofGot < sizeof(p.proof)) return;
  const Digest expect = joinerProof(*options_.key, options_.magic, header->secret, p.nonce,
                                    p.hello.data() + sizeof(HelloHeader), p.hello.size() - sizeof(HelloHeader));
  if (!digestEquals(p.proof, expect)) {
    return drop(p,
                std::string("wrong proof of the job's secret (") + options_.keyName + "; " + options_.stranger + ")");
  }
  Socket socket = std::move(p.socket);  // p is erased at the next watch()
  onHello_(std::move(socket), p.hello.data(), p.peer);
}

void HelloAcceptor::close() {
  for (auto& p : pending_) p->socket.close();
  pending_.clear();
  listener_.close();
}

}  // namespace mscclpp::net
