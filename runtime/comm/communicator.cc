// Communicator construction, identity, split, async errors and abort.
#include <algorithm>
#include <cstring>

#include "comm/communicator_impl.hpp"
#include "comm/host_identity.hpp"
#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "comm/params.hpp"
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
  if (!s) s = transport::driverFor(t)->openSession(t, transport::RankInfo{rank, device, timeoutSeconds});
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
  m.timeoutSeconds = params::timeoutSeconds();
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
  m.hostId = comm::computeHostId();
  m.hostHash = comm::hostIdHash(m.hostId);
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
  MSCCLPP_INFO(LogInit, "%s: host %s, local rank %d of %zu, device %d", m.who().c_str(), m.hostId.c_str(),
               m.localRank, m.localRanks.size(), m.device);
}

Communicator::~Communicator() = default;

std::shared_ptr<Bootstrap> Communicator::bootstrap() const { return pimpl_->userBootstrap; }
int Communicator::rank() const { return pimpl_->rank; }
int Communicator::size() const { return pimpl_->size; }
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
