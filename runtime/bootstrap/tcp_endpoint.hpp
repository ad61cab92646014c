// The TCP MessageEndpoint: one listening socket and one progress thread per rank. A rank sends to a
// peer over its own outbound socket to that peer (connected on first use, presenting the secret);
// the peer's progress thread reads frames from all inbound sockets into its mailbox. Messages of
// one (sender, key) therefore arrive in order, and a slow receiver never blocks a sender's other
// traffic (the progress thread always drains).
//
// Faults: an inbound socket that closes marks that peer as gone (recv from it fails once its
// queued messages are consumed); a malformed frame marks it as broken; connections with a wrong
// secret or garbage are dropped with a WARN. abort() wakes everything without waiting for peers.
#ifndef MSCCLPP_BOOTSTRAP_TCP_ENDPOINT_HPP_
#define MSCCLPP_BOOTSTRAP_TCP_ENDPOINT_HPP_

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/mailbox.hpp"
#include "bootstrap/message_endpoint.hpp"
#include "core/net/event_loop.hpp"
#include "core/net/hello.hpp"
#include "core/net/secret.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::bootstrap {

class TcpEndpoint : public detail::MessageEndpoint {
 public:
  // Starts the progress thread on `listener` (bound and listening).
  TcpEndpoint(int rank, int nRanks, const net::Secret& secret, net::Socket listener, size_t maxMessageBytes);
  ~TcpEndpoint() override;

  // The listening address of every rank, known after the rendezvous; before it, sends fail.
  void setPeerAddresses(std::vector<net::SocketAddress> addresses);
  net::SocketAddress listenAddress() const { return listenAddress_; }

  int rank() const override { return rank_; }
  int nRanks() const override { return nRanks_; }
  void send(int peer, const detail::MessageKey& key, const void* data, size_t size, const Deadline& deadline,
            const std::string& what) override;
  std::vector<char> recv(int peer, const detail::MessageKey& key, size_t maxBytes, const Deadline& deadline,
                         const std::string& what, const detail::CancelToken* token) override;
  void abort() override;
  void wakeAll() override { mailbox_.wakeAll(); }

 private:
  struct Outbound {
    std::mutex mutex;
    net::Socket socket;
    std::atomic<int> fdForAbort{-1};
    std::string brokenReason;  // "" while usable
  };
  struct Inbound;

  // The progress thread's steps (EventLoop hooks and callbacks).
  bool prepare(net::Watches& watches);
  void admit(net::Socket socket, const char* hello, const std::string& peer);
  // Reads what is available on one inbound connection; false when it must be closed.
  bool service(Inbound& in);
  void connectOutbound(int peer, Outbound& out, const Deadline& deadline, const std::string& what);

  const int rank_;
  const int nRanks_;
  const net::Secret secret_;
  const size_t maxMessageBytes_;
  net::SocketAddress listenAddress_;
  std::string who_;  // "bootstrap rank 2/8"
  detail::Mailbox mailbox_;
  std::vector<std::unique_ptr<Outbound>> outbound_;
  std::vector<net::SocketAddress> peers_;
  // Progress thread only: one authenticated connection per peer, and the open connections.
  std::vector<bool> connectedFrom_;
  std::vector<std::unique_ptr<Inbound>> inbound_;
  std::atomic<bool> peersKnown_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> aborted_{false};
  net::HelloAcceptor acceptor_;
  net::EventLoop progress_;  // last: its thread stops before the members above go
};

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_TCP_ENDPOINT_HPP_
