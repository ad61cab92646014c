// The TCP transport's engine: one per communicator, with
// a listening socket and a receiver thread that applies
// the peers' frames to local memory in arrival order.
// A connection is a Link of two sockets, one per direction of data.
// Each engine reads the peer's data frames and answers ACK or ERROR
// on the same socket. So every socket direction has one writer and
// one reader, and two ranks pushing large writes at each other
// cannot deadlock. A socket opens with a hello carrying the target
// engine's secret. docs/runtime.md, "Connections", has the protocol.
#ifndef MSCCLPP_TRANSPORT_TCP_ENGINE_HPP_
#define MSCCLPP_TRANSPORT_TCP_ENGINE_HPP_

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/net/event_loop.hpp"
#include "core/net/hello.hpp"
#include "core/net/net_interface.hpp"
#include "core/net/secret.hpp"
#include "core/net/socket.hpp"
#include "mscclpp/errors.hpp"
#include "transport/tcp/memory.hpp"

namespace mscclpp::transport::tcp {

// The bounce buffer between a link and device memory, per direction.
inline constexpr size_t kStagingBytes = 4 << 20;

// A 32-byte frame header, then a WRITE's payload or an ERROR's text.
// Fields a, b, c: WRITE(key, offset, size), UPDATE(key, offset, value),
// FLUSH(seq), ACK(seq), ERROR(seq of the rejected frame, text length).
struct WireFrame {
  uint32_t magic;
  uint32_t type;
  uint64_t a;
  uint64_t b;
  uint64_t c;
};
static_assert(sizeof(WireFrame) == 32, "wire layout");
constexpr uint32_t kWireMagic = 0x5054534d;  // "MSTP"
enum FrameType : uint32_t { kFrameWrite = 1, kFrameUpdate = 2, kFrameFlush = 3, kFrameAck = 4, kFrameError = 5 };
constexpr uint64_t kMaxErrorText = 4096;

constexpr char kHelloMagic[8] = {'M', 'S', 'C', 'L', 'T', 'C', 'P', '1'};
constexpr char kHelloAckMagic[8] = {'M', 'S', 'C', 'L', 'T', 'C', 'P', 'A'};  // the engine's reply to a hello
struct Hello {
  net::HelloHeader header;  // magic "MSCLTCP1", the target engine's secret
  uint64_t connId;
  int32_t fromRank;
  uint32_t reserved;
};
static_assert(sizeof(Hello) == 40, "wire layout");

// Both sockets of one connection, shared by the TcpConnection's
// sending and flushing threads and the engine's receiver thread.
class Link {
 public:
  Link(std::string who, int remoteRank, uint64_t remoteEngineId, net::Socket out, net::Socket in);

  const std::string& who() const { return who_; }
  int remoteRank() const { return remoteRank_; }
  uint64_t remoteEngineId() const { return remoteEngineId_; }

  // ---- sending thread ----
  // Sends one frame, with an optional payload, on the
  // out socket. Fails with the link's error, if any.
  void send(const WireFrame& frame, const void* payload, size_t bytes, const Deadline& deadline,
            const std::string& what);
  // Sends the next piece of a WRITE's payload, after send() sent its header alone.
  void sendMore(const void* payload, size_t bytes, const Deadline& deadline, const std::string& what);
  std::mutex& sendMutex() { return sendMutex_; }
  uint64_t nextSequence() { return ++sequence_; }
  // Waits until the peer acknowledged flush
  // `seq`; throws the link's error or Timeout.
  void waitAck(uint64_t seq, const Deadline& deadline, const std::string& what);
  // Throws the first recorded error of earlier asynchronous operations, if any.
  void throwIfFailed(const std::string& what) const;

  // ---- receiver thread ----
  void acknowledged(uint64_t seq);
  // Records the first error and wakes waiters.
  void fail(ErrorCode code, const std::string& message);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Records a failed send, stored without the prefix `what`, and throws it.
  [[noreturn]] void sendFailed(const Error& e, const std::string& what);

  // Receive state, engine thread only.
  struct DataRx {
    WireFrame header{};
    size_t headerGot = 0;
    bool inPayload = false;
    char* target = nullptr;  // host destination of the payload (nullptr: discard or staging)
    char* deviceTarget = nullptr;
    uint64_t remaining = 0;
    uint64_t frameIndex = 0;  // frames received so far (for error messages)
    std::string rejection;    // why the current WRITE is being discarded
    // The first WRITE this link rejected, or 0. Later UPDATEs are
    // refused: a signal must never announce data that did not arrive,
    // and the sender may have sent it before our ERROR reached it.
    uint64_t firstRejectedWrite = 0;
    bool closed = false;
  };
  struct AckRx {
    WireFrame header{};
    size_t headerGot = 0;
    std::string text;  // ERROR text being read
    size_t textGot = 0;
    bool inText = false;
    bool closed = false;
  };
  net::Socket out;
  net::Socket in;
  DataRx dataRx;
  AckRx ackRx;
  std::atomic<bool> released{false};

 private:
  std::string who_;
  int remoteRank_;
  uint64_t remoteEngineId_;
  std::mutex sendMutex_;
  uint64_t sequence_ = 0;
  mutable std::mutex stateMutex_;
  std::condition_variable stateCv_;
  uint64_t acked_ = 0;
  std::atomic<bool> failed_{false};
  ErrorCode errorCode_ = ErrorCode::RemoteError;
  std::string error_;
};

class Engine {
 public:
  // Listens on iface at any free port and starts the
  // receiver thread. rank is for log lines and errors.
  Engine(int rank, const net::NetInterface& iface);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  uint64_t id() const { return id_; }
  const net::Secret& secret() const { return secret_; }
  net::SocketAddress address() const { return address_; }
  const std::shared_ptr<KeyRegistry>& keys() const { return keys_; }

  // The incoming socket a peer opened with connId after a valid hello; waits for it.
  net::Socket claim(uint64_t connId, const Deadline& deadline, const std::string& what);
  // Starts receiving on the link's sockets.
  void attach(std::shared_ptr<Link> link);
  // Stops receiving on the link and closes its sockets, on the receiver thread.
  void release(const std::shared_ptr<Link>& link);
  // Shuts every socket down and stops the thread
  // without waiting for peers. Idempotent.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // Ends claim() waits, now and later, with RemoteError: the communicator failed.
  void failSetup();

 private:
  // The receiver thread's steps: EventLoop hooks and callbacks.
  bool prepare(net::Watches& watches);
  void park(net::Socket socket, const char* hello, const std::string& peer);
  void wake() { loop_.wake(); }
  // Reads and applies what is available; false when the socket must be dropped.
  bool serviceData(Link& link);
  bool serviceAcks(Link& link);
  void applyControl(Link& link);
  void beginWrite(Link& link);
  void sendBack(Link& link, const WireFrame& f, const std::string& text);

  const int rank_;
  std::string who_;
  net::Secret secret_;
  uint64_t id_;
  net::SocketAddress address_;
  std::shared_ptr<KeyRegistry> keys_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> setupFailed_{false};

  std::mutex mutex_;  // guards links_, parked_
  std::condition_variable parkedCv_;
  std::vector<std::shared_ptr<Link>> links_;
  std::map<uint64_t, net::Socket> parked_;
  std::vector<std::shared_ptr<Link>> turnLinks_;  // receiver thread: this turn's links
  std::vector<char> staging_;                     // receiver thread: device-memory writes and discarded payloads
  std::unique_ptr<net::HelloAcceptor> acceptor_;
  net::EventLoop loop_;  // last: its thread stops before the members above go
};

}  // namespace mscclpp::transport::tcp

#endif  // MSCCLPP_TRANSPORT_TCP_ENGINE_HPP_
