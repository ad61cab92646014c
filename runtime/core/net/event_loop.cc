#include "core/net/event_loop.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "core/logger.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp::net {

namespace {
// The longest wait:
// the owner's deadlines are checked in
// time even when nothing wakes the loop.
constexpr int kMaxWaitMs = 200;
}  // namespace

void Watches::add(int fd, Callback onReady) {
  fds_.push_back(pollfd{fd, POLLIN, 0});
  callbacks_.push_back(std::move(onReady));
}

void Watches::limitWait(int ms) {
  if (ms >= 0 && (waitMs_ < 0 || ms < waitMs_)) waitMs_ = ms;
}

void Watches::clear() {
  fds_.clear();
  callbacks_.clear();
  waitMs_ = -1;
}

EventLoop::Shared::~Shared() {
  if (wakeFd >= 0) ::close(wakeFd);
}

void EventLoop::Shared::wake() const {
  uint64_t one = 1;
  (void)!::write(wakeFd, &one, sizeof(one));
}

EventLoop::EventLoop(std::string who, int logRank) : shared_(std::make_shared<Shared>()) {
  shared_->who = std::move(who);
  shared_->logRank = logRank;
  shared_->wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (shared_->wakeFd < 0) throw SystemError(shared_->who + ": eventfd", errno);
}

EventLoop::~EventLoop() { stop(); }

void EventLoop::start(Hooks hooks) {
  std::shared_ptr<Shared> shared = shared_;
  thread_ = std::thread([shared, hooks = std::move(hooks)]() { run(shared, hooks); });
}

void EventLoop::wake() { shared_->wake(); }

void EventLoop::stop() {
  if (!thread_.joinable()) return;  // not started, already stopped, or detached
  shared_->stopping.store(true, std::memory_order_release);
  shared_->wake();
  // The loop's own hooks may hold the last reference to this object's owner.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void EventLoop::detach() {
  if (thread_.joinable()) thread_.detach();
}

void EventLoop::run(const std::shared_ptr<Shared>& shared, const Hooks& hooks) {
  ScopedLogRank logRank(shared->logRank);
  Watches watches;
  try {
    while (!shared->stopping.load(std::memory_order_acquire)) {
      watches.clear();
      watches.add(shared->wakeFd, [&shared]() {
        uint64_t drained;
        (void)!::read(shared->wakeFd, &drained, sizeof(drained));
      });
      if (!hooks.prepare(watches)) break;
      int wait = watches.waitMs_ < 0 || watches.waitMs_ > kMaxWaitMs ? kMaxWaitMs : watches.waitMs_;
      int rc = ::poll(watches.fds_.data(), watches.fds_.size(), wait);
      if (rc < 0) {
        if (errno == EINTR) continue;
        throw SystemError(shared->who + ": poll", errno);
      }
      if (shared->stopping.load(std::memory_order_acquire)) break;
      for (size_t i = 0; i < watches.fds_.size(); ++i) {
        if (watches.fds_[i].fd >= 0 && watches.fds_[i].revents != 0) watches.callbacks_[i]();
      }
    }
  } catch (const std::exception& e) {
    if (hooks.onFailure) {
      hooks.onFailure(e);
    } else {
      MSCCLPP_WARN(LogInit, "%s: event loop failed: %s", shared->who.c_str(), e.what());
    }
  }
  if (hooks.onExit) hooks.onExit();
}

}  // namespace mscclpp::net
