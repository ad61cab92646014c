#include "bootstrap/mailbox.hpp"

#include <chrono>

#include "core/enforce.hpp"

namespace mscclpp::detail {

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
    // After the queue: a view cancelled because its communicator failed still hands out what arrived.
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
