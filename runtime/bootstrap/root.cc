#include "bootstrap/root.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "bootstrap/wire.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"

namespace mscclpp::bootstrap {

namespace {

constexpr size_t kMaxPending = 256;  // unauthenticated connections kept at once; the oldest go first
constexpr double kMaxHandshakeSeconds = 10.0;

struct Pending {
  net::Socket socket;
  std::string peer;
  RendezvousHello hello;
  size_t got = 0;
  Deadline handshakeDeadline;
};

struct Arrival {
  net::Socket socket;
  net::SocketAddress address;
  std::string peer;
};

}  // namespace

struct RootListener::State {
  net::Socket listener;
  Secret secret;
  double timeoutSeconds;
  int wakeFd = -1;
  std::atomic<bool> stopping{false};

  ~State() {
    if (wakeFd >= 0) ::close(wakeFd);
  }
  void run();
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

void RootListener::State::run() {
  std::vector<Pending> pending;
  std::vector<Arrival> arrived;  // by rank, valid() when present
  int nRanks = 0, count = 0;
  Deadline deadline(timeoutSeconds);
  const double handshakeSeconds =
      timeoutSeconds > 0 ? std::min(timeoutSeconds, kMaxHandshakeSeconds) : kMaxHandshakeSeconds;
  const std::string where = "bootstrap root at " + listener.localAddress().toString();

  auto drop = [&](Pending& p, const std::string& why) {
    MSCCLPP_WARN(LogBootstrap, "%s: dropped connection from %s: %s", where.c_str(), p.peer.c_str(), why.c_str());
    p.socket.close();
  };

  auto admit = [&](Pending& p) {
    const RendezvousHello& h = p.hello;
    if (!secretEquals(h.secret, secret)) return drop(p, "wrong secret (not a rank of this job)");
    Arrival a{std::move(p.socket), net::SocketAddress(), p.peer};
    try {
      a.address = net::SocketAddress::decode(h.listenAddress, "rendezvous hello listen address");
    } catch (const Error& e) {
      return sendError(a, where + ": " + e.what());
    }
    if (h.nRanks <= 0 || (nRanks != 0 && h.nRanks != nRanks)) {
      return sendError(a, strFormat("%s: rank %d says nRanks=%d but %s", where.c_str(), h.rank, h.nRanks,
                                    nRanks ? strFormat("the job has %d ranks", nRanks).c_str() : "that is not > 0"));
    }
    if (h.rank < 0 || h.rank >= h.nRanks) {
      return sendError(a, strFormat("%s: rank %d is not in [0, %d)", where.c_str(), h.rank, h.nRanks));
    }
    if (nRanks == 0) {
      nRanks = h.nRanks;
      arrived.resize(static_cast<size_t>(nRanks));
      deadline = Deadline(timeoutSeconds);  // the job started: every rank now gets the full timeout
    }
    if (arrived[h.rank].socket.valid()) {
      return sendError(a, strFormat("%s: rank %d arrived twice (from %s and %s)", where.c_str(), h.rank,
                                    arrived[h.rank].peer.c_str(), a.peer.c_str()));
    }
    MSCCLPP_TRACE(LogBootstrap, "%s: rank %d/%d arrived from %s", where.c_str(), h.rank, nRanks, a.peer.c_str());
    arrived[h.rank] = std::move(a);
    ++count;
  };

  while (!stopping.load(std::memory_order_acquire)) {
    if (nRanks > 0 && count == nRanks) {
      std::vector<uint8_t> table(static_cast<size_t>(nRanks) * net::SocketAddress::kEncodedBytes);
      for (int r = 0; r < nRanks; ++r) arrived[r].address.encode(table.data() + r * net::SocketAddress::kEncodedBytes);
      for (auto& a : arrived) sendReply(a, 0, table);
      MSCCLPP_INFO(LogBootstrap, "%s: all %d ranks arrived", where.c_str(), nRanks);
      return;
    }
    if (deadline.expired()) {
      if (nRanks == 0) {
        MSCCLPP_WARN(LogBootstrap, "%s: no rank arrived within %.3g s (MSCCLPP_TIMEOUT_S); closing", where.c_str(),
                     timeoutSeconds);
        return;
      }
      std::vector<bool> present(static_cast<size_t>(nRanks));
      for (int r = 0; r < nRanks; ++r) present[r] = arrived[r].socket.valid();
      std::string msg = strFormat("ranks %s (%d of %d) did not arrive at the %s within %.3g s (MSCCLPP_TIMEOUT_S)",
                                  formatMissingRanks(present).c_str(), nRanks - count, nRanks, where.c_str(),
                                  timeoutSeconds);
      MSCCLPP_WARN(LogBootstrap, "%s", msg.c_str());
      for (auto& a : arrived)
        if (a.socket.valid()) sendError(a, msg);
      return;
    }
    std::vector<pollfd> fds;
    fds.push_back({wakeFd, POLLIN, 0});
    fds.push_back({listener.fd(), POLLIN, 0});
    for (auto& p : pending) fds.push_back({p.socket.fd(), POLLIN, 0});
    int wait = deadline.remainingMs();
    wait = (wait < 0 || wait > 200) ? 200 : wait;
    int rc = ::poll(fds.data(), fds.size(), wait);
    if (rc < 0 && errno != EINTR) {
      MSCCLPP_WARN(LogBootstrap, "%s: poll failed: %s; the root stops", where.c_str(), std::strerror(errno));
      return;
    }
    if (fds[1].revents) {
      while (true) {
        net::Socket s;
        try {
          s = listener.accept();
        } catch (const Error& e) {
          MSCCLPP_WARN(LogBootstrap, "%s: %s", where.c_str(), e.what());
          break;
        }
        if (!s.valid()) break;
        if (pending.size() >= kMaxPending) {
          drop(pending.front(), "too many connections without a handshake");
          pending.erase(pending.begin());
        }
        std::string peer = s.peerAddress().toString();
        pending.push_back(Pending{std::move(s), peer, RendezvousHello{}, 0, Deadline(handshakeSeconds)});
      }
    }
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      // fds[2 + i] matches pending[i] for the entries that existed before this round's accepts.
      bool ready = i + 2 < fds.size() && fds[2 + i].revents != 0;
      if (ready) {
        try {
          size_t n = p.socket.recvSome(reinterpret_cast<char*>(&p.hello) + p.got, sizeof(p.hello) - p.got,
                                       "rendezvous hello");
          p.got += n;
          if (p.got >= 8 && std::memcmp(p.hello.magic, kRendezvousHelloMagic, 8) != 0) {
            drop(p, "bad magic (garbage or a foreign protocol)");
          } else if (p.got == sizeof(p.hello)) {
            admit(p);
            p.socket.close();  // admitted sockets were moved out; this closes only rejected ones
          }
        } catch (const Error&) {
          drop(p, "closed before completing the handshake");
        }
      }
      if (p.socket.valid() && p.handshakeDeadline.expired()) drop(p, "no handshake within the time allowed");
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return !p.socket.valid(); }),
                  pending.end());
  }
}

std::unique_ptr<RootListener> RootListener::start(net::Socket listener, const Secret& secret, double timeoutSeconds) {
  auto state = std::make_shared<State>();
  state->listener = std::move(listener);
  state->secret = secret;
  state->timeoutSeconds = timeoutSeconds;
  state->wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state->wakeFd < 0) throw SystemError("eventfd for the bootstrap root", errno);
  std::unique_ptr<RootListener> root(new RootListener());
  root->state_ = state;
  // The thread holds its own reference so that a detached root outlives its handle.
  root->thread_ = std::thread([state]() {
    try {
      state->run();
    } catch (const std::exception& e) {
      MSCCLPP_WARN(LogBootstrap, "bootstrap root failed: %s", e.what());
    }
    state->listener.close();
  });
  return root;
}

void RootListener::stop() {
  if (!thread_.joinable()) return;
  state_->stopping.store(true, std::memory_order_release);
  uint64_t one = 1;
  (void)!::write(state_->wakeFd, &one, sizeof(one));
  thread_.join();
}

void RootListener::detach() {
  if (thread_.joinable()) thread_.detach();
}

RootListener::~RootListener() { stop(); }

}  // namespace mscclpp::bootstrap
