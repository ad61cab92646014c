// Receives the messages of one (peer, tag) stream in posting order for deferred consumers:
// post() takes a ticket when a recvMemory/connect is issued; take(ticket) receives every message
// up to that ticket (keeping earlier ones for their own tickets), so get() on futures may be called
// in any order. Thread-safety: any thread; receiving is serialised per stream.
#ifndef MSCCLPP_COMM_ORDERED_RECEIVER_HPP_
#define MSCCLPP_COMM_ORDERED_RECEIVER_HPP_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "mscclpp/bootstrap.hpp"

namespace mscclpp::comm {

class OrderedReceiver {
 public:
  OrderedReceiver(std::shared_ptr<Bootstrap> bootstrap, int peer, int tag, size_t maxBytes)
      : bootstrap_(std::move(bootstrap)), peer_(peer), tag_(tag), maxBytes_(maxBytes) {}

  uint64_t post() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_++;
  }

  std::vector<char> take(uint64_t ticket) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (received_ <= ticket) {
      ready_[received_] = bootstrap_->recv(peer_, tag_, maxBytes_);
      ++received_;
    }
    std::vector<char> out = std::move(ready_[ticket]);
    ready_.erase(ticket);
    return out;
  }

 private:
  std::shared_ptr<Bootstrap> bootstrap_;
  int peer_;
  int tag_;
  size_t maxBytes_;
  std::mutex mutex_;
  uint64_t posted_ = 0;
  uint64_t received_ = 0;
  std::map<uint64_t, std::vector<char>> ready_;
};

}  // namespace mscclpp::comm

#endif  // MSCCLPP_COMM_ORDERED_RECEIVER_HPP_
