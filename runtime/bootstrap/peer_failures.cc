#include "bootstrap/peer_failures.hpp"

namespace mscclpp::detail {

void PeerFailures::call(uint64_t id, const std::shared_ptr<const Listener>& listener, int worldRank,
                        const std::string& reason) {
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
  (*listener)(worldRank, reason);
}

bool PeerFailures::report(int worldRank, const std::string& reason) {
  std::vector<std::pair<uint64_t, std::shared_ptr<const Listener>>> tell;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worldRank < 0 || worldRank >= static_cast<int>(reasons_.size()) || !reasons_[worldRank].empty()) return false;
    reasons_[worldRank] = reason.empty() ? "failed" : reason;
    tell.assign(listeners_.begin(), listeners_.end());
  }
  for (const auto& [id, l] : tell) call(id, l, worldRank, reason.empty() ? "failed" : reason);
  return true;
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
  std::vector<std::pair<int, std::string>> known;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = nextId_++;
    listeners_.emplace(id, l);
    for (size_t r = 0; r < reasons_.size(); ++r) {
      if (!reasons_[r].empty()) known.emplace_back(static_cast<int>(r), reasons_[r]);
    }
  }
  for (const auto& [rank, why] : known) call(id, l, rank, why);
  return id;
}

void PeerFailures::remove(uint64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  listeners_.erase(id);
  // Not for a call on this thread: a listener that removes itself (its owner going inside it) would wait forever.
  const std::thread::id me = std::this_thread::get_id();
  callEnded_.wait(lock, [&] {
    for (auto it = running_.lower_bound({id, std::thread::id()}); it != running_.end() && it->first == id; ++it) {
      if (it->second != me) return false;
    }
    return true;
  });
}

}  // namespace mscclpp::detail
