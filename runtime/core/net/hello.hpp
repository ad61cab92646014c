// The one handshake of our listening sockets: bootstrap root, bootstrap peers, TCP transport.
// The connecting side sends a fixed-size hello: 8 magic bytes naming the protocol,
// the listener's 128-bit secret, then a body the protocol defines.
// With a key (the bootstrap under MSCCLPP_COMM_SECRET) the secret field carries the
// connecting side's nonce instead, and both sides prove the key: a challenge-response.
// HelloAcceptor reads hellos without blocking on its EventLoop and hands on the authenticated ones.
// It drops garbage, wrong secrets, stalled and excess connections, one WARN each.
// Thread-safety: a HelloAcceptor is used on its loop's thread only.
#ifndef MSCCLPP_CORE_NET_HELLO_HPP_
#define MSCCLPP_CORE_NET_HELLO_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "core/logger.hpp"
#include "core/net/event_loop.hpp"
#include "core/net/secret.hpp"
#include "core/net/sha256.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::net {

// The first 24 bytes of every hello.
struct HelloHeader {
  char magic[8];
  uint8_t secret[16];
};
static_assert(sizeof(HelloHeader) == 24, "wire layout");

// A header with magic, 8 bytes without a NUL, and secret.
HelloHeader makeHelloHeader(const char* magic, const Secret& secret);

// The challenge-response with a key K, after a hello whose secret field is
// the connecting side's nonce Nc. The listener answers
//   "MSCLCHAL", its nonce Ns, HMAC-SHA256(K, "mscclpp listener" magic Nc Ns)
// and the connecting side, once it checked that, sends
//   HMAC-SHA256(K, "mscclpp joiner" magic Nc Ns body)
// where body is the hello after its header. Neither side sends K.
struct HelloChallenge {
  char magic[8];  // kChallengeMagic
  uint8_t nonce[16];
  uint8_t proof[32];
};
static_assert(sizeof(HelloChallenge) == 56, "wire layout");
constexpr char kChallengeMagic[8] = {'M', 'S', 'C', 'L', 'C', 'H', 'A', 'L'};
constexpr size_t kHelloProofBytes = 32;

Digest listenerProof(const Digest& key, const char* magic, const uint8_t* joinerNonce, const uint8_t* listenerNonce);
Digest joinerProof(const Digest& key, const char* magic, const uint8_t* joinerNonce, const uint8_t* listenerNonce,
                   const void* body, size_t bodySize);

// The connecting side's half, after it sent `hello` (helloBytes long)
// on s: reads the challenge, checks the listener's proof, sends its
// own. Throws RemoteError naming `listener` when the listener cannot
// prove the key or is not one of ours.
void answerChallenge(Socket& s, const Digest& key, const void* hello, size_t helloBytes, const Deadline& deadline,
                     const std::string& listener);

class HelloAcceptor {
 public:
  struct Options {
    std::string who;              // starts the warnings: "bootstrap root at 1.2.3.4:5"
    LogSubsys subsys = LogInit;   // subsystem of the warnings
    const char* magic = nullptr;  // the protocol's 8 magic bytes
    Secret secret{};
    size_t helloBytes = 0;         // header + body
    const char* stranger = "";     // why a wrong secret is dropped: "not a rank of this job"
    double handshakeSeconds = 10;  // time a connection has to complete its hello
    size_t maxPending = 256;       // connections mid-handshake; beyond it the oldest is dropped
    // Optional.
    // Called instead of the drop's WARN when one of ours closed mid-hello:
    // its magic and secret were right,
    // so its process died during the handshake.
    // Gets the peer's address text and the got bytes it sent.
    std::function<void(const std::string& peer, const char* partial, size_t got)> onAbandoned;
    // With a key, the hello's secret field is a nonce and the peer
    // must prove the key instead (above); onAbandoned is then never
    // called, since a partial hello proves nothing.
    std::optional<Digest> key;
    const char* keyName = "";  // the key's setting, for messages: "MSCCLPP_COMM_SECRET"
  };
  // Gets a connection whose whole hello
  // arrived with the right magic and secret, and the peer's address text.
  // hello holds helloBytes bytes, valid during the call.
  using OnHello = std::function<void(Socket socket, const char* hello, const std::string& peer)>;

  HelloAcceptor(Socket listener, Options options, OnHello onHello);
  HelloAcceptor(const HelloAcceptor&) = delete;
  HelloAcceptor& operator=(const HelloAcceptor&) = delete;

  // A prepare step: drops connections past their deadline,
  // then lists the listener and the rest.
  void watch(Watches& watches);
  SocketAddress address() const { return address_; }
  // Closes the listener and every connection mid-handshake.
  void close();
  // Logs "<who>: dropped connection from <peer>: <why>",
  // also for the owners' own checks.
  void warnDropped(const std::string& peer, const std::string& why) const;

 private:
  struct Pending {
    Socket socket;
    std::string peer;
    std::vector<char> hello;
    size_t got = 0;
    Deadline deadline{0};
    // With a key: the challenge went out, the proof is being read.
    bool challenged = false;
    uint8_t nonce[16] = {};
    uint8_t proof[kHelloProofBytes] = {};
    size_t proofGot = 0;
  };
  void acceptAll();
  void service(Pending& p);
  // With a key: sends the challenge once the hello is in, then checks the proof.
  void serviceKeyed(Pending& p);
  void drop(Pending& p, const std::string& why);

  Socket listener_;
  SocketAddress address_;
  Options options_;
  OnHello onHello_;
  // Entries closed during a turn are erased at the next watch():
  // the turn's callbacks point into them.
  std::vector<std::unique_ptr<Pending>> pending_;
};

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_HELLO_HPP_
