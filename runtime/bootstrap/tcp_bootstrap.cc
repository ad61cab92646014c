// TcpBootstrap: the unique id, the rendezvous with the root, then
// a TcpEndpoint under the shared collectives of group_ops.hpp.
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "bootstrap/comm_secret.hpp"
#include "bootstrap/group_ops.hpp"
#include "bootstrap/root.hpp"
#include "bootstrap/tcp_endpoint.hpp"
#include "bootstrap/wire.hpp"
#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "core/net/net_interface.hpp"
#include "core/params.hpp"
#include "core/visibility.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp {

using bootstrap::RootListener;
using bootstrap::TcpEndpoint;

struct MSCCLPP_INTERNAL TcpBootstrap::Impl {
  int rank;
  int nRanks;
  double timeout = 0;
  UniqueId id{};
  std::shared_ptr<TcpEndpoint> endpoint;
  std::unique_ptr<detail::GroupOps> ops;
  std::unique_ptr<RootListener> root;  // rank 0 with a fixed address (MSCCLPP_COMM_ID)
  // abort() may run on another thread during the rendezvous: it
  // sets the flag and shuts the rendezvous socket down. It does
  // so under the mutex, so never on a closed and reused fd.
  std::mutex mutex;
  std::atomic<bool> aborted{false};
  int rendezvousFd = -1;

  detail::GroupOps& checked() const {
    MSCCLPP_ENFORCE(ops != nullptr, ErrorCode::InvalidUsage, "TcpBootstrap rank %d/%d: initialize() was not called",
                    rank, nRanks);
    return *ops;
  }
  std::vector<net::SocketAddress> rendezvous(const bootstrap::UniqueIdFields& f, const std::optional<net::Digest>& key,
                                             double timeout, const char* timeoutName);
};

namespace {

// The roots createUniqueId started in this process, by their id's
// secret, for stopRoot. An entry goes when its root ends.
struct RootsOfThisProcess {
  std::mutex mutex;
  std::map<net::Secret, std::weak_ptr<RootListener::State>> bySecret;
};

RootsOfThisProcess& rootsOfThisProcess() {
  static RootsOfThisProcess* roots = new RootsOfThisProcess();  // never destroyed: detached roots outlive main
  return *roots;
}

}  // namespace

UniqueId TcpBootstrap::createUniqueId() {
  checkEnvironment();
  std::string commId = params::commId();
  if (!commId.empty()) return bootstrap::encodeUniqueId(bootstrap::fixedAddressId(commId));
  net::NetInterface iface = net::chooseDefaultInterface();
  net::Socket listener = net::Socket::listenOn(iface.address);
  bootstrap::UniqueIdFields f;
  f.root = listener.localAddress();
  f.secret = net::randomSecret();
  MSCCLPP_INFO(LogBootstrap, "bootstrap root listening on %s (interface %s)", f.root.toString().c_str(),
               iface.name.c_str());
  std::unique_ptr<RootListener> root =
      RootListener::start(std::move(listener), f.secret, bootstrap::jobKey(f.secret),
                          params::rendezvousTimeoutSeconds(), params::rendezvousTimeoutName());
  {
    RootsOfThisProcess& roots = rootsOfThisProcess();
    std::lock_guard<std::mutex> lock(roots.mutex);
    for (auto it = roots.bySecret.begin(); it != roots.bySecret.end();) {
      it = it->second.expired() ? roots.bySecret.erase(it) : std::next(it);
    }
    roots.bySecret[f.secret] = root->state();
  }
  root->detach();
  return bootstrap::encodeUniqueId(f);
}

void TcpBootstrap::stopRoot(const UniqueId& uniqueId) {
  bootstrap::UniqueIdFields f;
  try {
    f = bootstrap::decodeUniqueId(uniqueId);
  } catch (const Error&) {
    return;  // not an id of ours: no root of ours
  }
  std::weak_ptr<RootListener::State> root;
  {
    RootsOfThisProcess& roots = rootsOfThisProcess();
    std::lock_guard<std::mutex> lock(roots.mutex);
    auto it = roots.bySecret.find(f.secret);
    if (it == roots.bySecret.end()) return;
    root = it->second;
    roots.bySecret.erase(it);
  }
  RootListener::release(root);
}

TcpBootstrap::TcpBootstrap(int rank, int nRanks) : pimpl_(std::make_unique<Impl>()) {
  MSCCLPP_ENFORCE(nRanks > 0 && rank >= 0 && rank < nRanks, ErrorCode::InvalidArgument,
                  "TcpBootstrap: rank %d is not in [0, nRanks=%d)", rank, nRanks);
  checkEnvironment();
  pimpl_->rank = rank;
  pimpl_->nRanks = nRanks;
}

TcpBootstrap::~TcpBootstrap() = default;

std::vector<net::SocketAddress> TcpBootstrap::Impl::rendezvous(const bootstrap::UniqueIdFields& f,
                                                               const std::optional<net::Digest>& key, double timeout,
                                                               const char* timeoutName) {
  using namespace bootstrap;
  const std::string who = strFormat("bootstrap rank %d/%d", rank, nRanks);
  const std::string rootText = "the bootstrap root at " + f.root.toString();
  // With a fixed address, MSCCLPP_COMM_ID, rank 0
  // hosts the root: when the root is gone, rank 0 is.
  const bool rootInRank0 = (f.flags & kFlagFixedAddress) != 0;
  // One deadline for the whole rendezvous: a rank fails at
  // the timeout at the latest. The root names the missing
  // ranks a little earlier, so a rank normally hears why.
  Deadline deadline(timeout, timeoutName);
  // The root closes every connection with a reason when
  // the rendezvous fails; a connection that is reset or
  // closes without one means the root's process is gone.
  auto throwRootGone = [&](const Error& e) {
    if (e.code() != ErrorCode::RemoteError || aborted.load()) throw;
    if (rootInRank0) {
      MSCCLPP_THROW(ErrorCode::RemoteError,
                    "%s: the rendezvous failed: rank 0 at %s (hosting the bootstrap root, MSCCLPP_COMM_ID) closed the "
                    "connection without a reply: it exited, crashed or was killed (%s)",
                    who.c_str(), f.root.toString().c_str(), e.what());
    }
    MSCCLPP_THROW(ErrorCode::RemoteError,
                  "%s: the rendezvous failed: %s closed the connection without a reply: the process that created the "
                  "unique id (it hosts the root) exited, crashed or was killed (%s)",
                  who.c_str(), rootText.c_str(), e.what());
  };
  net::Socket s;
  try {
    s = net::Socket::connectTo(
        f.root, deadline, rootInRank0 ? "the bootstrap root (hosted by rank 0, MSCCLPP_COMM_ID)" : "the bootstrap root",
        true, &aborted);
  } catch (const Error& e) {
    throwRootGone(e);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (aborted.load()) MSCCLPP_THROW(ErrorCode::Aborted, "%s: the rendezvous was aborted", who.c_str());
    rendezvousFd = s.fd();
  }
  struct ForgetFd {
    Impl& m;
    ~ForgetFd() {
      std::lock_guard<std::mutex> lock(m.mutex);
      m.rendezvousFd = -1;
    }
  } forget{*this};
  RendezvousHello hello{};
  // With a key the secret field carries our nonce, and both sides prove the key.
  hello.header = net::makeHelloHeader(kRendezvousHelloMagic, key ? net::randomSecret() : f.secret);
  hello.rank = rank;
  hello.nRanks = nRanks;
  endpoint->listenAddress().encode(hello.listenAddress);
  RendezvousReply reply{};
  const std::string waiting = who + ": waiting for the other ranks at " + rootText;
  try {
    s.sendAll(&hello, sizeof(hello), deadline, who + ": rendezvous hello to " + rootText);
  } catch (const Error& e) {
    throwRootGone(e);
  }
  if (key) {
    try {
      net::answerChallenge(s, *key, &hello, sizeof(hello), deadline, rootText);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::RemoteError || aborted.load()) throw;
      throw Error(ErrorCode::RemoteError, who + ": the rendezvous failed: " + e.what());
    }
  }
  try {
    s.recvAll(&reply, sizeof(reply), deadline, waiting);
  } catch (const Error& e) {
    throwRootGone(e);
  }
  MSCCLPP_ENFORCE(std::memcmp(reply.magic, net::kChallengeMagic, 8) != 0, ErrorCode::InvalidUsage,
                  "%s: %s asks every rank to prove MSCCLPP_COMM_SECRET, which this rank does not set", who.c_str(),
                  rootText.c_str());
  MSCCLPP_ENFORCE(std::memcmp(reply.magic, kRendezvousReplyMagic, 8) == 0, ErrorCode::RemoteError,
                  "%s: the reply has a bad magic (is %s a bootstrap root of this library?)", waiting.c_str(),
                  f.root.toString().c_str());
  if (reply.status != 0) {
    MSCCLPP_ENFORCE(reply.length <= kMaxRendezvousErrorBytes, ErrorCode::RemoteError,
                    "%s: error reply of %u bytes is too long", waiting.c_str(), reply.length);
    std::string text(reply.length, '\0');
    s.recvAll(text.data(), text.size(), deadline, waiting);
    ErrorCode code = text.find("did not arrive") != std::string::npos ? ErrorCode::Timeout : ErrorCode::RemoteError;
    throw Error(code, who + ": rendezvous failed: " + text);
  }
  const size_t expect = static_cast<size_t>(nRanks) * net::SocketAddress::kEncodedBytes;
  MSCCLPP_ENFORCE(reply.length == expect, ErrorCode::RemoteError, "%s: address table of %u bytes, expected %zu",
                  waiting.c_str(), reply.length, expect);
  std::vector<uint8_t> table(expect);
  s.recvAll(table.data(), table.size(), deadline, waiting);
  std::vector<net::SocketAddress> peers;
  for (int r = 0; r < nRanks; ++r) {
    peers.push_back(
        net::SocketAddress::decode(table.data() + r * net::SocketAddress::kEncodedBytes, "rendezvous address table"));
  }
  return peers;
}

void TcpBootstrap::initialize(const UniqueId& uniqueId, double timeoutSec) {
  Impl& m = *pimpl_;
  MSCCLPP_ENFORCE(m.ops == nullptr, ErrorCode::InvalidUsage, "TcpBootstrap rank %d/%d: initialize() called twice",
                  m.rank, m.nRanks);
  ScopedLogRank logRank(m.rank);
  bootstrap::UniqueIdFields f = bootstrap::decodeUniqueId(uniqueId);
  // Two deadlines. The rendezvous waits for ranks that may never
  // come: MSCCLPP_INIT_TIMEOUT_S. Later calls wait for live peers,
  // with no limit unless MSCCLPP_TIMEOUT_S sets one; a dead peer
  // fails them at once through the endpoint's liveness protocol.
  m.timeout = timeoutSec > 0 ? timeoutSec : params::timeoutSeconds();
  const double rendezvousTimeout = timeoutSec > 0 ? timeoutSec : params::rendezvousTimeoutSeconds();
  m.id = uniqueId;
  int64_t maxBytes = params::bootstrapMaxMessageBytes();
  MSCCLPP_ENFORCE(maxBytes > 0, ErrorCode::InvalidArgument, "MSCCLPP_BOOTSTRAP_MAX_BYTES=%lld must be > 0",
                  (long long)maxBytes);
  const char* rendezvousTimeoutName = timeoutSec > 0 ? "the initialize() timeout" : params::rendezvousTimeoutName();
  // Read before anything listens: a bad MSCCLPP_COMM_SECRET fails here.
  const std::optional<net::Digest> key = bootstrap::jobKey(f.secret);
  if ((f.flags & bootstrap::kFlagFixedAddress) && m.rank == 0) {
    m.root =
        RootListener::start(net::Socket::listenOn(f.root), f.secret, key, rendezvousTimeout, rendezvousTimeoutName);
  }
  // Listen where the root is reachable from:
  // loopback roots keep the job on loopback.
  net::NetInterface iface = f.root.isLoopback() && params::socketIfname().empty()
                                ? net::chooseInterface("lo", net::listInterfaces())
                                : net::chooseDefaultInterface();
  auto endpoint = std::make_shared<TcpEndpoint>(m.rank, m.nRanks, f.secret, key, net::Socket::listenOn(iface.address),
                                                static_cast<size_t>(maxBytes));
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    MSCCLPP_ENFORCE(!m.aborted.load(), ErrorCode::Aborted, "bootstrap rank %d/%d: initialize was aborted", m.rank,
                    m.nRanks);
    m.endpoint = endpoint;
  }
  try {
    m.endpoint->setPeerAddresses(m.rendezvous(f, key, rendezvousTimeout, rendezvousTimeoutName));
    m.endpoint->startLiveness(Deadline(rendezvousTimeout, rendezvousTimeoutName));
  } catch (const Error& e) {
    std::shared_ptr<TcpEndpoint> gone;
    {
      std::lock_guard<std::mutex> lock(m.mutex);
      gone = std::move(m.endpoint);
    }
    // A root that failed keeps telling late ranks why for a while,
    // then ends by itself. One that an abort interrupted stops now.
    if (m.root && m.aborted.load()) m.root->stop();
    if (m.root) m.root->detach();
    m.root.reset();
    if (m.aborted.load() && e.code() != ErrorCode::Aborted) {
      MSCCLPP_THROW(ErrorCode::Aborted, "bootstrap rank %d/%d: initialize was aborted (%s)", m.rank, m.nRanks,
                    e.what());
    }
    throw;
  }
  std::vector<int> world(static_cast<size_t>(m.nRanks));
  for (int r = 0; r < m.nRanks; ++r) world[r] = r;
  m.ops = std::make_unique<detail::GroupOps>(m.endpoint, 0, std::move(world), m.rank, m.timeout, nullptr);
  MSCCLPP_INFO(LogBootstrap, "bootstrap rank %d/%d ready, listening on %s", m.rank, m.nRanks,
               m.endpoint->listenAddress().toString().c_str());
}

void TcpBootstrap::initialize(const std::string& hostPort, double timeoutSec) {
  initialize(bootstrap::encodeUniqueId(bootstrap::fixedAddressId(hostPort)), timeoutSec);
}

void TcpBootstrap::leave() {
  std::shared_ptr<TcpEndpoint> endpoint;
  {
    std::lock_guard<std::mutex> lock(pimpl_->mutex);
    endpoint = pimpl_->endpoint;
  }
  if (endpoint) endpoint->leave();
}

UniqueId TcpBootstrap::getUniqueId() const { return pimpl_->id; }
std::string TcpBootstrap::listenAddress() const {
  return pimpl_->endpoint ? pimpl_->endpoint->listenAddress().toString() : "";
}

int TcpBootstrap::getRank() const { return pimpl_->rank; }
int TcpBootstrap::getNranks() const { return pimpl_->nRanks; }
void TcpBootstrap::send(const void* data, size_t size, int peer, int tag) {
  pimpl_->checked().send(data, size, peer, tag);
}
std::vector<char> TcpBootstrap::recv(int peer, int tag, size_t maxBytes) {
  return pimpl_->checked().recv(peer, tag, maxBytes);
}
void TcpBootstrap::allGather(void* allData, size_t size) { pimpl_->checked().allGather(allData, size); }
void TcpBootstrap::broadcast(void* data, size_t size, int root) { pimpl_->checked().broadcast(data, size, root); }
void TcpBootstrap::barrier() { pimpl_->checked().barrier(); }
std::shared_ptr<Bootstrap> TcpBootstrap::split(int color, int key) { return pimpl_->checked().split(color, key); }
std::shared_ptr<Bootstrap> TcpBootstrap::withNamespace(const std::string& name) {
  return pimpl_->checked().withNamespace(name);
}
void TcpBootstrap::abort() {
  std::shared_ptr<TcpEndpoint> endpoint;
  {
    std::lock_guard<std::mutex> lock(pimpl_->mutex);
    pimpl_->aborted.store(true);
    if (pimpl_->rendezvousFd >= 0) ::shutdown(pimpl_->rendezvousFd, SHUT_RDWR);
    endpoint = pimpl_->endpoint;
  }
  if (endpoint) endpoint->abort();
}
uint64_t TcpBootstrap::addPeerFailureListener(PeerFailureListener listener) {
  return pimpl_->checked().addPeerFailureListener(std::move(listener));
}
void TcpBootstrap::removePeerFailureListener(uint64_t id) {
  if (pimpl_->ops) pimpl_->ops->removePeerFailureListener(id);
}
void TcpBootstrap::serve(RequestHandler handler) { pimpl_->checked().serve(std::move(handler)); }
std::vector<char> TcpBootstrap::ask(int peer, const std::vector<char>& request, double timeoutSeconds) {
  return pimpl_->checked().ask(peer, request, timeoutSeconds);
}
std::vector<std::vector<char>> TcpBootstrap::askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                                     double timeoutSeconds, std::vector<std::string>* errors) {
  return pimpl_->checked().askEach(peers, request, timeoutSeconds, errors);
}
double TcpBootstrap::timeoutSeconds() const { return pimpl_->ops ? pimpl_->ops->timeoutSeconds() : pimpl_->timeout; }
void TcpBootstrap::setTimeout(double seconds) {
  pimpl_->timeout = seconds;
  if (pimpl_->ops) pimpl_->ops->setTimeout(seconds);
}

}  // namespace mscclpp
