#include "core/net/hello.hpp"

#include <algorithm>
#include <cstring>

#include "core/format.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::net {

HelloHeader makeHelloHeader(const char* magic, const Secret& secret) {
  HelloHeader h{};
  std::memcpy(h.magic, magic, sizeof(h.magic));
  std::memcpy(h.secret, secret.data(), sizeof(h.secret));
  return h;
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

void HelloAcceptor::close() {
  for (auto& p : pending_) p->socket.close();
  pending_.clear();
  listener_.close();
}

}  // namespace mscclpp::net
