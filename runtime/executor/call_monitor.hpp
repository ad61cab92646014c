// The call monitor of an Executor on a Communicator, for both backends.
// It numbers the calls and keeps the last kRecentCalls descriptors. Its
// watchdog asks the peers what they do once a call is stuck for 2 s, and
// fails the communicator on mismatched calls or a deadlock with every rank
// alive (docs/failure-handling.md, "Mismatched calls and deadlocks").
// On the hot path it costs a few stores per call and no allocation.
// Thread-safety: agree, begin, running, end and enqueued from the executor's
// thread; everything else from any thread.
#ifndef MSCCLPP_EXECUTOR_CALL_MONITOR_HPP_
#define MSCCLPP_EXECUTOR_CALL_MONITOR_HPP_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/call_descriptor.hpp"
#include "executor/diagnostics.hpp"
#include "mscclpp/errors.hpp"

namespace mscclpp {
class Bootstrap;
class Communicator;
}  // namespace mscclpp

namespace mscclpp::exec {

// What a running call reports (CpuContext::liveCall).
struct LiveCall {
  std::vector<BlockWait> waits;
  uint64_t progress = 0;  // changes whenever anything of the call moves
  WaitingLaunch launch;   // GPU contexts: the launch whose blocks publish waits (flag 0: none waits long)
  bool gone = false;      // the source's context was destroyed (it reports nothing any more)
};

class CallMonitor {
 public:
  // Enqueued: the host part ended and the device runs the call.
  // Replaying: a graph replay of a captured call waits on the device.
  enum class Phase : uint32_t { Idle = 0, Building = 1, Running = 2, Agreeing = 3, Enqueued = 4, Replaying = 5 };
  // Captured calls watched at once (the least recently captured beyond it are dropped).
  static constexpr size_t kMaxCaptured = 256;
  // Calls whose descriptors are kept and compared, by number. A replayed
  // call is compared whatever its age.
  static constexpr uint64_t kRecentCalls = 16;

  // Serves its peers' questions on a bootstrap view of its own and starts
  // the watchdog. `index` is the executor's creation order, alike on all ranks.
  CallMonitor(std::shared_ptr<Communicator> comm, uint64_t index);
  ~CallMonitor();
  CallMonitor(const CallMonitor&) = delete;
  CallMonitor& operator=(const CallMonitor&) = delete;

  // The NCCL shim agrees with the peers on the next call's plan: it starts.
  void agree(const CallDescriptor& call);
  // The agreement ended without a plan call; the real NCCL runs it.
  void endAgreement();
  // A call starts, or the agreed one goes on; its context may still need a
  // collective build. Returns its number on this monitor: 1, 2, ...
  uint64_t begin(const CallDescriptor& call);
  // Its launch runs: `live` reads its state (called on other threads until end()).
  void running(std::function<LiveCall()> live);
  // The call ended: synchronous backends, or a call that enqueued nothing.
  void end();
  // An asynchronous backend enqueued the call: it stays in progress until
  // the completion source says it completed. The optional `live` reads its
  // state from other threads meanwhile, and must stay safe to call after
  // the context goes. Shared, so each call copies a pointer, not a function.
  void enqueued(std::shared_ptr<const std::function<LiveCall()>> live = nullptr);
  // The completion source: whether recent call `seq` finished on the device.
  // Called from other threads. Null removes it before its memory goes;
  // calls in progress then count as complete.
  void setCompletion(std::function<bool(uint64_t seq)> completed);
  // The call begun last was captured into a CUDA graph, not run: it ends,
  // as with end(), and runs at each replay, which no host call announces.
  // `live` reads its context's state from any thread, also after the context
  // went. A waiting launch that carries the call's captured tag is its replay.
  void captured(std::shared_ptr<const std::function<LiveCall()>> live);

  // For the long-wait WARN: what the peers were doing at the last round ("" before any).
  std::string peerStatus() const;

  // A call of this rank failed in a way its peers cannot see, which leaves
  // them waiting for it (counts its buffers cannot hold): fails the
  // communicator here and on every peer at once, their waits end, and every
  // rank's call fails with `message` (docs/failure-handling.md).
  void failCall(ErrorCode code, const std::string& message);
  // failCall for a launch of this rank that failed on its device with `failure` (a probe's text).
  void failLaunch(const std::string& failure);
  // An asynchronous backend's launches that failed on their own: the probe
  // returns such a failure's description, or "". The watchdog asks it every
  // kProbeMs and fails the call as failCall does. Any thread; null removes
  // it before what it reads goes.
  void setFailureProbe(std::function<std::string()> probe);

 private:
  struct State;
  struct Recent {
    uint64_t seq = 0;  // 0: empty
    CallDescriptor call;
    int64_t sinceMs = 0;    // the call's start
    bool inFlight = false;  // enqueued, complete only when the completion source says so
    std::shared_ptr<const std::function<LiveCall()>> live;  // while in flight: its live state (asynchronous backends)
  };
  // A call captured into a CUDA graph, watched for replays that wait on the device.
  struct Captured {
    uint64_t seq = 0;  // the number the call got when it was captured
    CallDescriptor call;
    std::shared_ptr<const std::function<LiveCall()>> live;
    uint32_t launch = 0;       // the waiting launch last seen (0: none)
    int64_t sinceMs = 0;       // when it was first seen waiting, less the wait it had then
    int64_t quietSinceMs = 0;  // since when its slots show no wait (0: they show one)
  };
  // The call the watchdog looks at: the host's, else the oldest unfinished
  // enqueued call, else a waiting replay. A replay comes first when none of
  // the enqueued call's blocks wait: it may be queued behind the replay.
  // `call` and `live` point into the board, valid under its mutex.
  struct Current {
    uint64_t seq = 0;
    uint32_t launch = 0;  // Replaying: the waiting launch's LL flag (a new replay of the same call is a new one)
    Phase phase = Phase::Idle;
    int64_t sinceMs = 0;
    const CallDescriptor* call = nullptr;
    const std::function<LiveCall()>* live = nullptr;  // an enqueued call's live state
  };
  // What the bootstrap's helper thread reads to answer peers. Shared: the
  // handler may run a moment after the monitor is gone.
  struct Board {
    std::shared_ptr<Communicator> comm;
    int rank = 0;
    std::mutex mutex;  // guards the fields below (and keeps a running call's context alive while read)
    uint64_t seq = 0;  // calls begun on this monitor
    Phase phase = Phase::Idle;
    int64_t sinceMs = 0;  // phase start
    CallDescriptor call;
    std::function<LiveCall()> live;
    std::array<Recent, kRecentCalls> recent;  // by seq % kRecentCalls
    std::function<bool(uint64_t)> completed;
    std::function<std::string()> failureProbe;
    std::vector<Captured> captured;  // a ring of kMaxCaptured once full; empty slots have no live
    size_t capturedNext = 0;         // once full: the least recently captured slot
    // Under mutex: the current call into its recent slot; the call the watchdog looks at.
    void remember();
    Current current();
    // The captured call whose replay waited longest, or null. Drops those
    // whose context went.
    Captured* waitingReplay();
    State state();
    std::vector<char> answer(int peer, const std::vector<char>& request);
  };

  void watch();
  void round(uint64_t seq, uint32_t launch);
  // The long-wait WARN of enqueued call `seq`: its blocks' published waits
  // and the peers' status, in the CPU backend's words.
  void warnLongWait(uint64_t seq, uint32_t launch, int64_t callMs);
  // Fails the communicator and tells every peer.
  void failEverywhere(int code, const std::string& message);

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Bootstrap> bootstrap_;
  int rank_ = 0;
  int size_ = 0;
  std::shared_ptr<Board> board_;

  mutable std::mutex watchMutex_;  // guards everything below
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<State> previous_;  // the last round's states, by rank
  uint64_t previousSeq_ = 0;
  std::string peerStatus_;
  std::thread thread_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CALL_MONITOR_HPP_
