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
//     at a FIFO push or a flush counts as running); the same analysis applies.
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
};

class CallMonitor {
 public:
  // Enqueued: the host part ended; the device runs it (asynchronous backends).
  enum class Phase : uint32_t { Idle = 0, Building = 1, Running = 2, Agreeing = 3, Enqueued = 4 };
  // Calls whose descriptors are kept (and compared with the peers'), by number.
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
  // The call the watchdog looks at: the host's, else the oldest enqueued one not complete.
  struct Current {
    uint64_t seq = 0;
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
    // Under mutex: the current call into its recent slot; the call the watchdog looks at.
    void remember();
    Current current();
    State state();
    std::vector<char> answer(int peer, const std::vector<char>& request);
  };

  void watch();
  void round(uint64_t seq);
  // The long-wait WARN of enqueued call `seq` (MSCCLPP_WAIT_WARN_S): its blocks' published waits
  // and the peers' status, in the CPU backend's words.
  void warnLongWait(uint64_t seq, int64_t callMs);
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
