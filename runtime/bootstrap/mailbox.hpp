// Received messages waiting for their recv(): one FIFO per (sender, key), plus what is known about
// each sender (gone, with a reason) and the whole endpoint (aborted). Shared by the TCP bootstrap
// (filled by its progress thread) and the in-process bootstrap (filled by the sending thread).
//
// Thread-safety: all methods may be called concurrently; take() blocks on a condition variable with
// the caller's deadline.
#ifndef MSCCLPP_BOOTSTRAP_MAILBOX_HPP_
#define MSCCLPP_BOOTSTRAP_MAILBOX_HPP_

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/message_endpoint.hpp"

namespace mscclpp::detail {

class Mailbox {
 public:
  explicit Mailbox(int nRanks);

  void deliver(int from, const MessageKey& key, std::vector<char> payload);
  // Messages already delivered from `from` can still be taken; waits for more fail with `reason`.
  void markPeerGone(int from, const std::string& reason);
  // Every current and future take() fails with Aborted and `reason`.
  void abort(const std::string& reason);
  bool aborted() const;

  // The next message from `from` with `key`. `what` names the call for error messages ("rank 1:
  // recv from rank 3 tag 7"). A message longer than maxBytes is consumed and reported.
  std::vector<char> take(int from, const MessageKey& key, size_t maxBytes, const Deadline& deadline,
                         const std::string& what, const CancelToken* token = nullptr);
  void wakeAll() {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a waiter between its check and its wait sees the change
    cv_.notify_all();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::pair<int, MessageKey>, std::deque<std::vector<char>>> queues_;
  std::vector<std::string> goneReason_;  // "" while the peer is fine
  std::string abortReason_;
  bool aborted_ = false;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_BOOTSTRAP_MAILBOX_HPP_
