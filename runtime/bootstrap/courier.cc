#include "bootstrap/courier.hpp"

#include "core/logger.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::detail {

Courier::Courier(std::string who, int logRank, SendFn send)
    : who_(std::move(who)), logRank_(logRank), send_(std::move(send)) {}

Courier::~Courier() { stop(); }

void Courier::post(int peer, const MessageKey& key, std::vector<char> payload) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    queue_.push_back(Item{peer, key, std::move(payload)});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  wake_.notify_one();
}

void Courier::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Courier::run() {
  ScopedLogRank logRank(logRank_);
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      send_(item.peer, item.key, item.payload);
    } catch (const std::exception& e) {
      MSCCLPP_INFO(LogBootstrap, "%s: could not send to rank %d: %s", who_.c_str(), item.peer, e.what());
    }
  }
}

}  // namespace mscclpp::detail
