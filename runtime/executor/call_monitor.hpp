// The call monitor of an Executor on a Communicator, for the CPU and CUDA backends (docs/executor.md
// "Stuck calls", docs/failure-handling.md). Nothing on the hot path but a few stores per call, and
// no allocation once the recent-call slots hold a plan name as long: the backend tells the monitor
// when a call starts (its sequence number on this communicator and its CallDescriptor), when it
// runs (a function reading its live state) and when it ends. A synchronous backend (CPU) ends a call
// when its host thread leaves it. An asynchronous one (CUDA) ends the host part at enqueue
// (enqueued()): the call stays in progress until the backend's completion source says its device
// work finished (setCompletion: the stream writes the call's number into host-mapped memory after
// the kernel). The monitor keeps the descriptors of the last kRecentCalls calls by number, so a
// peer compares call k with its own call k even when their host threads have moved on.
// A watchdog thread looks at the oldest call in progress and, once it has waited for 2 s, asks every
// peer what it is doing (Bootstrap::ask: the peer's bootstrap helper thread answers, whatever its
// application does): idle (since when), or in which call, what each of its unfinished threadblocks
// waits for, and its recent calls. From the answers:
//   * a peer whose call k (the current one or a recent one) has another descriptor than this rank's
//     call k: mismatched calls. The communicator fails with InvalidUsage naming both ranks' calls;
//     every rank is told (and a failed communicator raises the abort flags device waits poll).
//   * a set of ranks in calls whose every unfinished block waits on a rank of the set (LL packets
//     that several ranks write: on every other rank of it), nothing moving between two rounds (op
//     indexes, counters, proxy positions): a deadlock with every rank alive. The communicator fails
//     with InternalError, the wait-for picture of each rank and the cycle; every rank is told.
//     An enqueued CUDA call reports the waits its blocks publish in host-mapped memory once they
//     have waited 1 ms (describeWaitSlots: channel, semaphore, barrier and LL packet waits; a block
//     at a FIFO push or a flush counts as running); the same analysis applies. A call captured into
//     a CUDA graph runs at replays no host call announces: the monitor keeps its context's reader
//     (captured()) and takes waits tagged with the captured call (LaunchArgs::call) for its replay,
//     looked at like an enqueued call when nothing else waits.
//   * a rank still agreeing on the plan of a call (the NCCL shim) that a peer already runs, in two
//     rounds: their plan registries changed at different points (InvalidUsage, saying so).
//   * otherwise (a peer idle, late, or working) nothing fails: the long-wait WARN says what the
//     peers do (peerStatus()). The CPU backend's waiting host thread prints that WARN; for an
//     enqueued call (whose host does not wait) the watchdog prints it, once per MSCCLPP_WAIT_WARN_S,
//     from the waits its blocks publish.
// Rounds run 2 s into a call, then at doubling intervals up to 30 s: a peer that is minutes late
// costs a few small messages.
//
// Thread-safety: agree/begin/running/end/enqueued from the executor's thread; everything else from any
// thread.
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
  // Enqueued: the host part ended; the device runs it (asynchronous backends). Replaying: a launch
  // of a call captured into a CUDA graph waits on the device (a replay, which no host call announces).
  enum class Phase : uint32_t { Idle = 0, Building = 1, Running = 2, Agreeing = 3, Enqueued = 4, Replaying = 5 };
  // Captured calls watched at once (the least recently captured beyond it are dropped).
  static constexpr size_t kMaxCaptured = 256;
  // Calls whose descriptors are kept (and compared with the peers'), by number; a replayed call is
  // compared whatever its age.
  static constexpr uint64_t kRecentCalls = 16;

  // Serves its peers' questions on a bootstrap view of its own (`index`: the executor's creation
  // order on this communicator, the same on every rank) and starts the watchdog thread.
  CallMonitor(std::shared_ptr<Communicator> comm, uint64_t index);
  ~CallMonitor();
  CallMonitor(const CallMonitor&) = delete;
  CallMonitor& operator=(const CallMonitor&) = delete;

  // A caller agrees with its peers on the plan of the next call (the NCCL shim): the call starts here.
  void agree(const CallDescriptor& call);
  // The agreement ended without a plan call (the real NCCL runs it); nothing when not agreeing.
  void endAgreement();
  // A call starts, or the agreed one goes on (its context may still have to be built: a collective
  // exchange). Returns its number on this monitor (1, 2, ...).
  uint64_t begin(const CallDescriptor& call);
  // Its launch runs: `live` reads its state (called on other threads until end()).
  void running(std::function<LiveCall()> live);
  // The call ended (synchronous backends; an asynchronous one for a call that enqueued nothing).
  void end();
  // An asynchronous backend enqueued the call: it stays in progress until the completion source says
  // its number completed. `live` (optional) reads its state meanwhile, from other threads, until the
  // call completes or its recent slot is reused; it must stay safe to call after the backend let the
  // call's context go.
  // Shared, so that keeping it per call copies a pointer (no allocation per call).
  void enqueued(std::shared_ptr<const std::function<LiveCall()>> live = nullptr);
  // The completion source of an asynchronous backend: whether call `seq` (one of the last
  // kRecentCalls) finished on the device. Called from other threads; null removes it (before the
  // memory it reads goes), and calls in progress then count as complete.
  void setCompletion(std::function<bool(uint64_t seq)> completed);
  // The call begun last was captured into a CUDA graph (asynchronous backends), not run: it runs at
  // each replay of the graph, which no host call announces. `live` reads its context's state from
  // any thread, also after the context went (LiveCall::gone); a launch of the context whose blocks
  // wait (LiveCall::launch) carrying the call's captured tag (launchCallTag) is its replay. The
  // last kMaxCaptured captured calls are watched.
  void captured(std::shared_ptr<const std::function<LiveCall()>> live);

  // For the long-wait WARN: what the peers were doing at the last round ("" before any).
  std::string peerStatus() const;

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
  // The call the watchdog looks at: the host's, else the oldest enqueued one not complete, else
  // a replay that waits (before the oldest enqueued call when none of that one's blocks waits: it
  // may be queued behind the replay on its stream). `call` and `live` point into the board: valid
  // under its mutex until the next current() or captured().
  struct Current {
    uint64_t seq = 0;
    uint32_t launch = 0;  // Replaying: the waiting launch's LL flag (a new replay of the same call is a new one)
    Phase phase = Phase::Idle;
    int64_t sinceMs = 0;
    const CallDescriptor* call = nullptr;
    const std::function<LiveCall()>* live = nullptr;  // an enqueued call's live state
  };
  // What the bootstrap's helper thread reads to answer peers; shared with the handler, which may
  // run a moment after the monitor is gone.
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
    std::vector<Captured> captured;  // least recently captured first
    // Under mutex: the current call into its recent slot; the call the watchdog looks at.
    void remember();
    Current current();
    // The captured call whose replay waits, the longest (null: none); drops those whose context went.
    Captured* waitingReplay();
    State state();
    std::vector<char> answer(int peer, const std::vector<char>& request);
  };

  void watch();
  void round(uint64_t seq, uint32_t launch);
  // The long-wait WARN of enqueued call `seq` (MSCCLPP_WAIT_WARN_S): its blocks' published waits
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
