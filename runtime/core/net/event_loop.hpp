// The one event loop of the runtime's networking threads (the bootstrap root, the bootstrap's
// progress thread, the TCP transport's receiver): a thread that waits with poll(2) on the
// descriptors its owner lists, runs the callback of each ready one, and wakes early through an
// eventfd when another thread changes what it must watch or wants it to stop. Modelled on
// gloo's gloo/transport/tcp/loop.h, with poll instead of epoll: our loops watch tens of descriptors, and a
// list rebuilt every turn keeps the owners' state in their own hands (no registration to undo).
//
// A turn: prepare(watches) on the loop thread (the owner lists descriptors, may shorten the wait,
// and may end the loop by returning false), then poll for at most 200 ms, then the callbacks of
// the ready descriptors in the order they were listed. Callbacks run on the loop thread only, so
// state touched only there needs no lock. An exception escaping prepare or a callback ends the
// loop: onFailure gets it, then onExit runs (on the loop thread, whatever ended the loop).
//
// Thread-safety: wake() and stop() may be called from any thread; stop() must not be called from
// the loop thread itself (it joins it).
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

// What one turn waits on. Filled by the owner's prepare step.
class Watches {
 public:
  using Callback = std::function<void()>;

  // Calls onReady when fd is readable, hung up or in error (the callback's read reports which).
  // A negative fd is never ready (poll ignores it).
  void add(int fd, Callback onReady);
  // Waits at most `ms` this turn (ms < 0: no limit beyond the loop's own slice).
  void limitWait(int ms);

 private:
  friend class EventLoop;
  void clear();
  std::vector<pollfd> fds_;
  std::vector<Callback> callbacks_;
  int waitMs_ = -1;
};

class EventLoop {
 public:
  struct Hooks {
    std::function<bool(Watches&)> prepare;                 // required
    std::function<void(const std::exception&)> onFailure;  // optional
    std::function<void()> onExit;                          // optional
  };

  // `who` names the thread in errors ("bootstrap rank 2/8"); `logRank` is the rank on its log lines.
  EventLoop(std::string who, int logRank);
  ~EventLoop();  // stop(), unless detached
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Starts the thread (once). The hooks live on the thread until it ends.
  void start(Hooks hooks);
  // The thread runs its next turn now.
  void wake();
  // Ends the loop after the current turn and joins the thread. Idempotent; no effect on a detached loop.
  void stop();
  // Lets the thread end by itself (prepare returning false); the loop object may go first.
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
