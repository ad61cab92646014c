#include "transport/tcp/engine.hpp"

#include <algorithm>
#include <cstring>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/random.hpp"
#include "transport/device_memory.hpp"

namespace mscclpp::transport::tcp {

namespace {
constexpr double kControlSeconds = 10.0;  // hello acks, ACK and ERROR frames, frame tails
constexpr size_t kMaxPending = 64;
constexpr uint64_t kReadBudget = 64ull << 20;  // per link per wakeup, for fairness between peers
}  // namespace

// ---- Link ---------------------------------------------------------------------------------------

Link::Link(std::string who, int remoteRank, uint64_t remoteEngineId, net::Socket outSocket, net::Socket inSocket)
    : out(std::move(outSocket)),
      in(std::move(inSocket)),
      who_(std::move(who)),
      remoteRank_(remoteRank),
      remoteEngineId_(remoteEngineId) {}

void Link::throwIfFailed(const std::string& what) const {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(stateMutex_);
  throw Error(errorCode_, what + ": " + error_);
}

void Link::send(const WireFrame& frame, const void* payload, size_t bytes, const Deadline& deadline,
                const std::string& what) {
  throwIfFailed(what);
  WireFrame f = frame;
  iovec iov[2] = {{&f, sizeof(f)}, {const_cast<void*>(payload), bytes}};
  try {
    out.sendAllv(iov, payload ? 2 : 1, deadline, what);
  } catch (const Error& e) {
    sendFailed(e, what);
  }
}

void Link::sendMore(const void* payload, size_t bytes, const Deadline& deadline, const std::string& what) {
  try {
    out.sendAll(payload, bytes, deadline, what);
  } catch (const Error& e) {
    sendFailed(e, what);
  }
}

void Link::sendFailed(const Error& e, const std::string& what) {
  // A frame cut short leaves the stream unusable: the link fails for good.
  if (e.code() == ErrorCode::RemoteError) {
    fail(ErrorCode::RemoteError, strFormat("rank %d closed its TCP connection (it exited, crashed or destroyed the "
                                           "connection)",
                                           remoteRank_));
  } else {
    std::string text = e.what();
    if (text.compare(0, what.size(), what) == 0) text = text.substr(what.size());
    while (!text.empty() && (text[0] == ':' || text[0] == ' ')) text.erase(0, 1);
    fail(e.code(), text);
  }
  throwIfFailed(what);
  throw Error(e.code(), e.what());
}

void Link::waitAck(uint64_t seq, const Deadline& deadline, const std::string& what) {
  std::unique_lock<std::mutex> lock(stateMutex_);
  while (acked_ < seq) {
    if (failed_.load()) throw Error(errorCode_, what + ": " + error_);
    if (deadline.expired()) {
      lock.unlock();
      throwTimeout(deadline, what);
    }
    int ms = deadline.remainingMs();
    stateCv_.wait_for(lock, std::chrono::milliseconds(ms < 0 || ms > 200 ? 200 : ms + 1));
  }
  // A rejection arrives before the ACK of the
  // flush that follows it: report it, not success.
  if (failed_.load()) throw Error(errorCode_, what + ": " + error_);
}

void Link::acknowledged(uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    acked_ = std::max(acked_, seq);
  }
  stateCv_.notify_all();
}

void Link::fail(ErrorCode code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (failed_.load()) return;
    errorCode_ = code;
    error_ = message;
    failed_.store(true, std::memory_order_release);
  }
  stateCv_.notify_all();
}

// ---- Engine -------------------------------------------------------------------------------------

Engine::Engine(int rank, const net::NetInterface& iface)
    : rank_(rank),
      who_(strFormat("rank %d TCP transport", rank)),
      secret_(net::randomSecret()),
      id_(randomU64("the TCP engine id")),
      keys_(std::make_shared<KeyRegistry>()),
      loop_(who_, rank) {
  net::SocketAddress bindAddr = iface.address;
  bindAddr.setPort(0);
  net::Socket listener = net::Socket::listenOn(bindAddr);
  address_ = listener.localAddress();
  acceptor_ = std::make_unique<net::HelloAcceptor>(
      std::move(listener),
      net::HelloAcceptor::Options{who_, LogTransport, kHelloMagic, secret_, sizeof(Hello),
                                  "not a peer of this communicator", kControlSeconds, kMaxPending},
      [this](net::Socket socket, const char* hello, const std::string& peer) { park(std::move(socket), hello, peer); });
  staging_.resize(kStagingBytes);
  net::EventLoop::Hooks hooks;
  hooks.prepare = [this](net::Watches& watches) { return prepare(watches); };
  hooks.onFailure = [this](const std::exception& e) {
    MSCCLPP_WARN(LogTransport, "%s: receiver thread failed: %s", who_.c_str(), e.what());
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& l : links_) l->fail(ErrorCode::InternalError, who_ + ": receiver thread failed: " + e.what());
  };
  hooks.onExit = [this]() {
    acceptor_->close();
    turnLinks_.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    // After an abort a sending thread may still hold a link:
    // its sockets were shut down and close with the Link
    // itself, so no fd number is reused under that thread.
    links_.clear();
    parked_.clear();
  };
  loop_.start(std::move(hooks));
  MSCCLPP_INFO(LogTransport, "%s listening on %s (interface %s)", who_.c_str(), address_.toString().c_str(),
               iface.name.c_str());
}

Engine::~Engine() { loop_.stop(); }

void Engine::abort() {
  if (aborted_.exchange(true)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& l : links_) {
    l->fail(ErrorCode::Aborted, "the communicator was aborted");
    l->out.shutdown();
    l->in.shutdown();
  }
  parkedCv_.notify_all();
  wake();
}

net::Socket Engine::claim(uint64_t connId, const Deadline& deadline, const std::string& what) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    MSCCLPP_ENFORCE(!aborted_.load(), ErrorCode::Aborted, "%s: the communicator was aborted", what.c_str());
    auto it = parked_.find(connId);
    // A socket already here is taken; none will come from a peer of a failed communicator.
    MSCCLPP_ENFORCE(it != parked_.end() || !setupFailed_.load(), ErrorCode::RemoteError, "%s: the communicator failed",
                    what.c_str());
    if (it != parked_.end()) {
      net::Socket s = std::move(it->second);
      parked_.erase(it);
      return s;
    }
    if (deadline.expired()) {
      lock.unlock();
      throwTimeout(deadline, what);
    }
    int ms = deadline.remainingMs();
    parkedCv_.wait_for(lock, std::chrono::milliseconds(ms < 0 || ms > 200 ? 200 : ms + 1));
  }
}

void Engine::failSetup() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    setupFailed_.store(true);
  }
  parkedCv_.notify_all();
}

void Engine::attach(std::shared_ptr<Link> link) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load()) {
      link->fail(ErrorCode::Aborted, "the communicator was aborted");
      return;
    }
    links_.push_back(std::move(link));
  }
  wake();
}

void Engine::release(const std::shared_ptr<Link>& link) {
  link->released.store(true);
  wake();
}

void Engine::sendBack(Link& link, const WireFrame& f, const std::string& text) {
  WireFrame frame = f;
  iovec iov[2] = {{&frame, sizeof(frame)}, {const_cast<char*>(text.data()), text.size()}};
  try {
    link.in.sendAllv(iov, text.empty() ? 1 : 2, Deadline(kControlSeconds), link.who() + ": reply to the peer");
  } catch (const Error& e) {
    link.fail(e.code(), e.what());
    link.dataRx.closed = true;
  }
}

void Engine::beginWrite(Link& link) {
  Link::DataRx& rx = link.dataRx;
  const WireFrame& h = rx.header;
  rx.target = nullptr;
  rx.deviceTarget = nullptr;
  rx.rejection.clear();
  rx.remaining = h.c;
  Region region;
  if (!keys_->find(h.a, &region)) {
    rx.rejection = strFormat(
        "%s: write #%llu of %llu bytes names unknown memory key %llu (deregistered, or from "
        "another communicator)",
        who_.c_str(), (unsigned long long)rx.frameIndex, (unsigned long long)h.c, (unsigned long long)h.a);
  } else if (h.b > region.size || h.c > region.size - h.b) {
    rx.rejection = strFormat("%s: write #%llu of %llu bytes at offset %llu is outside the %llu-byte memory (key %llu)",
                             who_.c_str(), (unsigned long long)rx.frameIndex, (unsigned long long)h.c,
                             (unsigned long long)h.b, (unsigned long long)region.size, (unsigned long long)h.a);
  } else if (region.device) {
    rx.deviceTarget = region.base + h.b;
  } else {
    rx.target = region.base + h.b;
  }
  if (!rx.rejection.empty() && rx.firstRejectedWrite == 0) rx.firstRejectedWrite = rx.frameIndex;
  rx.inPayload = rx.remaining > 0;
  if (!rx.inPayload && !rx.rejection.empty()) {
    sendBack(link, WireFrame{kWireMagic, kFrameError, rx.frameIndex, 0, rx.rejection.size()}, rx.rejection);
  }
}

void Engine::applyControl(Link& link) {
  Link::DataRx& rx = link.dataRx;
  const WireFrame& h = rx.header;
  if (h.type == kFrameFlush) {
    // Everything before this frame has been applied: frames are handled in order.
    sendBack(link, WireFrame{kWireMagic, kFrameAck, h.a, 0, 0}, "");
    return;
  }
  Region region;
  std::string problem;
  if (rx.firstRejectedWrite != 0) {
    problem = strFormat(
        "%s: update #%llu refused: write #%llu before it on this connection was rejected, so the "
        "signal would announce data that never arrived",
        who_.c_str(), (unsigned long long)rx.frameIndex, (unsigned long long)rx.firstRejectedWrite);
  } else if (!keys_->find(h.a, &region)) {
    problem = strFormat("%s: update #%llu names unknown memory key %llu", who_.c_str(),
                        (unsigned long long)rx.frameIndex, (unsigned long long)h.a);
  } else if (h.b > region.size || region.size - h.b < 8 || ((reinterpret_cast<uintptr_t>(region.base) + h.b) & 7)) {
    problem = strFormat("%s: update #%llu at offset %llu is outside or misaligned in the %llu-byte memory (key %llu)",
                        who_.c_str(), (unsigned long long)rx.frameIndex, (unsigned long long)h.b,
                        (unsigned long long)region.size, (unsigned long long)h.a);
  }
  if (!problem.empty()) {
    sendBack(link, WireFrame{kWireMagic, kFrameError, rx.frameIndex, 0, problem.size()}, problem);
    return;
  }
  uint64_t value = h.c;
  if (region.device) {
    copyHostToDevice(region.base + h.b, &value, sizeof(value), "TCP update of a device counter");
  } else {
    // Release: the writes applied before this frame
    // are visible to whoever acquires the counter.
    __atomic_store_n(reinterpret_cast<uint64_t*>(region.base + h.b), value, __ATOMIC_RELEASE);
  }
}

bool Engine::serviceData(Link& link) {
  Link::DataRx& rx = link.dataRx;
  uint64_t budget = kReadBudget;
  const std::string what = link.who() + ": receiving";
  try {
    while (budget > 0) {
      if (!rx.inPayload) {
        size_t n = link.in.recvSome(reinterpret_cast<char*>(&rx.header) + rx.headerGot,
                                    sizeof(rx.header) - rx.headerGot, what);
        if (n == 0) return true;
        rx.headerGot += n;
        if (rx.headerGot < sizeof(rx.header)) continue;
        rx.headerGot = 0;
        ++rx.frameIndex;
        const WireFrame& h = rx.header;
        if (h.magic != kWireMagic || (h.type != kFrameWrite && h.type != kFrameUpdate && h.type != kFrameFlush)) {
          std::string why = strFormat("rank %d sent a malformed TCP frame #%llu (magic 0x%08x, type %u)",
                                      link.remoteRank(), (unsigned long long)rx.frameIndex, h.magic, h.type);
          MSCCLPP_WARN(LogTransport, "%s: %s; closing the connection", link.who().c_str(), why.c_str());
          link.fail(ErrorCode::RemoteError, why);
          return false;
        }
        if (h.type == kFrameWrite) {
          beginWrite(link);
        } else {
          applyControl(link);
        }
        if (rx.closed) return false;
        continue;
      }
      size_t n;
      if (rx.target != nullptr) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(rx.remaining, budget));
        n = link.in.recvSome(rx.target, want, what);
        if (n == 0) return true;
        rx.target += n;
      } else {
        // Staged device memory, or a rejected write being discarded: the
        // sender is mid-frame, so the rest of this piece follows at once.
        n = static_cast<size_t>(std::min<uint64_t>(rx.remaining, staging_.size()));
        link.in.recvAll(staging_.data(), n, Deadline(kControlSeconds), what);
        if (rx.deviceTarget != nullptr) {
          copyHostToDevice(rx.deviceTarget, staging_.data(), n, "TCP write into device memory");
          rx.deviceTarget += n;
        }
      }
      rx.remaining -= n;
      budget -= std::min<uint64_t>(budget, n);
      if (rx.remaining == 0) {
        rx.inPayload = false;
        if (!rx.rejection.empty()) {
          MSCCLPP_WARN(LogTransport, "%s", rx.rejection.c_str());
          sendBack(link, WireFrame{kWireMagic, kFrameError, rx.frameIndex, 0, rx.rejection.size()}, rx.rejection);
          rx.rejection.clear();
          if (rx.closed) return false;
        }
      }
    }
    return true;
  } catch (const Error& e) {
    if (!link.released.load() && !aborted_.load()) {
      std::string why = e.code() == ErrorCode::RemoteError
                            ? strFormat(
                                  "rank %d closed its TCP connection%s (it exited, crashed or destroyed the "
                                  "connection)",
                                  link.remoteRank(), rx.inPayload ? " in the middle of a write" : "")
                            : std::string(e.what());
      MSCCLPP_INFO(LogTransport, "%s: %s", link.who().c_str(), why.c_str());
      link.fail(e.code() == ErrorCode::RemoteError ? ErrorCode::RemoteError : e.code(), why);
    }
    return false;
  }
}

bool Engine::serviceAcks(Link& link) {
  Link::AckRx& rx = link.ackRx;
  const std::string what = link.who() + ": receiving acknowledgements";
  try {
    for (int i = 0; i < 1024; ++i) {
      if (rx.inText) {
        size_t n = link.out.recvSome(&rx.text[rx.textGot], rx.text.size() - rx.textGot, what);
        if (n == 0) return true;
        rx.textGot += n;
        if (rx.textGot < rx.text.size()) continue;
        rx.inText = false;
        link.fail(ErrorCode::RemoteError, rx.text);
        continue;
      }
      size_t n =
          link.out.recvSome(reinterpret_cast<char*>(&rx.header) + rx.headerGot, sizeof(rx.header) - rx.headerGot, what);
      if (n == 0) return true;
      rx.headerGot += n;
      if (rx.headerGot < sizeof(rx.header)) continue;
      rx.headerGot = 0;
      const WireFrame& h = rx.header;
      if (h.magic == kWireMagic && h.type == kFrameAck) {
        link.acknowledged(h.a);
      } else if (h.magic == kWireMagic && h.type == kFrameError && h.c > 0 && h.c <= kMaxErrorText) {
        rx.text.assign(static_cast<size_t>(h.c), '\0');
        rx.textGot = 0;
        rx.inText = true;
      } else {
        std::string why =
            strFormat("rank %d sent a malformed TCP reply (magic 0x%08x, type %u)", link.remoteRank(), h.magic, h.type);
        MSCCLPP_WARN(LogTransport, "%s: %s", link.who().c_str(), why.c_str());
        link.fail(ErrorCode::RemoteError, why);
        return false;
      }
    }
    return true;
  } catch (const Error& e) {
    if (!link.released.load() && !aborted_.load()) {
      std::string why = e.code() == ErrorCode::RemoteError
                            ? strFormat(
                                  "rank %d closed its TCP connection (it exited, crashed or destroyed the "
                                  "connection)",
                                  link.remoteRank())
                            : std::string(e.what());
      link.fail(e.code(), why);
    }
    return false;
  }
}

void Engine::park(net::Socket socket, const char* helloBytes, const std::string& peer) {
  Hello hello;
  std::memcpy(&hello, helloBytes, sizeof(hello));
  try {
    socket.sendAll(kHelloAckMagic, 8, Deadline(kControlSeconds), who_ + ": hello reply");
  } catch (const Error& e) {
    MSCCLPP_WARN(LogTransport, "%s: %s", who_.c_str(), e.what());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (parked_.count(hello.connId)) {
      MSCCLPP_WARN(LogTransport, "%s: dropped a second connection with id %016llx from rank %d (%s)", who_.c_str(),
                   (unsigned long long)hello.connId, hello.fromRank, peer.c_str());
      return;
    }
    parked_[hello.connId] = std::move(socket);
  }
  parkedCv_.notify_all();
}

bool Engine::prepare(net::Watches& watches) {
  if (aborted_.load()) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& l : links_) {
      if (l->released.load()) {
        l->out.close();
        l->in.close();
      }
    }
    links_.erase(std::remove_if(links_.begin(), links_.end(), [](const auto& l) { return l->released.load(); }),
                 links_.end());
    turnLinks_ = links_;
  }
  acceptor_->watch(watches);
  for (auto& l : turnLinks_) {
    Link* link = l.get();
    watches.add(link->dataRx.closed ? -1 : link->in.fd(), [this, link]() {
      if (!serviceData(*link)) link->dataRx.closed = true;
    });
    watches.add(link->ackRx.closed ? -1 : link->out.fd(), [this, link]() {
      if (!serviceAcks(*link)) link->ackRx.closed = true;
    });
  }
  return true;
}

}  // namespace mscclpp::transport::tcp
