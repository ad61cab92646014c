// The TCP MessageEndpoint: one listening socket and one progress
// thread per rank. A rank sends to a peer over its own outbound
// socket, opened on first use with the secret; the peer's
// progress thread reads every inbound socket into its mailbox.
// So the messages of one (sender, key) arrive in order, and a
// slow receiver never blocks a sender's other traffic.
// Liveness (tcp_liveness.cc): heartbeats to the ring
// neighbours and a watch over every connection find dead
// and departed peers (docs/failure-handling.md). Destroying
// an endpoint, or exiting with it alive, says goodbye first;
// abort() does not: for the peers an aborted rank failed.
#ifndef MSCCLPP_BOOTSTRAP_TCP_ENDPOINT_HPP_
#define MSCCLPP_BOOTSTRAP_TCP_ENDPOINT_HPP_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "bootstrap/courier.hpp"
#include "bootstrap/message_endpoint.hpp"
#include "bootstrap/wire.hpp"
#include "core/net/event_loop.hpp"
#include "core/net/hello.hpp"
#include "core/net/secret.hpp"
#include "core/net/socket.hpp"

namespace mscclpp::bootstrap {

class TcpEndpoint : public detail::MessageEndpoint {
 public:
  // Starts the progress thread on `listener` (bound and listening).
  // With a key (MSCCLPP_COMM_SECRET) connections prove it instead
  // of sending the secret, both ways.
  TcpEndpoint(int rank, int nRanks, const net::Secret& secret, const std::optional<net::Digest>& key,
              net::Socket listener, size_t maxMessageBytes);
  // Leaves on purpose: a goodbye on every connection, then everything closes.
  ~TcpEndpoint() override;
  // At exit with the endpoint alive: the same goodbye, then nothing more
  // is sent. Bounded; from the exiting thread (exit_goodbye.cc).
  void sayGoodbyeAtExit();
  // The destructor's goodbye and close, keeping the object: later
  // sends and recvs fail. For a communicator finalized before it goes.
  void leave();

  // The listening address of every rank, known
  // after the rendezvous; before it, sends fail.
  void setPeerAddresses(std::vector<net::SocketAddress> addresses);
  net::SocketAddress listenAddress() const { return listenAddress_; }
  // After setPeerAddresses: connects to the ring neighbours within
  // `deadline`, then starts the heartbeats and the watch over them.
  void startLiveness(const Deadline& deadline);

  int rank() const override { return rank_; }
  int nRanks() const override { return nRanks_; }
  void send(int peer, const detail::MessageKey& key, const void* data, size_t size, const Deadline& deadline,
            const std::string& what) override;
  std::vector<char> recv(int peer, const detail::MessageKey& key, size_t maxBytes, const Deadline& deadline,
                         const std::string& what, const detail::CancelToken* token) override;
  void abort() override;
  void wakeAll() override { mailbox_.wakeAll(); }
  detail::PeerFailures& failures() override { return failures_; }
  void setRequestHandler(uint64_t ns, detail::RequestHandler handler) override;

 private:
  struct Outbound {
    std::mutex mutex;
    net::Socket socket;
    std::atomic<int> fd{-1};  // once set, stable until destruction; abort and the watch read it
    std::atomic<int64_t> lastSendMs{0};
    std::string brokenReason;  // "" while usable
  };
  struct Inbound {
    net::Socket socket;
    int fromRank = -1;
    std::string from;  // the connection's source address, "10.0.0.2:51234"
    FrameHeader header{};
    size_t headerGot = 0;
    bool inPayload = false;
    std::vector<char> payload;
    size_t payloadGot = 0;
  };
  // The progress thread's view of each peer, touched on that thread only.
  struct PeerWatch {
    int64_t lastHeardMs = 0;     // steady-clock ms of the last bytes from it
    bool neighbour = false;      // watched with heartbeats
    bool left = false;           // said goodbye, or a rank said it left
    std::string leftReason;      // why, for when everything it sent was read
    int leftToldBy = -1;         // the rank that said it left; -1: its own goodbye
    int64_t emptySinceMs = 0;    // our outbound queue to it was last seen with nothing in flight
    int64_t stoppedSinceMs = 0;  // silent while its host acknowledges; 0 when it is not
    int64_t nextStoppedWarnMs = 0;
    bool outboundClosed = false;
    FrameHeader outboundBytes{};  // what it wrote on our outbound socket: a goodbye at most
    size_t outboundGot = 0;
  };

  // The progress thread's steps: EventLoop hooks and callbacks.
  bool prepare(net::Watches& watches);
  void admit(net::Socket socket, const char* hello, const std::string& peer);
  // Reads what is available on one inbound connection; false when it must be closed.
  bool service(Inbound& in);
  // A complete frame from `from`: control frames are served here, the others queued.
  void dispatch(int from, const FrameHeader& h, std::vector<char> payload);
  void connectOutbound(int peer, Outbound& out, const Deadline& deadline, const std::string& what);

  // ---- liveness (tcp_liveness.cc) ----
  // Watches our outbound sockets: the peer
  // writes only a goodbye on them, then closes.
  void watchOutbound(net::Watches& watches);
  void serviceOutbound(int peer);
  void sendHeartbeats(int64_t nowMs);
  void checkNeighbours(int64_t nowMs);
  // A silent neighbour whose host acknowledges: WARN, and wait for it.
  void noteStopped(int peer, int64_t nowMs, double silentSeconds);
  // The peer left on purpose: it said goodbye (why: GoodbyeWhy), or
  // rank toldBy said so (why: the reason it sent). drained: everything
  // it sent us was read, its goodbye coming last on its own connection:
  // then recvs from it fail, the listeners hear it, and the ring is told.
  void peerLeft(int peer, bool drained, int toldBy = -1, const std::string& why = std::string());
  // Whether an inbound connection from peer is still open.
  bool inboundOpenFrom(int peer) const;
  // What a goodbye's tag says of how its sender left.
  static std::string goodbyeReason(int32_t why);
  // The peer failed: the listeners are told, and every other
  // rank when tellOthers. Recvs from it fail once `drained`,
  // when nothing it sent can still be on the way in.
  void peerFailed(int peer, const std::string& reason, bool tellOthers, bool drained = true);
  // "rank 3 at 10.0.0.2:41234"
  std::string peerName(int peer) const;
  // The same for an inbound connection's sender. A ring
  // neighbour may connect before the rendezvous table
  // arrives; then this names the connection's source address.
  std::string inboundPeerName(const Inbound& in) const;
  // leave() and the destructor: goodbyes, then the threads stop. Once.
  void closeWithGoodbye();
  // A goodbye saying why on every outbound socket, best effort and bounded.
  void sayGoodbyeOnOutbound(int32_t why);
  // The same on every inbound socket; progress thread only.
  void sayGoodbyeOnInbound(int32_t why);

  const int rank_;
  const int nRanks_;
  const net::Secret secret_;
  const std::optional<net::Digest> key_;
  const size_t maxMessageBytes_;
  net::SocketAddress listenAddress_;
  std::string who_;  // "bootstrap rank 2/8"
  detail::Mailbox mailbox_;
  detail::PeerFailures failures_;
  std::vector<std::unique_ptr<Outbound>> outbound_;
  std::vector<net::SocketAddress> peers_;
  std::mutex handlersMutex_;
  std::map<uint64_t, std::shared_ptr<const detail::RequestHandler>> handlers_;
  // Progress thread only: one authenticated connection
  // per peer, the open connections, the watch.
  std::vector<bool> connectedFrom_;
  std::vector<std::unique_ptr<Inbound>> inbound_;
  std::vector<PeerWatch> watch_;
  int64_t nextHeartbeatMs_ = 0;
  double heartbeatIntervalSeconds_ = 1;
  double heartbeatTimeoutSeconds_ = 0;
  std::atomic<int64_t> livenessStartMs_{0};  // 0: not started
  std::atomic<bool> peersKnown_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> aborted_{false};
  std::atomic<bool> closed_{false};  // closeWithGoodbye ran
  // sayGoodbyeAtExit asks the progress thread for the inbound goodbyes.
  std::mutex exitMutex_;
  std::condition_variable exitDone_;
  bool exitGoodbyeAsked_ = false;
  bool exitGoodbyeSent_ = false;
  detail::Courier courier_;
  net::HelloAcceptor acceptor_;
  net::EventLoop progress_;  // last: its thread stops before the members above go
};

// The endpoints alive in this process, for the goodbye at exit
// (exit_goodbye.cc): an endpoint is listed while it can say one.
void listForExitGoodbye(TcpEndpoint* endpoint);
void unlistForExitGoodbye(TcpEndpoint* endpoint);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_TCP_ENDPOINT_HPP_
