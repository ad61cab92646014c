#include "bootstrap/peer_failures.hpp"

namespace mscclpp::detail {

bool PeerFailures::report(int worldRank, const std::string& reason) {
  std::vector<std::shared_ptr<const Listener>> tell;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (worldRank < 0 || worldRank >= static_cast<int>(reasons_.size()) || !reasons_[worldRank].empty()) return false;
    reasons_[worldRank] = reason.empty() ? "failed" : reason;
    for (const auto& [id, l] : listeners_) tell.push_back(l);
  }
  for (const auto& l : tell) (*l)(worldRank, reason.empty() ? "failed" : reason);
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
  for (const auto& [rank, why] : known) (*l)(rank, why);
  return id;
}

void PeerFailures::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  listeners_.erase(id);
}

}  // namespace mscclpp::detail
