#include "bootstrap/root.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "bootstrap/wire.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/net/event_loop.hpp"
#include "core/net/hello.hpp"

namespace mscclpp::bootstrap {

namespace {

constexpr size_t kMaxPending = 256;  // unauthenticated connections kept at once; the oldest go first
constexpr double kMaxHandshakeSeconds = 10.0;
// After a failed rendezvous the root answers
// late ranks with the failure for this long.
constexpr double kLingerSeconds = 30.0;
// A rank waits the whole timeout from its own start. The root
// names the missing ranks this much earlier, so that every
// rank hears the verdict before its own deadline passes.
double verdictSeconds(double timeout) { return timeout > 0 ? timeout - std::min(2.0, timeout / 10) : timeout; }

struct Arrival {
  net::Socket socket;
  net::SocketAddress address;
  std::string peer;
};

}  // namespace

// The rendezvous state; touched only on the loop's thread once started.
struct RootListener::State {
  State(net::Socket listener, const net::Secret& secret, const std::optional<net::Digest>& key, double timeoutSeconds,
        std::string deadlineName);

  std::string where;
  double timeoutSeconds;
  std::string deadlineName;
  Deadline deadline;
  std::vector<Arrival> arrived;  // by rank, socket.valid() when present
  int nRanks = 0, count = 0;
  // Set when the rendezvous failed before the table went out:
  // a rank that arrived or was mid-hello died, a rank of this
  // job sent a bogus hello, or the root failed or was stopped.
  // Every rank that arrived, or arrives within kLingerSeconds,
  // is told at once instead of waiting for the deadline.
  std::string failure;
  bool complete = false;              // the table went out
  std::atomic<bool> released{false};  // release(): end at the next turn
  Deadline lingerUntil{0};
  net::HelloAcceptor acceptor;
  net::EventLoop loop;

  // A prepare step of the loop: false once the
  // rendezvous is over (complete or failed).
  bool prepare(net::Watches& watches);
  void admit(net::Socket socket, const RendezvousHello& h, const std::string& peer);
  // An arrived rank's connection became readable:
  // it says nothing more, so this is its close.
  void checkClosed(int rank);
  // An authenticated connection closed in the middle of its hello.
  void abandoned(const std::string& peer, const char* partial, size_t got);
  void fail(const std::string& message);
  // The loop ends, for any reason: a rendezvous neither
  // complete nor failed fails now, and every connection
  // closes, so that no rank waits on a root that is gone.
  void finish(const std::string& why);
};

std::string formatMissingRanks(const std::vector<bool>& present) {
  std::string out;
  int n = static_cast<int>(present.size());
  for (int r = 0; r < n;) {
    if (present[r]) {
      ++r;
      continue;
    }
    int end = r;
    while (end + 1 < n && !present[end + 1]) ++end;
    if (!out.empty()) out += ", ";
    out += end == r ? std::to_string(r) : std::to_string(r) + "-" + std::to_string(end);
    r = end + 1;
  }
  return out;
}

namespace {

void sendReply(Arrival& a, int32_t status, const std::vector<uint8_t>& body) {
  RendezvousReply reply{};
  std::memcpy(reply.magic, kRendezvousReplyMagic, 8);
  reply.status = status;
  reply.length = static_cast<uint32_t>(body.size());
  iovec iov[2] = {{&reply, sizeof(reply)}, {const_cast<uint8_t*>(body.data()), body.size()}};
  try {
    a.socket.sendAllv(iov, 2, Deadline(kMaxHandshakeSeconds), "bootstrap root: reply to " + a.peer);
  } catch (const Error& e) {
    MSCCLPP_WARN(LogBootstrap, "%s", e.what());
  }
}

void sendError(Arrival& a, const std::string& message) {
  std::string text = message.substr(0, kMaxRendezvousErrorBytes);
  sendReply(a, 1, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace

namespace {
net::HelloAcceptor::Options rootOptions(const std::string& where, const net::Secret& secret,
                                        const std::optional<net::Digest>& key, double timeout,
                                        std::function<void(const std::string&, const char*, size_t)> onAbandoned) {
  net::HelloAcceptor::Options o{where,
                                LogBootstrap,
                                kRendezvousHelloMagic,
                                secret,
                                sizeof(RendezvousHello),
                                "not a rank of this job",
                                timeout > 0 ? std::min(timeout, kMaxHandshakeSeconds) : kMaxHandshakeSeconds,
                                kMaxPending,
                                std::move(onAbandoned)};
  o.key = key;
  o.keyName = "MSCCLPP_COMM_SECRET";
  return o;
}
}  // namespace

RootListener::State::State(net::Socket listener, const net::Secret& secret, const std::optional<net::Digest>& key,
                           double timeout, std::string name)
    : where("bootstrap root at " + listener.localAddress().toString()),
      timeoutSeconds(timeout),
      deadlineName(std::move(name)),
      deadline(timeout),
      acceptor(std::move(listener),
               rootOptions(
                   where, secret, key, timeout,
                   [this](const std::string& peer, const char* partial, size_t got) { abandoned(peer, partial, got); }),
               [this](net::Socket socket, const char* hello, const std::string& peer) {
                 RendezvousHello h;
                 std::memcpy(&h, hello, sizeof(h));
                 admit(std::move(socket), h, peer);
               }),
      loop(where, -1) {}

void RootListener::State::fail(const std::string& message) {
  if (!failure.empty() || complete) return;
  failure = message;
  lingerUntil = Deadline(kLingerSeconds);
  MSCCLPP_WARN(LogBootstrap, "%s", message.c_str());
  for (auto& a : arrived) {
    if (!a.socket.valid()) continue;
    sendError(a, message);
    a.socket.close();
  }
}

void RootListener::State::checkClosed(int rank) {
  Arrival& a = arrived[rank];
  if (!failure.empty() || !a.socket.valid()) return;  // closed by a failure earlier in this turn
  char byte;
  const ssize_t n = ::recv(a.socket.fd(), &byte, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  fail(
      strFormat("rank %d at %s %s its connection to the %s before every rank arrived: it exited, crashed or "
                "was killed",
                rank, a.peer.c_str(), n > 0 ? "sent unexpected bytes on" : "closed", where.c_str()));
}

void RootListener::State::abandoned(const std::string& peer, const char* partial, size_t got) {
  std::string rank = "a rank";
  if (got >= offsetof(RendezvousHello, nRanks)) {
    int32_t r;
    std::memcpy(&r, partial + offsetof(RendezvousHello, rank), sizeof(r));
    rank = strFormat("rank %d", r);
  }
  fail(
      strFormat("%s at %s closed its connection to the %s in the middle of its hello (%zu of %zu bytes), before "
                "every rank arrived: it exited, crashed or was killed",
                rank.c_str(), peer.c_str(), where.c_str(), got, sizeof(RendezvousHello)));
}

void RootListener::State::finish(const std::string& why) {
  // A released root serves nobody: it ends quietly.
  if (!complete && !released.load(std::memory_order_acquire)) {
    fail(strFormat("the %s %s before every rank arrived", where.c_str(), why.c_str()));
  }
  for (auto& a : arrived) a.socket.close();
  acceptor.close();
}

void RootListener::State::admit(net::Socket socket, const RendezvousHello& h, const std::string& peer) {
  Arrival a{std::move(socket), net::SocketAddress(), peer};
  if (!failure.empty()) return sendError(a, failure);
  // The hello carries this job's secret, so a bogus one comes from a
  // rank of this job that cannot join. The whole rendezvous fails:
  // the others would otherwise wait for it until the deadline.
  auto reject = [&](const std::string& why) {
    fail(where + ": " + why);
    sendError(a, failure);
  };
  try {
    a.address = net::SocketAddress::decode(h.listenAddress, "rendezvous hello listen address");
  } catch (const Error& e) {
    return reject(strFormat("rank %d at %s: %s", h.rank, peer.c_str(), e.what()));
  }
  if (h.nRanks <= 0 || (nRanks != 0 && h.nRanks != nRanks)) {
    return reject(strFormat("rank %d at %s says nRanks=%d but %s", h.rank, peer.c_str(), h.nRanks,
                            nRanks ? strFormat("the job has %d ranks", nRanks).c_str() : "that is not > 0"));
  }
  if (h.rank < 0 || h.rank >= h.nRanks) {
    return reject(strFormat("rank %d at %s is not in [0, %d)", h.rank, peer.c_str(), h.nRanks));
  }
  if (nRanks == 0) {
    nRanks = h.nRanks;
    arrived.resize(static_cast<size_t>(nRanks));
    deadline = Deadline(verdictSeconds(timeoutSeconds));  // the job started: every rank now gets the full timeout
  }
  if (arrived[h.rank].socket.valid()) {
    return reject(
        strFormat("rank %d arrived twice (from %s and %s)", h.rank, arrived[h.rank].peer.c_str(), a.peer.c_str()));
  }
  MSCCLPP_TRACE(LogBootstrap, "%s: rank %d/%d arrived from %s", where.c_str(), h.rank, nRanks, a.peer.c_str());
  arrived[h.rank] = std::move(a);
  ++count;
}

bool RootListener::State::prepare(net::Watches& watches) {
  if (released.load(std::memory_order_acquire)) return false;  // onExit tells any rank that came
  if (failure.empty() && nRanks > 0 && count == nRanks) {
    std::vector<uint8_t> table(static_cast<size_t>(nRanks) * net::SocketAddress::kEncodedBytes);
    for (int r = 0; r < nRanks; ++r) arrived[r].address.encode(table.data() + r * net::SocketAddress::kEncodedBytes);
    for (auto& a : arrived) sendReply(a, 0, table);
    complete = true;
    MSCCLPP_INFO(LogBootstrap, "%s: all %d ranks arrived", where.c_str(), nRanks);
    return false;
  }
  if (failure.empty() && deadline.expired()) {
    if (nRanks == 0) {
      MSCCLPP_WARN(LogBootstrap, "%s: no rank arrived within %.3g s (%s); closing", where.c_str(), timeoutSeconds,
                   deadlineName.c_str());
      return false;
    }
    std::vector<bool> present(static_cast<size_t>(nRanks));
    for (int r = 0; r < nRanks; ++r) present[r] = arrived[r].socket.valid();
    fail(strFormat("ranks %s (%d of %d) did not arrive at the %s within %.3g s (%s)",
                   formatMissingRanks(present).c_str(), nRanks - count, nRanks, where.c_str(), timeoutSeconds,
                   deadlineName.c_str()));
  }
  if (!failure.empty()) {
    if (lingerUntil.expired()) return false;
    acceptor.watch(watches);
    watches.limitWait(lingerUntil.remainingMs());
    return true;
  }
  acceptor.watch(watches);
  for (int r = 0; r < nRanks; ++r) {
    if (arrived[r].socket.valid()) watches.add(arrived[r].socket.fd(), [this, r]() { checkClosed(r); });
  }
  watches.limitWait(deadline.remainingMs());
  return true;
}

std::unique_ptr<RootListener> RootListener::start(net::Socket listener, const net::Secret& secret,
                                                  const std::optional<net::Digest>& key, double timeoutSeconds,
                                                  std::string deadlineName) {
  auto state = std::make_shared<State>(std::move(listener), secret, key, timeoutSeconds, std::move(deadlineName));
  std::unique_ptr<RootListener> root(new RootListener());
  root->state_ = state;
  // The hooks hold their own reference so that a detached root outlives its handle.
  net::EventLoop::Hooks hooks;
  hooks.prepare = [state](net::Watches& watches) { return state->prepare(watches); };
  hooks.onFailure = [state](const std::exception& e) { state->finish(std::string("failed: ") + e.what()); };
  hooks.onExit = [state]() { state->finish("was stopped"); };
  state->loop.start(std::move(hooks));
  return root;
}

void RootListener::stop() {
  if (state_) state_->loop.stop();
}

void RootListener::detach() {
  if (state_) state_->loop.detach();
}

void RootListener::release(const std::weak_ptr<State>& root) {
  if (auto state = root.lock()) {
    state->released.store(true, std::memory_order_release);
    state->loop.wake();
  }
}

RootListener::~RootListener() { stop(); }

}  // namespace mscclpp::bootstrap
