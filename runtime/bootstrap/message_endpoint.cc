// The two pieces of endpoint state both bootstraps share:
// the failure record and the mailbox (message_endpoint.hpp).
#include <chrono>

#include "bootstrap/message_endpoint.hpp"
#include "core/enforce.hpp"

namespace mscclpp::detail {

// ---- PeerFailures -------------------------------------------------------------------------------

void PeerFailures::call(uint64_t id, const std::shared_ptr<const Listener>& listener, int worldRank,
                        const std::string& reason, bool left) {
  const auto key = std::make_pair(id, std::this_thread::get_id());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (listeners_.count(id) == 0) return;  // removed since it was picked
    running_.insert(key);
  }
  struct Ended {
    PeerFailures* self;
    std::pair<uint64_t, std::thread::id> key;
    ~Ended() {
      {
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->running_.erase(self->running_.find(key));
      }
      self->callEnded_.notify_all();
    }
  } ended{this, key};
  (*listener)(worldRank, reason, left);
}

bool PeerFailures::report(int worldRank, const std::string& reason, bool left) {
  std::vector<std::pair<uint64_t, std::shared_ptr<const Listener>>> tell;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worldRank < 0 || worldRank >= static_cast<int>(reasons_.size()) || !reasons_[worldRank].empty()) return false;
    reasons_[worldRank] = reason.empty() ? (left ? "left" : "failed") : reason;
    left_[worldRank] = left;
    tell.assign(listeners_.begin(), listeners_.end());
  }
  const std::string why = reason.empty() ? (left ? "left" : "failed") : reason;
  for (const auto& [id, l] : tell) call(id, l, worldRank, why, left);
  return true;
}

bool PeerFailures::left(int worldRank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return worldRank >= 0 && worldRank < static_cast<int>(left_.size()) && left_[worldRank];
}

bool PeerFailures::failed(int worldRank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return worldRank >= 0 && worldRank < static_cast<int>(reasons_.size()) && !reasons_[worldRank].empty();
}

std::string PeerFailures::reason(int worldRank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (worldRank < 0 || worldRank >= static_cast<int>(reasons_.size())) return std::string();
  return reasons_[worldRank];
}

uint64_t PeerFailures::add(Listener listener) {
  auto l = std::make_shared<const Listener>(std::move(listener));
  struct Known {
    int rank;
    std::string why;
    bool left;
  };
  std::vector<Known> known;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = nextId_++;
    listeners_.emplace(id, l);
    for (size_t r = 0; r < reasons_.size(); ++r) {
      if (!reasons_[r].empty()) known.push_back(Known{static_cast<int>(r), reasons_[r], left_[r]});
    }
  }
  for (const Known& k : known) call(id, l, k.rank, k.why, k.left);
  return id;
}

void PeerFailures::remove(uint64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  listeners_.erase(id);
  // Calls on this thread do not count: a listener that removes
  // itself, its owner going inside it, would wait forever.
  const std::thread::id me = std::this_thread::get_id();
  callEnded_.wait(lock, [&] {
    for (auto it = running_.lower_bound({id, std::thread::id()}); it != running_.end() && it->first == id; ++it) {
      if (it->second != me) return false;
    }
    return true;
  });
}

// ---- Mailbox ------------------------------------------------------------------------------------

Mailbox::Mailbox(int nRanks) : goneReason_(static_cast<size_t>(nRanks)) {}

void Mailbox::deliver(int from, const MessageKey& key, std::vector<char> payload) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queues_[{from, key}].push_back(std::move(payload));
  }
  cv_.notify_all();
}

void Mailbox::markPeerGone(int from, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (from >= 0 && from < static_cast<int>(goneReason_.size()) && goneReason_[from].empty()) {
      goneReason_[from] = reason;
    }
  }
  cv_.notify_all();
}

void Mailbox::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) {
      aborted_ = true;
      abortReason_ = reason;
    }
  }
  cv_.notify_all();
}

bool Mailbox::aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_;
}

std::vector<char> Mailbox::take(int from, const MessageKey& key, size_t maxBytes, const Deadline& deadline,
                                const std::string& what, const CancelToken* token) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto slot = std::make_pair(from, key);
  while (true) {
    if (aborted_) MSCCLPP_THROW(ErrorCode::Aborted, "%s: %s", what.c_str(), abortReason_.c_str());
    auto it = queues_.find(slot);
    if (it != queues_.end() && !it->second.empty()) {
      std::vector<char> msg = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) queues_.erase(it);
      lock.unlock();
      MSCCLPP_ENFORCE(msg.size() <= maxBytes, ErrorCode::InvalidArgument,
                      "%s: the message has %zu bytes, more than the %zu expected", what.c_str(), msg.size(), maxBytes);
      return msg;
    }
    // Checked after the queue: a view cancelled because its
    // communicator failed still hands out what arrived.
    if (token && token->isCancelled()) MSCCLPP_THROW(ErrorCode::Aborted, "%s: the bootstrap was aborted", what.c_str());
    if (from >= 0 && from < static_cast<int>(goneReason_.size()) && !goneReason_[from].empty()) {
      MSCCLPP_THROW(ErrorCode::RemoteError, "%s: %s", what.c_str(), goneReason_[from].c_str());
    }
    if (deadline.expired()) throwTimeout(deadline, what);
    int ms = deadline.remainingMs();
    cv_.wait_for(lock, std::chrono::milliseconds(ms < 0 || ms > 1000 ? 1000 : ms + 1));
  }
}

}  // namespace mscclpp::detail
