// A helper thread for the sends the progress thread must not wait for:
// failure notices to every rank, which may mean connecting to ranks
// never talked to, some unreachable, and the answers to requests. Each
// send has a short deadline; a failed one is logged at INFO and dropped,
// since that peer's own neighbours will find it dead or unreachable.
// Thread-safety: post() from any thread; stop() from any but the courier's.
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

  // Queues a message; the first post starts the thread.
  void post(int peer, const MessageKey& key, std::vector<char> payload);
  // Drops the queue, waits for the send in progress,
  // then joins. That send is bounded by its deadline.
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
