// A helper thread that sends, in the background, what the bootstrap's progress thread must not
// wait for: the failure notices that tell every rank about a dead peer (connecting to ranks that
// were never talked to, some of which may be unreachable too) and the answers to requests. Each
// send goes through the endpoint's own send path with a short deadline; a failed send is logged at
// INFO and dropped (the peer is dead or unreachable, and will be found so by its own neighbours).
//
// Thread-safety: post() from any thread; stop() from any thread but the courier's own.
#ifndef MSCCLPP_BOOTSTRAP_COURIER_HPP_
#define MSCCLPP_BOOTSTRAP_COURIER_HPP_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/message_endpoint.hpp"

namespace mscclpp::detail {

class Courier {
 public:
  // send(peer, key, payload) performs one send and throws on failure.
  using SendFn = std::function<void(int peer, const MessageKey& key, const std::vector<char>& payload)>;

  Courier(std::string who, int logRank, SendFn send);
  ~Courier();  // stop()
  Courier(const Courier&) = delete;
  Courier& operator=(const Courier&) = delete;

  // Queues a message (the thread starts at the first post).
  void post(int peer, const MessageKey& key, std::vector<char> payload);
  // Drops what is still queued, waits for the send in progress (bounded by its deadline) and joins.
  void stop();

 private:
  struct Item {
    int peer;
    MessageKey key;
    std::vector<char> payload;
  };
  void run();

  std::string who_;
  int logRank_;
  SendFn send_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_BOOTSTRAP_COURIER_HPP_
