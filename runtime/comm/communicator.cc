// Communicator construction, identity, split, async errors and abort.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/communicator_impl.hpp"
#include "comm/host_identity.hpp"
#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "mscclpp/device.hpp"
#include "transport/device_memory.hpp"

namespace mscclpp {

namespace {
constexpr size_t kHostIdSlot = 256;
constexpr size_t kMaxSetupMessage = 1 << 20;
}  // namespace

std::string Communicator::Impl::who() const { return strFormat("communicator rank %d/%d", rank, size); }

void Communicator::Impl::checkPeer(int peer, const char* op) const {
  MSCCLPP_ENFORCE(peer >= 0 && peer < size, ErrorCode::InvalidArgument, "%s: %s: no rank %d", who().c_str(), op, peer);
}

void Communicator::Impl::checkAlive(const char* op) const {
  MSCCLPP_ENFORCE(!aborted.load(), ErrorCode::Aborted, "%s: %s: the communicator was aborted", who().c_str(), op);
}

std::shared_ptr<transport::Session> Communicator::Impl::session(Transport t) {
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<transport::Session>& s = sessions[static_cast<size_t>(t)];
  if (!s) s = transport::driverFor(t)->openSession(t, transport::RankInfo{rank, device, localRank});
  return s;
}

std::shared_ptr<comm::OrderedReceiver> Communicator::Impl::receiver(int peer, int tag) {
  std::lock_guard<std::mutex> lock(mutex);
  auto& r = receivers[{peer, tag}];
  if (!r) r = std::make_shared<comm::OrderedReceiver>(bootstrap, peer, tag, kMaxSetupMessage);
  return r;
}

std::shared_ptr<comm::CounterPool> Communicator::Impl::counters() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!counterPool) counterPool = std::make_shared<comm::CounterPool>(device);
  return counterPool;
}

int Communicator::Impl::tagOf(const Connection& connection) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = connectionTags.find(&connection);
  MSCCLPP_ENFORCE(it != connectionTags.end(), ErrorCode::InvalidArgument,
                  "%s: the connection %s was not created by this communicator", who().c_str(),
                  connection.describe().c_str());
  return it->second;
}

Communicator::Communicator(std::shared_ptr<Bootstrap> bootstrap, int device) : pimpl_(std::make_shared<Impl>()) {
  MSCCLPP_ENFORCE(bootstrap != nullptr, ErrorCode::InvalidArgument, "Communicator: null bootstrap");
  checkEnvironment();
  Impl& m = *pimpl_;
  m.userBootstrap = bootstrap;
  m.bootstrap = bootstrap->withNamespace("mscclpp.communicator");
  m.semaphoreBootstrap = bootstrap->withNamespace("mscclpp.semaphore");
  m.rank = bootstrap->getRank();
  m.size = bootstrap->getNranks();
  m.timeoutSeconds = bootstrap->timeoutSeconds();  // MSCCLPP_TIMEOUT_S unless the bootstrap was given one
  ScopedLogRank logRank(m.rank);
  if (device == kDeviceAuto) {
    m.device = params::backend() == "cpu" ? kHostDevice : transport::currentCudaDevice();
  } else if (device == kHostDevice) {
    m.device = kHostDevice;
  } else {
    int n = transport::cudaDeviceCount();
    MSCCLPP_ENFORCE(device >= 0 && device < n, ErrorCode::InvalidArgument,
                    "%s: device %d requested but %d CUDA devices are visible", m.who().c_str(), device, n);
    m.device = device;
  }
  // The stream the runtime zeroes and copies device memory on takes its
  // hardware queue now, before the streams of the calls: created later, it
  // would move a rank's proxy stream onto the queue of a spinning kernel.
  if (m.device >= 0) transport::createDeviceStream(m.device);
  m.hostId = comm::computeHostId();
  m.hostHash = comm::hostIdHash(m.hostId);
  // Listening from before the first exchange: a peer that dies while
  // it runs ends it at once, by aborting the exchange's view,
  // whichever rank it is waiting on. The listener holds the state
  // weakly, so a late notice after destruction finds nothing to fail.
  std::weak_ptr<Impl> weak = pimpl_;
  m.peerFailureListener =
      m.userBootstrap->addPeerFailureListener([weak](int peer, const std::string& reason, bool left) {
        if (auto impl = weak.lock()) impl->peerFailed(peer, reason, left);
      });
  auto endExchange = onFailure([view = std::weak_ptr<Bootstrap>(m.bootstrap)]() {
    if (auto b = view.lock()) b->abort();
  });
  try {
    exchangeHostIds();
  } catch (const Error& e) {
    try {
      throwIfFailedAfter(e);
    } catch (...) {
      m.userBootstrap->removePeerFailureListener(m.peerFailureListener);
      throw;
    }
    m.userBootstrap->removePeerFailureListener(m.peerFailureListener);
    throw;
  }
  endExchange.reset();
  // Later calls on the view are those of a failed
  // communicator, which fail before using it.
}

void Communicator::exchangeHostIds() {
  Impl& m = *pimpl_;
  std::vector<char> slots(kHostIdSlot * static_cast<size_t>(m.size), 0);
  char* mine = slots.data() + kHostIdSlot * static_cast<size_t>(m.rank);
  mine[0] = static_cast<char>(m.hostId.size());
  std::memcpy(mine + 1, m.hostId.data(), m.hostId.size());
  m.bootstrap->allGather(slots.data(), kHostIdSlot);
  for (int r = 0; r < m.size; ++r) {
    const char* s = slots.data() + kHostIdSlot * static_cast<size_t>(r);
    size_t len = static_cast<unsigned char>(s[0]);
    MSCCLPP_ENFORCE(len <= comm::kMaxHostIdBytes, ErrorCode::RemoteError, "%s: rank %d sent a host id of %zu bytes",
                    m.who().c_str(), r, len);
    m.hostIds.emplace_back(s + 1, len);
    if (m.hostIds.back() == m.hostId) {
      if (r == m.rank) m.localRank = static_cast<int>(m.localRanks.size());
      m.localRanks.push_back(r);
    }
  }
  {
    std::lock_guard<std::mutex> lock(m.errorMutex);  // peerFailed() reads them on the bootstrap's threads
    m.peerHostIds = m.hostIds;
  }
  MSCCLPP_INFO(LogInit, "%s: host %s, local rank %d of %zu, device %d", m.who().c_str(), m.hostId.c_str(), m.localRank,
               m.localRanks.size(), m.device);
}

Communicator::~Communicator() {
  pimpl_->userBootstrap->removePeerFailureListener(pimpl_->peerFailureListener);
  if (pimpl_->peerDied.load()) {
    for (const transport::Driver* d : transport::drivers()) d->afterPeerDeath();
  }
}

void Communicator::Impl::peerFailed(int peer, const std::string& reason, bool left) {
  // What a dead process left, such as named shared memory, goes once no live one uses it.
  if (!left) {
    peerDied.store(true);
    for (const transport::Driver* d : transport::drivers()) d->peerDied();
  }
  std::string host;  // unknown until the host ids are exchanged; the reason names its address
  {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (peer >= 0 && peer < static_cast<int>(peerHostIds.size())) host = peerHostIds[peer];
  }
  const std::string whom =
      host.empty() ? strFormat("rank %d", peer) : strFormat("rank %d (host %s)", peer, host.c_str());
  if (left) {
    {
      std::lock_guard<std::mutex> lock(errorMutex);
      if (departures.emplace(peer, strFormat("%s left: %s", whom.c_str(), reason.c_str())).second)
        departureOrder.push_back(peer);
      anyDeparture.store(true, std::memory_order_release);
    }
    MSCCLPP_INFO(LogInit, "%s: %s left: %s; a call that needs it fails", who().c_str(), whom.c_str(), reason.c_str());
    return;
  }
  fail(ErrorCode::RemoteError, strFormat("%s: %s failed: %s", who().c_str(), whom.c_str(), reason.c_str()));
}

void Communicator::Impl::fail(ErrorCode code, const std::string& message) {
  std::vector<std::shared_ptr<const std::function<void()>>> callbacks;
  {
    std::lock_guard<std::mutex> lock(errorMutex);
    if (hasFailed.load(std::memory_order_relaxed)) return;
    failureCode = code;
    failureMessage = message;
    hasFailed.store(true, std::memory_order_release);
    if (!hasError) {
      hasError = true;
      errorCode = code;
      errorMessage = message;
    }
    for (const auto& [id, callback] : failureCallbacks) callbacks.push_back(callback);
  }
  // INFO: the calls that fail because of it say so at
  // WARN. A peer that exits while nothing is pending here,
  // at the end of a job, is no news worth a warning.
  MSCCLPP_INFO(LogInit, "%s; every pending and later call on this communicator fails", message.c_str());
  decltype(sessions) open;
  {
    std::lock_guard<std::mutex> lock(mutex);
    open = sessions;
  }
  for (auto& s : open) {
    if (s) s->communicatorFailed();
  }
  std::lock_guard<std::mutex> running(callbackMutex);
  for (const auto& callback : callbacks) (*callback)();
}

void Communicator::fail(ErrorCode code, const std::string& message) { pimpl_->fail(code, message); }

bool Communicator::departed() const { return pimpl_->anyDeparture.load(std::memory_order_acquire); }

bool Communicator::hasDeparted(int rank) const {
  if (!departed()) return false;
  std::lock_guard<std::mutex> lock(pimpl_->errorMutex);
  return pimpl_->departures.count(rank) != 0;
}

std::vector<int> Communicator::departedRanks() const {
  if (!departed()) return {};
  std::lock_guard<std::mutex> lock(pimpl_->errorMutex);
  return pimpl_->departureOrder;
}

void Communicator::failForDeparture(int rank) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(pimpl_->errorMutex);
    auto it = pimpl_->departures.find(rank);
    if (it == pimpl_->departures.end()) return;
    message = it->second;
  }
  pimpl_->fail(ErrorCode::RemoteError, pimpl_->who() + ": " + message);
}

void Communicator::throwIfFailedAfter(const Error& error) const {
  const ErrorCode c = error.code();
  // A call that met a departed peer (an exchange or a connection it needed)
  // fails the communicator for it: the one the error names, else the first to leave.
  if (!failed() && departed() && (c == ErrorCode::RemoteError || c == ErrorCode::SystemError)) {
    const std::vector<int> gone = departedRanks();
    int rank = gone.front();
    for (int r : gone) {
      if (std::strstr(error.what(), strFormat("rank %d ", r).c_str()) != nullptr) {
        rank = r;
        break;
      }
    }
    const_cast<Communicator*>(this)->failForDeparture(rank);
  }
  if (c == ErrorCode::SystemError || c == ErrorCode::RemoteError || c == ErrorCode::Timeout ||
      c == ErrorCode::Aborted) {
    constexpr int kGraceMs = 1000;
    for (int waited = 0; waited < kGraceMs && !failed(); waited += 5)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ErrorCode code;
  std::string why;
  if (failed(&code, &why)) throw Error(code, why + "\n" + error.what());
}

bool Communicator::failed(ErrorCode* code, std::string* message) const {
  if (!pimpl_->hasFailed.load(std::memory_order_acquire)) return false;
  if (code) *code = pimpl_->failureCode;  // written before the flag, never again
  if (message) *message = pimpl_->failureMessage;
  return true;
}

std::shared_ptr<void> Communicator::raiseOnFailure(uint32_t* flag) {
  MSCCLPP_ENFORCE(flag != nullptr, ErrorCode::InvalidArgument, "%s: raiseOnFailure: null flag", pimpl_->who().c_str());
  return onFailure([flag]() { atomicStore<uint32_t>(flag, 1u, memoryOrderRelease); });
}

std::shared_ptr<void> Communicator::onFailure(std::function<void()> callback) {
  MSCCLPP_ENFORCE(callback != nullptr, ErrorCode::InvalidArgument, "%s: onFailure: empty callback",
                  pimpl_->who().c_str());
  Impl& m = *pimpl_;
  auto shared = std::make_shared<const std::function<void()>>(std::move(callback));
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(m.errorMutex);
    id = m.nextFailureCallback++;
    m.failureCallbacks.emplace(id, shared);
  }
  // Registered before this check: a concurrent fail()
  // either saw the entry or set the flag we read.
  if (m.hasFailed.load(std::memory_order_acquire)) (*shared)();
  std::weak_ptr<Impl> weak = pimpl_;
  return std::shared_ptr<void>(new char, [weak, id](char* token) {
    delete token;
    if (auto impl = weak.lock()) {
      {
        std::lock_guard<std::mutex> lock(impl->errorMutex);
        impl->failureCallbacks.erase(id);
      }
      std::lock_guard<std::mutex> wait(impl->callbackMutex);  // a fail() that took it before the erase is done
    }
  });
}

std::shared_ptr<Bootstrap> Communicator::bootstrap() const { return pimpl_->userBootstrap; }
int Communicator::rank() const { return pimpl_->rank; }
int Communicator::size() const { return pimpl_->size; }

double Communicator::timeoutSeconds() const {
  const double env = params::timeoutSeconds(), mine = pimpl_->timeoutSeconds;
  if (env <= 0) return std::max(mine, 0.0);
  return mine > 0 ? std::min(env, mine) : env;
}
const char* Communicator::timeoutSetting() const {
  const double env = params::timeoutSeconds(), mine = pimpl_->timeoutSeconds;
  if (env <= 0 && mine <= 0) return "";
  return env > 0 && (mine <= 0 || env <= mine) ? timeoutSourceName(kTimeoutFromEnvironment)
                                               : timeoutSourceName(kTimeoutFromCommunicator);
}

TimeoutSetting timeoutOf(const Communicator& comm) {
  const char* setting = comm.timeoutSetting();
  return TimeoutSetting{comm.timeoutSeconds(), *setting ? setting : timeoutSourceName(kTimeoutFromEnvironment)};
}
int Communicator::localRank() const { return pimpl_->localRank; }
int Communicator::nRanksPerNode() const { return static_cast<int>(pimpl_->localRanks.size()); }
const std::string& Communicator::hostId() const { return pimpl_->hostId; }
const std::string& Communicator::hostIdOf(int rank) const {
  pimpl_->checkPeer(rank, "hostIdOf");
  return pimpl_->hostIds[rank];
}
bool Communicator::isSameHost(int peer) const {
  pimpl_->checkPeer(peer, "isSameHost");
  return pimpl_->hostIds[peer] == pimpl_->hostId;
}
const std::vector<int>& Communicator::localRanks() const { return pimpl_->localRanks; }
int Communicator::device() const { return pimpl_->device; }

Transport Communicator::nearestIbTransport(std::string* why) const {
  const Impl& m = *pimpl_;
  std::string reason;
  Transport t =
      transport::driverFor(Transport::IB0)->nearest(transport::RankInfo{m.rank, m.device, m.localRank}, &reason);
  if (why) *why = reason;
  return t;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) {
  pimpl_->checkAlive("split");
  std::shared_ptr<Bootstrap> child = pimpl_->userBootstrap->split(color, key);
  if (!child) return nullptr;
  return std::make_shared<Communicator>(std::move(child), pimpl_->device);
}

void Communicator::setAsyncError(ErrorCode code, const std::string& message) {
  std::lock_guard<std::mutex> lock(pimpl_->errorMutex);
  if (pimpl_->hasError) return;
  pimpl_->hasError = true;
  pimpl_->errorCode = code;
  pimpl_->errorMessage = message;
}

bool Communicator::asyncError(ErrorCode* code, std::string* message) const {
  std::lock_guard<std::mutex> lock(pimpl_->errorMutex);
  if (!pimpl_->hasError) return false;
  if (code) *code = pimpl_->errorCode;
  if (message) *message = pimpl_->errorMessage;
  return true;
}

void Communicator::abort() {
  Impl& m = *pimpl_;
  if (m.aborted.exchange(true)) return;
  MSCCLPP_INFO(LogInit, "%s: abort", m.who().c_str());
  m.userBootstrap->abort();
  decltype(m.sessions) sessions;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    sessions = m.sessions;
  }
  for (auto& s : sessions) {
    if (s) s->abort();
  }
}

bool Communicator::aborted() const { return pimpl_->aborted.load(); }

}  // namespace mscclpp
