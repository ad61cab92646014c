// The one event loop of the runtime's networking threads: the bootstrap root,
// the bootstrap's progress thread and the TCP transport's receiver.
// A thread polls the descriptors its owner lists and runs each ready one's callback.
// An eventfd wakes it early when another thread changes its watches or stops it.
// The shape follows gloo's gloo/transport/tcp/loop.h, with poll instead of epoll:
// our loops watch tens of descriptors, and a list rebuilt every turn
// leaves nothing registered to undo.
// Thread-safety: wake() and stop() from any thread; never stop() on the loop thread.
#ifndef MSCCLPP_CORE_NET_EVENT_LOOP_HPP_
#define MSCCLPP_CORE_NET_EVENT_LOOP_HPP_

#include <poll.h>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace mscclpp::net {

// What one turn waits on.
// Filled by the owner's prepare step.
class Watches {
 public:
  using Callback = std::function<void()>;

  // Calls onReady when fd is readable, hung up or in error;
  // its read tells which.
  // A negative fd is never ready, as poll ignores it.
  void add(int fd, Callback onReady);
  // Waits at most ms this turn; ms < 0 keeps the loop's own slice.
  void limitWait(int ms);

 private:
  friend class EventLoop;
  void clear();
  std::vector<pollfd> fds_;
  std::vector<Callback> callbacks_;
  int waitMs_ = -1;
};

// A turn runs prepare on the loop thread, polls for at most 200 ms,
// then runs the ready callbacks in the order they were listed.
// prepare lists descriptors, may shorten the wait,
// and ends the loop by returning false.
// Callbacks run on the loop thread only,
// so state touched only there needs no lock.
// An exception from prepare or a callback
// ends the loop and goes to onFailure.
// onExit runs on the loop thread however the loop ended.
class EventLoop {
 public:
  struct Hooks {
    std::function<bool(Watches&)> prepare;                 // required
    std::function<void(const std::exception&)> onFailure;  // optional
    std::function<void()> onExit;                          // optional
  };

  // who names the thread in errors ("bootstrap rank 2/8");
  // logRank goes on its log lines.
  EventLoop(std::string who, int logRank);
  ~EventLoop();  // stop(), unless detached
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Starts the thread, once.
  // The hooks live on the thread until it ends.
  void start(Hooks hooks);
  // The thread runs its next turn now.
  void wake();
  // Ends the loop after this turn and joins the thread.
  // Idempotent; it does nothing to a detached loop.
  void stop();
  // Lets the thread end by itself, when prepare returns false;
  // this object may go first.
  void detach();
  bool stopping() const { return shared_->stopping.load(std::memory_order_acquire); }

 private:
  // What the thread needs even after a detached loop object is gone.
  struct Shared {
    ~Shared();
    std::string who;
    int logRank = -1;
    int wakeFd = -1;
    std::atomic<bool> stopping{false};
    void wake() const;
  };
  static void run(const std::shared_ptr<Shared>& shared, const Hooks& hooks);

  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_EVENT_LOOP_HPP_
