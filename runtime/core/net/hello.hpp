// The one handshake of our listening sockets (the bootstrap root, the bootstrap's peers, the TCP
// transport): the connecting side sends a fixed-size hello that starts with 8 magic bytes naming
// the protocol and the listener's 128-bit secret, followed by a body the protocol defines. The
// listening side reads it without blocking (HelloAcceptor, on its EventLoop), drops garbage, wrong
// secrets, half-open connections past a deadline and floods beyond a bound, each with one WARN
// naming the peer, and hands the authenticated connection and its hello to its owner.
//
// Thread-safety: a HelloAcceptor is used on its loop's thread only.
#ifndef MSCCLPP_CORE_NET_HELLO_HPP_
#define MSCCLPP_CORE_NET_HELLO_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "core/logger.hpp"
#include "core/net/event_loop.hpp"
#include "core/net/secret.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::net {

// The first 24 bytes of every hello.
struct HelloHeader {
  char magic[8];
  uint8_t secret[16];
};
static_assert(sizeof(HelloHeader) == 24, "wire layout");

// A header with `magic` (8 bytes, not NUL-terminated) and `secret`.
HelloHeader makeHelloHeader(const char* magic, const Secret& secret);

class HelloAcceptor {
 public:
  struct Options {
    std::string who;              // prefix of the warnings: "bootstrap root at 1.2.3.4:5"
    LogSubsys subsys = LogInit;   // of the warnings
    const char* magic = nullptr;  // the protocol's 8 magic bytes
    Secret secret{};
    size_t helloBytes = 0;         // header + body
    const char* stranger = "";     // why a wrong secret is dropped: "not a rank of this job"
    double handshakeSeconds = 10;  // a connection must complete its hello within this
    size_t maxPending = 256;       // connections mid-handshake; the oldest is dropped beyond it
    // Optional: a connection that presented the right magic and secret (it is one of ours) closed
    // before its hello was complete: its process died mid-handshake. Gets the peer's address text
    // and the bytes it sent (`got` of helloBytes). Called instead of the drop's WARN.
    std::function<void(const std::string& peer, const char* partial, size_t got)> onAbandoned;
  };
  // Gets a connection whose whole hello arrived with the right magic and secret (hello points to
  // its helloBytes bytes, valid during the call) and the peer's address text.
  using OnHello = std::function<void(Socket socket, const char* hello, const std::string& peer)>;

  HelloAcceptor(Socket listener, Options options, OnHello onHello);
  HelloAcceptor(const HelloAcceptor&) = delete;
  HelloAcceptor& operator=(const HelloAcceptor&) = delete;

  // Lists the listener and the connections mid-handshake for this turn (a prepare step), after
  // dropping those past their deadline.
  void watch(Watches& watches);
  SocketAddress address() const { return address_; }
  // Closes the listener and every connection mid-handshake.
  void close();
  // Logs "<who>: dropped connection from <peer>: <why>" (owners use it for their own checks).
  void warnDropped(const std::string& peer, const std::string& why) const;

 private:
  struct Pending {
    Socket socket;
    std::string peer;
    std::vector<char> hello;
    size_t got = 0;
    Deadline deadline{0};
  };
  void acceptAll();
  void service(Pending& p);
  void drop(Pending& p, const std::string& why);

  Socket listener_;
  SocketAddress address_;
  Options options_;
  OnHello onHello_;
  // Entries are closed during a turn and erased at the next watch(): callbacks of the turn point
  // into them.
  std::vector<std::unique_ptr<Pending>> pending_;
};

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_HELLO_HPP_
